#include "core/runner/node_peers.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/events/run_status.h"
#include "core/util/errors.h"
#include "core/util/net.h"
#include "core/util/process.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm {

std::string configDigest(const Experiment& e) {
  Json j = experimentToJson(e);
  for (const char* key : {"name", "notes", "tags"}) j.erase(key);
  j["model"].erase("path");
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : j.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return std::to_string(h);
}

// ---- node 0 ----

RemoteNodes::RemoteNodes(const std::string& addr, int port, int nnodes, std::string digest, std::string secret,
                         std::string modelSha256)
    : listenFd_(listenTcp(addr, port)),
      nnodes_(nnodes),
      digest_(std::move(digest)),
      secret_(std::move(secret)),
      modelSha256_(std::move(modelSha256)) {}

RemoteNodes::~RemoteNodes() { close(); }

void RemoteNodes::close() {
  if (listenFd_ >= 0) ::close(listenFd_);
  listenFd_ = -1;
  for (auto& r : peers_)
    if (r.fd >= 0) {
      ::close(r.fd);
      r.fd = -1;
    }
}

void RemoteNodes::addPollFds(std::vector<pollfd>& fds) const {
  if (listenFd_ >= 0) fds.push_back({listenFd_, POLLIN, 0});
  for (const auto& r : peers_)
    if (r.fd >= 0) fds.push_back({r.fd, POLLIN, 0});
}

void RemoteNodes::service(RunVerdict& verdict, EventSink& sink) {
  accept();
  for (auto& r : peers_)
    if (r.fd >= 0) read(r, verdict, sink);
  // A connection that says no verified hello in time is let go (it holds one of the few places).
  const double now = monotonicSeconds();
  for (auto& r : peers_)
    if (r.fd >= 0 && !r.session && now - r.since > kHelloTimeoutS)
      refuse(r, "no hello within " + std::to_string(static_cast<int>(kHelloTimeoutS)) + " s");
  peers_.erase(std::remove_if(peers_.begin(), peers_.end(), [](const Peer& r) { return r.fd < 0 && r.node < 0; }), peers_.end());
}

void RemoteNodes::accept() {
  if (listenFd_ < 0) return;
  for (int fd; (fd = acceptTcp(listenFd_)) >= 0;) {
    const auto pending = std::count_if(peers_.begin(), peers_.end(), [](const Peer& p) { return p.fd >= 0 && !p.session; });
    if (pending >= kMaxPendingConnections) {  // a flood of connections: each new one closed on arrival
      if (!floodSaid_)
        std::fprintf(stderr, "pipemare: node 0 closes new connections from %s and others to its node port: %d are already "
                             "waiting to say hello\n", peerAddress(fd).c_str(), kMaxPendingConnections);
      floodSaid_ = true;
      ::close(fd);
      continue;
    }
    floodSaid_ = false;
    Peer r;
    r.fd = fd;
    r.since = monotonicSeconds();
    r.challenge = randomNonce();
    r.peer = peerAddress(fd);
    sendAll(fd, Json{{"type", node_msg::kChallenge}, {"nonce", r.challenge}}.dump() + "\n");
    peers_.push_back(std::move(r));
  }
}

void RemoteNodes::read(Peer& r, RunVerdict& verdict, EventSink& sink) {
  bool eof = false, tooLong = false;
  for (const auto& line : drainLines(r.fd, r.buf, eof, r.session ? kMaxLineBytes : kMaxHelloBytes, &tooLong)) {
    if (r.fd < 0) break;  // refused, or its link ended
    Json msg;
    if (open(r, line, msg, verdict)) dispatch(r, msg, verdict, sink);
  }
  if (tooLong && r.fd >= 0) {
    if (!r.session)
      refuse(r, "more than " + std::to_string(kMaxHelloBytes) + " bytes without a line end before a hello");
    else
      endLink(r, "node " + std::to_string(r.node) + "'s link sent more than " + std::to_string(kMaxLineBytes) +
                     " bytes without a line end", verdict);
    return;
  }
  if (eof && r.fd >= 0) {
    ::close(r.fd);
    r.fd = -1;
    // A connection that never said hello (a port scan, a health probe) is not a node.
    if (r.node >= 0 && !r.finished && verdict.undecided())
      verdict.fail("node " + std::to_string(r.node) + "'s launcher disconnected before its ranks finished");
  }
}

// The message of a line: the hello (the connection's first line) or a sealed message. False for a
// line that is refused (a hello that does not verify) or dropped (a sealed line that does not).
bool RemoteNodes::open(Peer& r, const std::string& line, Json& msg, RunVerdict& verdict) {
  if (!r.session) {
    std::string why;
    r.session = acceptHello(secret_, r.challenge, line, msg, why);
    if (!r.session) refuse(r, why);
    return r.session.has_value();
  }
  if (auto sealed = r.session->open(line)) {
    msg = std::move(*sealed);
    return true;
  }
  // Every later line of this link would fail too (the two ends' sequence numbers disagree from
  // here on): the link ends here, and the run on both nodes, with the reason.
  endLink(r, "a line on node " + std::to_string(r.node) + "'s link (" + r.peer +
                 ") failed authentication (altered or injected on the way); the run was ended on every node",
          verdict);
  return false;
}

void RemoteNodes::endLink(Peer& r, const std::string& why, RunVerdict& verdict) {
  std::fprintf(stderr, "pipemare: node 0: %s\n", why.c_str());
  if (verdict.undecided()) verdict.fail(why);
  sendAll(r.fd, r.session->seal(Json{{"type", node_msg::kAbort}, {"message", why}}));
  ::close(r.fd);
  r.fd = -1;
  r.finished = true;  // its end is said: no second failure for the closed connection
}

void RemoteNodes::dispatch(Peer& r, const Json& msg, RunVerdict& verdict, EventSink& sink) {
  const std::string type = msg.value("type", "");
  if (type == node_msg::kHello) {
    if (r.node < 0) hello(r, msg, verdict, sink);  // one hello per connection
  } else if (r.node < 0) {
    return;
  } else if (type == node_msg::kStopping) {
    verdict.stopFromNode(r.node);
  } else if (type == node_msg::kFinished) {
    r.finished = true;
    const auto st = parseRunStatus(msg.value("status", std::string()));
    if (st == RunStatus::Failed && verdict.undecided())
      verdict.fail("node " + std::to_string(r.node) + ": " + msg.value("message", std::string()));
    if (st == RunStatus::Diverged) verdict.diverged(msg.value("message", std::string()));
  } else {
    if (type == ev::kStageFinished && msg.contains("summary")) summaries_[msg.value("rank", -1)] = msg["summary"];
    sink.emit(msg);
  }
}

// Why node 0 refuses a verified hello ("" when it accepts it): a node number out of range or taken,
// another --nnodes, another experiment.
std::string RemoteNodes::refusal(const Peer& r, const Json& hello) const {
  const int node = hello.value("node", -1);
  const int theirNodes = hello.value("nnodes", -1);
  const bool known = std::any_of(peers_.begin(), peers_.end(), [&](const Peer& o) { return &o != &r && o.node == node; });
  if (node < 1 || node >= nnodes_)
    return "node " + std::to_string(node) + " is not one of nodes 1.." + std::to_string(nnodes_ - 1) + " (--node-rank)";
  if (theirNodes != nnodes_)
    return "node " + std::to_string(node) + " was started with --nnodes " + std::to_string(theirNodes) + ", node 0 with " +
           std::to_string(nnodes_);
  if (known) return "node " + std::to_string(node) + " joined twice (two launchers with --node-rank " + std::to_string(node) + ")";
  if (hello.value("config", std::string()) != digest_)
    return "node " + std::to_string(node) + " runs a different experiment (its configuration differs from node 0's)";
  if (const std::string theirs = hello.value("model_sha256", std::string()); theirs != modelSha256_)
    return "node " + std::to_string(node) + "'s model file differs from node 0's (SHA-256 " +
           (theirs.empty() ? std::string("none") : theirs.substr(0, 16) + "...") + " on node " + std::to_string(node) + ", " +
           (modelSha256_.empty() ? std::string("none") : modelSha256_.substr(0, 16) + "...") +
           " on node 0): give every node the same file";
  return "";
}

// A refused node stays connected: it ends on the abort and says why; its node number counts as
// joined.
void RemoteNodes::hello(Peer& r, const Json& msg, RunVerdict& verdict, EventSink& sink) {
  const std::string refused = refusal(r, msg);
  r.node = msg.value("node", -1);
  if (!refused.empty()) {
    verdict.fail(refused);
    sendAll(r.fd, r.session->seal(Json{{"type", node_msg::kAbort}, {"message", "node 0 refused this node: " + refused}}));
  } else {
    sendAll(r.fd, r.session->seal(Json{{"type", node_msg::kWelcome}}));
  }
  Json log = makeEvent(ev::kLog);
  log["level"] = "info";
  log["message"] = "node " + std::to_string(r.node) + " joined with ranks " + msg.value("ranks", Json::array()).dump();
  sink.emit(log);
}

// Refused lines are said on this launcher's terminal only: nothing from them reaches the run.
void RemoteNodes::refuse(Peer& r, const std::string& why) {
  lastRefusal_ = "a connection from " + r.peer + " was refused: " + why;
  std::fprintf(stderr, "pipemare: node 0 refused a connection from %s to its node port: %s\n", r.peer.c_str(), why.c_str());
  sendAll(r.fd, Json{{"type", node_msg::kRefused}, {"message", "node 0 refused this node: " + why}}.dump() + "\n");
  ::close(r.fd);
  r.fd = -1;
}

void RemoteNodes::tell(const Json& msg) {
  for (auto& r : peers_)
    if (r.fd >= 0 && r.node >= 0 && r.session) sendAll(r.fd, r.session->seal(msg));
}

// Only launchers that said hello count: a silent connection left open is not a node to wait for.
bool RemoteNodes::done() const {
  return std::count_if(peers_.begin(), peers_.end(), [](const Peer& r) { return r.node >= 0; }) >= nnodes_ - 1 && noneConnected();
}

bool RemoteNodes::noneConnected() const {
  return std::all_of(peers_.begin(), peers_.end(), [](const Peer& r) { return r.fd < 0 || r.node < 0; });
}

// Node 0 knows which launchers never arrived: the workers' own message (a Gloo timeout) cannot say it.
std::string RemoteNodes::missingNote() const {
  std::vector<std::string> missing;
  for (int n = 1; n < nnodes_; ++n)
    if (std::none_of(peers_.begin(), peers_.end(), [&](const Peer& r) { return r.node == n; })) missing.push_back(std::to_string(n));
  if (missing.empty()) return "";
  return " (node" + std::string(missing.size() > 1 ? "s " : " ") + join(missing, ", ") +
         " never joined: is its launcher running, with the same --master-addr and --master-port?" +
         (lastRefusal_.empty() ? std::string() : " " + lastRefusal_) + ")";
}

// ---- node k ----

UpLink::UpLink(const std::string& addr, int port, double timeoutS, const std::string& secret, const NodeHello& hello)
    : addr_(addr), node_(hello.node) {
  fd_ = connectTcp(addr, port, timeoutS);
  const auto line = awaitLine(fd_, buf_, timeoutS, kMaxHelloBytes);
  const Json challenge = line ? Json::parse(*line, nullptr, false) : Json();
  if (!challenge.is_object() || challenge.value("type", "") != node_msg::kChallenge) {
    ::close(fd_);
    throw EngineError("--master-addr", "the launcher at " + addr + ":" + std::to_string(port) + " did not send a node challenge within " +
                                           std::to_string(static_cast<int>(timeoutS)) + " s (is it node 0 of this run?)");
  }
  const std::string nonce = randomNonce();
  session_.emplace(secret, challenge.value("nonce", std::string()), nonce, /*node0=*/false);
  const Json msg{{"type", node_msg::kHello}, {"node", hello.node}, {"nnodes", hello.nnodes}, {"config", hello.config},
                 {"ranks", hello.ranks}, {"model_sha256", hello.modelSha256}, {"nonce", nonce}};
  sendAll(fd_, session_->seal(msg));
}

UpLink::~UpLink() {
  if (fd_ >= 0) ::close(fd_);
}

void UpLink::addPollFd(std::vector<pollfd>& fds) const {
  if (fd_ >= 0 && !lost_) fds.push_back({fd_, POLLIN, 0});
}

void UpLink::send(const Json& msg) {
  if (fd_ >= 0 && !lost_ && !sendAll(fd_, session_->seal(msg))) lost_ = true;
}

void UpLink::service(RunVerdict& verdict) {
  if (fd_ >= 0 && !lost_) {
    bool eof = false, tooLong = false;
    for (const auto& line : drainLines(fd_, buf_, eof, welcomed_ ? kMaxLineBytes : kMaxHelloBytes, &tooLong)) {
      if (fd_ < 0) break;
      handle(line, verdict);
    }
    if (tooLong && fd_ >= 0) endLink("node 0's link sent a line longer than the link allows", verdict);
    if (eof && verdict.undecided()) lost_ = true;
  }
  if (lost_ && verdict.undecided()) verdict.fail("lost the connection to the node-rank 0 launcher at " + addr_);
}

void UpLink::handle(const std::string& line, RunVerdict& verdict) {
  const auto sealed = session_->open(line);
  if (!sealed) {
    // Before its welcome, node 0 refuses a hello in plain text (it has no session to seal with);
    // the connection then closes. Any other line that fails verification (a plain refusal once
    // the session exists among them) ends the link and the run on both nodes.
    const Json plain = Json::parse(line, nullptr, false);
    if (!welcomed_ && plain.is_object() && plain.value("type", "") == node_msg::kRefused) {
      if (verdict.failure.empty()) verdict.fail(plain.value("message", std::string("node 0 refused this node")));
      return;
    }
    endLink("a line on the link from node 0 (" + addr_ + ") failed authentication (altered or injected on the way); the run "
            "was ended on every node",
            verdict);
    return;
  }
  const std::string type = sealed->value("type", "");
  if (type == node_msg::kWelcome) welcomed_ = true;
  if (type == node_msg::kAbort) verdict.fail(sealed->value("message", std::string("node 0 ended the run")));
  if (type == node_msg::kStop) verdict.stopFromNode(0);
}

void UpLink::endLink(const std::string& why, RunVerdict& verdict) {
  std::fprintf(stderr, "pipemare: %s\n", why.c_str());
  if (verdict.undecided()) verdict.fail(why);
  // Node 0 hears why (its own lines to this node can still be sealed and verified there).
  sendAll(fd_, session_->seal(Json{{"type", node_msg::kFinished}, {"node", node_}, {"status", toString(RunStatus::Failed)},
                                   {"message", why}}));
  ::close(fd_);
  fd_ = -1;
}

void UpLink::finish(RunStatus status, const std::string& message) {
  if (fd_ < 0) return;
  send(Json{{"type", node_msg::kFinished}, {"node", node_}, {"status", toString(status)}, {"message", message}});
  ::close(fd_);
  fd_ = -1;
}

}  // namespace pm
