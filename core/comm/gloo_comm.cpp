#include "core/comm/gloo_comm.h"

#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <tuple>

#include "core/util/system_info.h"
#include "core/util/torch_compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace pm {
namespace {

// LibTorch's exception text: its first line, without the C++ frames that follow ("Exception
// raised from ... frame #0 ..."), at most 300 characters.
std::string firstLine(const std::exception& ex) {
  std::string m = ex.what();
  if (const auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  if (m.size() > 300) m = m.substr(0, 297) + "...";
  return m;
}

// Message layout (Gloo on CPU). Gloo is a rendezvous transport: a send moves its bytes only once
// the matching receive is posted, and a receive posted late costs a round of notifications that
// waits for the sender's transport thread (on a busy machine, milliseconds). So each receiver keeps
// its next receive posted ahead of time, as one buffer of `capacity` bytes that takes a header
// and, when it fits, the payload in the same message. Gloo accepts a message shorter than the
// posted buffer; the header says how long it is. A payload that does not fit follows as a
// separate message (the header says so), and both sides then raise the channel's capacity to the
// largest message seen: sender and receiver follow the same rule on the same sequence, so they
// agree on the capacity without talking about it. Header: int64 [flags, ndim, dtype, nbytes,
// d0 .. d11]; flags 1 = the payload follows separately, 2 = the payload follows on the device
// group (NCCL).
//
// NCCL: the header still travels on a Gloo group (host memory: no device-to-host copy, no host
// synchronisation per message), the payload on the stage's GPU over a channel of its own: a
// two-rank NCCL group per (wire tag, sender, receiver) (PayloadChannel). NCCL has no tags: a group
// runs a pair's point-to-point calls on one stream in the order they were posted, so the receiver
// must post them in the sender's order. One group per tag and direction gives exactly that (a
// receiver takes a tag's messages in the order they were sent; messages of two tags, such as an
// asynchronous schedule's activations and an evaluation's, may be taken in another order than
// they were sent), and no two ranks wait on each other with sends toward each other once a message
// passes NCCL's eager size (NCCL issue 479): each stream carries one direction. The groups form
// before training, in one order on every rank, each with a first exchange that makes its
// communicator (NCCL forms them on the first call, blocking until both ranks join).
// Keyed messages (Communicator::sendKeyed) send the header only with the first message of each
// key on a channel; later ones are the payload alone, its shape the key's.
constexpr int kHeaderLen = 16;
constexpr int64_t kHeaderBytes = kHeaderLen * 8;
constexpr int kMaxDims = kHeaderLen - 4;

class C10dComm : public Communicator {
 public:
  // `pg`: the Gloo group (every message's header; the payload too unless channels are opened).
  C10dComm(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<compat::P2PGroup> pg, int rank, int size,
           double timeoutS, std::string backend, torch::Device device)
      : store_(std::move(store)), pg_(std::move(pg)), rank_(rank), size_(size),
        timeout_(static_cast<int64_t>(timeoutS * 1000)), backend_(std::move(backend)), device_(device) {}

  // The device layout: a payload channel's group (this rank's index in it: 0 sends, 1 receives),
  // formed by its first exchange, which waits for the peer.
  void openChannel(const PayloadChannel& c, c10::intrusive_ptr<compat::P2PGroup> group) {
    const bool sender = c.from == rank_;
    const int peer = sender ? c.to : c.from;
    std::vector<torch::Tensor> first{torch::zeros({1}, torch::TensorOptions().device(device_))};
    waitFor(sender ? group->send(first, 1, 0) : group->recv(first, 0, 0), peer, "the first exchange of a payload channel");
    channels_[{c.tag, peer}] = Link{std::move(group), sender ? 1 : 0};
  }
  ~C10dComm() override {
    try {
      finish();
    } catch (...) {
    }
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return backend_; }

  void putControl(const std::string& key, int64_t value) override {
    const std::string v = std::to_string(value);
    const std::string k = "pipemare/" + key;
    store_->set(k, std::vector<uint8_t>(v.begin(), v.end()));
    // The TCP store's SET has no reply: the value is visible to the other ranks only once the
    // store has read it. A GET on the same connection is answered after the SET is applied, so
    // put returns when every rank can see the value (the stop protocol publishes the halt, then
    // sends the message that leads the other ranks to look for it).
    (void)store_->get(k);
  }
  bool sharedControl() const override { return true; }
  bool getControl(const std::string& key, int64_t& value) override {
    const std::string k = "pipemare/" + key;
    if (!store_->check({k})) return false;
    const auto bytes = store_->get(k);
    value = std::stoll(std::string(bytes.begin(), bytes.end()));
    return true;
  }

  void send(const torch::Tensor& t, int dst, int tag) override {
    reap();
    torch::Tensor payload = t.detach().contiguous();
    if (payload.dim() > kMaxDims) throw CommError(where(), "tensor of rank " + std::to_string(payload.dim()) + " is too large to send");
    if (deviceLayout()) return sendDevice(payload, dst, tag);
    // Gloo with a CUDA stage: the bytes go through pinned host memory (Gloo reads host pointers).
    if (payload.is_cuda()) payload = stageToHost(payload);
    const int64_t bytes = static_cast<int64_t>(payload.nbytes());
    int64_t& capacity = txCapacity_.try_emplace({dst, tag}, kHeaderBytes).first->second;
    const bool together = kHeaderBytes + bytes <= capacity;
    auto msg = torch::empty({together ? kHeaderBytes + bytes : kHeaderBytes}, torch::kUInt8);
    int64_t* h = reinterpret_cast<int64_t*>(msg.data_ptr<uint8_t>());
    std::fill(h, h + kHeaderLen, int64_t{0});
    h[0] = together ? 0 : 1;
    h[1] = payload.dim();
    h[2] = static_cast<int64_t>(payload.scalar_type());
    h[3] = bytes;
    for (int64_t i = 0; i < payload.dim(); ++i) h[4 + i] = payload.size(i);
    if (together && bytes > 0) std::memcpy(msg.data_ptr<uint8_t>() + kHeaderBytes, payload.data_ptr(), static_cast<size_t>(bytes));
    std::vector<torch::Tensor> m{msg};
    pending_.push_back({pg_->send(m, dst, tag * 2), msg});
    ++headersSent_;
    if (!together) {
      std::vector<torch::Tensor> p{payload};
      pending_.push_back({pg_->send(p, dst, tag * 2 + 1), payload});
    }
    capacity = std::max(capacity, kHeaderBytes + bytes);
  }

  torch::Tensor recv(int src, int tag) override {
    Channel& ch = rx_[{src, tag}];
    if (!ch.posted) post(ch, src, tag);
    waitFor(ch.posted, src, "message");
    ch.posted.reset();
    const torch::Tensor msg = ch.buffer;
    const int64_t* h = reinterpret_cast<const int64_t*>(msg.data_ptr<uint8_t>());
    const int64_t flags = h[0], ndim = h[1], bytes = h[3];
    const auto dtype = static_cast<c10::ScalarType>(h[2]);
    if (flags < 0 || flags > (deviceLayout() ? 2 : 1) || ndim < 0 || ndim > kMaxDims || bytes < 0 ||
        (flags == 0 && kHeaderBytes + bytes > msg.numel()))
      throw CommError(where(), "malformed message header from stage " + std::to_string(src));
    std::vector<int64_t> shape(h + 4, h + 4 + ndim);
    const bool onDevice = flags == 2;
    const auto options = torch::TensorOptions().dtype(dtype).device(onDevice ? device_ : torch::Device(torch::kCPU));
    if (!onDevice) ch.capacity = std::max(ch.capacity, kHeaderBytes + bytes);
    torch::Tensor out = torch::empty(shape, options);
    if (static_cast<int64_t>(out.nbytes()) != bytes)
      throw CommError(where(), "malformed message header from stage " + std::to_string(src));
    if (flags == 0 && bytes > 0) std::memcpy(out.data_ptr(), msg.data_ptr<uint8_t>() + kHeaderBytes, static_cast<size_t>(bytes));
    post(ch, src, tag);  // the next message's receive, posted before this one is used
    std::vector<torch::Tensor> p{out};
    if (flags == 1) waitFor(pg_->recv(p, src, tag * 2 + 1), src, "payload");  // the payload as a message of its own
    if (flags == 2) receivePayload(p, src, tag);
    return out;
  }

  void sendKeyed(const torch::Tensor& t, int dst, int tag, int64_t key) override {
    if (!deviceLayout()) return send(t, dst, tag);  // on Gloo alone the header shares the payload's message
    reap();
    torch::Tensor payload = t.detach().contiguous();
    if (payload.device() != device_) payload = payload.to(device_);
    auto& agreed = txShapes_[{dst, tag}];
    const auto it = agreed.find(key);
    if (it == agreed.end()) {
      if (payload.dim() > kMaxDims) throw CommError(where(), "tensor of rank " + std::to_string(payload.dim()) + " is too large to send");
      agreed.emplace(key, Agreed{payload.scalar_type(), payload.sizes().vec()});
      return sendDevice(payload, dst, tag);
    }
    if (it->second.dtype != payload.scalar_type() || it->second.shape != payload.sizes().vec())
      throw CommError(where(), "a message to stage " + std::to_string(dst) + " of key " + std::to_string(key) + " has shape " +
                                   shapeText(payload.sizes().vec()) + " where its channel agreed " + shapeText(it->second.shape) +
                                   " with the key's first message (a stage's output must have one shape and dtype per "
                                   "microbatch size)");
    const Link& link = channel(tag, dst);
    std::vector<torch::Tensor> p{payload};
    pending_.push_back({link.group->send(p, link.peer, 0), payload});
  }

  torch::Tensor recvKeyed(int src, int tag, int64_t key) override {
    if (!deviceLayout()) return recv(src, tag);
    auto& agreed = rxShapes_[{src, tag}];
    const auto it = agreed.find(key);
    if (it == agreed.end()) {
      torch::Tensor first = recv(src, tag);  // the key's first message: its header, then the payload
      agreed.emplace(key, Agreed{first.scalar_type(), first.sizes().vec()});
      return first;
    }
    torch::Tensor out = torch::empty(it->second.shape, torch::TensorOptions().dtype(it->second.dtype).device(device_));
    std::vector<torch::Tensor> p{out};
    receivePayload(p, src, tag);
    return out;
  }

  int64_t headersSent() const override { return headersSent_; }

  void finish() override {
    for (auto& w : pending_) waitFor(w.work, -1, "send");
    pending_.clear();
  }

  void shutdown() override {
    finish();
    for (auto& [key, link] : channels_) compat::shutdownGroup(*link.group);
    channels_.clear();
  }

 private:
  struct Pending {
    c10::intrusive_ptr<c10d::Work> work;
    torch::Tensor keepAlive;
  };
  // The dtype and shape a key agreed on a channel (keyed messages on the device layout).
  struct Agreed {
    c10::ScalarType dtype;
    std::vector<int64_t> shape;
  };
  static std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
  std::string where() const { return "stage " + std::to_string(rank_) + " (" + backend_ + ")"; }

  void waitFor(const c10::intrusive_ptr<c10d::Work>& w, int peer, const char* what) {
    try {
      if (!w->wait(timeout_))
        throw CommError(where(), std::string("timed out in ") + what);
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& ex) {
      std::string msg = ex.what();
      auto nl = msg.find('\n');
      if (nl != std::string::npos) msg = msg.substr(0, nl);
      throw CommError(where(), std::string(what) + (peer >= 0 ? " from/to stage " + std::to_string(peer) : std::string()) +
                                   " failed after at most " + std::to_string(timeout_.count() / 1000) +
                                   " s (peer gone or not answering): " + msg);
    }
  }

  // Gloo's send work only learns that it completed inside wait(); so beyond a small window of
  // outstanding sends, wait for the oldest (it has almost always been delivered already).
  void reap() {
    while (pending_.size() > kMaxPendingSends) {
      waitFor(pending_.front().work, -1, "send");
      pending_.pop_front();
    }
  }
  static constexpr size_t kMaxPendingSends = 16;

  // The receiving side of one (peer, tag) channel: the receive kept posted for its next message.
  struct Channel {
    int64_t capacity = kHeaderBytes;
    torch::Tensor buffer;
    c10::intrusive_ptr<c10d::Work> posted;
  };
  void post(Channel& ch, int src, int tag) {
    ch.buffer = torch::empty({ch.capacity}, torch::kUInt8);
    std::vector<torch::Tensor> b{ch.buffer};
    ch.posted = pg_->recv(b, src, tag * 2);
  }

  // The device layout's channels: (wire tag, peer) -> the pair's group and the peer's index in it.
  struct Link {
    c10::intrusive_ptr<compat::P2PGroup> group;
    int peer = 0;
  };
  bool deviceLayout() const { return !channels_.empty(); }
  const Link& channel(int tag, int peer) const {
    const auto it = channels_.find({tag, peer});
    if (it == channels_.end())
      throw CommError(where(), "no payload channel for tag " + std::to_string(tag) + " with stage " + std::to_string(peer) +
                                   " (the channels opened before training do not include it)");
    return it->second;
  }
  // On the device: wait() orders this stream after NCCL's (the host does not wait for the bytes).
  void receivePayload(std::vector<torch::Tensor>& p, int src, int tag) {
    const Link& link = channel(tag, src);
    waitFor(link.group->recv(p, link.peer, 0), src, "device payload");
  }

  // NCCL: a header on the Gloo group (flags 2: the payload follows on the device), then the payload
  // from the stage's GPU. Both are posted without waiting.
  void sendDevice(torch::Tensor payload, int dst, int tag) {
    if (payload.device() != device_) payload = payload.to(device_);
    auto msg = torch::zeros({kHeaderBytes}, torch::kUInt8);
    int64_t* h = reinterpret_cast<int64_t*>(msg.data_ptr<uint8_t>());
    h[0] = 2;
    h[1] = payload.dim();
    h[2] = static_cast<int64_t>(payload.scalar_type());
    h[3] = static_cast<int64_t>(payload.nbytes());
    for (int64_t i = 0; i < payload.dim(); ++i) h[4 + i] = payload.size(i);
    const Link& link = channel(tag, dst);
    std::vector<torch::Tensor> m{msg}, p{payload};
    pending_.push_back({pg_->send(m, dst, tag * 2), msg});
    ++headersSent_;
    pending_.push_back({link.group->send(p, link.peer, 0), payload});
  }

  // A CUDA tensor's bytes in pinned host memory (the copy waits for the tensor's stream).
  static torch::Tensor stageToHost(const torch::Tensor& t) {
    torch::Tensor host = torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(true));
    host.copy_(t);
    return host;
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<compat::P2PGroup> pg_;
  std::map<std::pair<int, int>, Link> channels_;  // the device layout only
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::string backend_;
  torch::Device device_;
  std::deque<Pending> pending_;
  std::map<std::pair<int, int>, int64_t> txCapacity_;  // (peer, tag): the receiver's capacity, mirrored
  std::map<std::pair<int, int>, Channel> rx_;          // (peer, tag)
  std::map<std::pair<int, int>, std::map<int64_t, Agreed>> txShapes_, rxShapes_;  // (peer, tag): key -> agreed
  int64_t headersSent_ = 0;
};

}  // namespace

std::vector<PayloadChannel> plainPipelineChannels(int ranks) {
  std::vector<PayloadChannel> out;
  for (int r = 0; r + 1 < ranks; ++r) {
    out.push_back({kTagActivation, r, r + 1});
    out.push_back({kTagGradient, r + 1, r});
    out.push_back({kTagEval, r, r + 1});
  }
  return out;
}

bool ncclAvailable() { return compat::kNcclCompiled && torch::cuda::is_available(); }

int findFreePort(const std::string& addr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw CommError("port search", "cannot create a socket");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    throw CommError("port search", "cannot bind a socket on " + addr);
  }
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  int port = ntohs(sa.sin_port);
  ::close(fd);
  return port;
}

std::unique_ptr<Communicator> makeDistributedComm(const DistributedOptions& o) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeoutS * 1000));
  const std::string place = "rank " + std::to_string(o.rank) + " of " + std::to_string(o.worldSize);
  if (o.backend == "nccl" && !compat::kNcclCompiled)
    throw CommError(place, "backend nccl requested, but this LibTorch was built without CUDA/NCCL; use gloo");
  if (o.backend == "nccl" && !ncclAvailable())
    throw CommError(place, "backend nccl requested, but no GPU is visible (this LibTorch has NCCL); use gloo");
  if (o.backend != "gloo" && o.backend != "nccl") throw CommError(place, "unknown backend \"" + o.backend + "\"");
  if (o.storeFile.empty() && (o.masterPort < 1 || o.masterPort > 65535))
    throw ConfigError("MASTER_PORT", "must be a TCP port in 1..65535, found " + std::to_string(o.masterPort));
  c10::intrusive_ptr<c10d::Store> store;
  if (!o.storeFile.empty()) {
    try {
      store = c10::make_intrusive<c10d::FileStore>(o.storeFile, o.worldSize);
      store->setTimeout(timeout);
    } catch (const std::exception& ex) {
      throw CommError(place, "cannot open the file store " + o.storeFile + ": " + firstLine(ex));
    }
  } else {
    try {
      c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(o.masterPort);
      so.isServer = o.rank == 0 && !o.joinAgentStore;
      so.numWorkers = static_cast<size_t>(o.worldSize);
      so.waitWorkers = true;
      so.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(o.masterAddr, so);
    } catch (const std::exception& ex) {
      throw CommError(place, "cannot form the TCPStore at " + o.masterAddr + ":" + std::to_string(o.masterPort) +
                                 " within " + std::to_string(static_cast<int>(o.timeoutS)) +
                                 " s: " + firstLine(ex));
    }
  }
  const torch::Device device = o.cudaDevice >= 0 ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.cudaDevice))
                                                 : torch::Device(torch::kCPU);
  try {
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    // Gloo's own listening address: loopback for single-node runs; on a cluster the interface
    // named by GLOO_SOCKET_IFNAME (as in PyTorch), or this node's host name.
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    const bool loopback = o.masterAddr.rfind("127.", 0) == 0 || o.masterAddr == "localhost";
    if (!o.interfaceHost.empty()) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(o.interfaceHost));
    } else if (ifname && *ifname && !loopback) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(loopback ? o.masterAddr : hostName()));
    }
    // NCCL: the Gloo group above carries the headers (under its own key prefix), a two-rank NCCL
    // group per payload channel the payloads (see the top), formed here in one order on every rank
    // (by wire tag, then pair): the first channel not yet formed has both its ranks waiting on it,
    // so the exchanges that form them cannot wait on each other. NCCL's communicators form on the
    // device that is current (the worker makes the stage's device current before this).
    // (o.payloadChannelsOnGloo: the same layout with Gloo payload groups, for the tests.)
    if (o.backend == "nccl" || o.payloadChannelsOnGloo) {
      auto headers = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("headers", store), o.rank,
                                                                 o.worldSize, opts);
      auto comm = std::make_unique<C10dComm>(store, headers, o.rank, o.worldSize, o.timeoutS, o.backend, device);
      std::vector<PayloadChannel> channels = o.payloadChannels.empty() ? plainPipelineChannels(o.worldSize) : o.payloadChannels;
      std::sort(channels.begin(), channels.end(), [](const PayloadChannel& a, const PayloadChannel& b) {
        return std::make_tuple(a.tag, std::min(a.from, a.to), std::max(a.from, a.to)) <
               std::make_tuple(b.tag, std::min(b.from, b.to), std::max(b.from, b.to));
      });
      for (const auto& c : channels) {
        if (c.from != o.rank && c.to != o.rank) continue;
        const std::string name = "payloads/" + std::to_string(c.tag) + "/" + std::to_string(c.from) + "-" + std::to_string(c.to);
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
        const int index = c.from == o.rank ? 0 : 1;
        c10::intrusive_ptr<compat::P2PGroup> group;
#ifdef USE_C10D_NCCL
        if (o.backend == "nccl") {
          auto nopts = c10d::ProcessGroupNCCL::Options::create();
          nopts->timeout = timeout;
          group = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, index, 2, nopts);
        }
#endif
        if (!group) group = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, index, 2, opts);
        comm->openChannel(c, std::move(group));
      }
      return comm;
    }
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.worldSize, opts);
    return std::make_unique<C10dComm>(store, pg, o.rank, o.worldSize, o.timeoutS, "gloo", device);
  } catch (const CommError&) {
    throw;
  } catch (const std::exception& ex) {
    // While the ranks connect, Gloo takes any connection to its listeners as a peer's: on a single
    // node a rank that died and another local process writing to the run's loopback ports look
    // alike here (docs/reliability.md, Security).
    const bool loopback = o.masterAddr.rfind("127.", 0) == 0 || o.masterAddr == "localhost";
    throw CommError(place, "cannot form the " + o.backend + " process group: " + firstLine(ex) +
                               (loopback ? " (while the ranks connected on loopback: a rank that died, or another local process "
                                           "connecting to the run's ports, which Gloo accepts as a peer's)"
                                         : ""));
  }
}

}  // namespace pm
