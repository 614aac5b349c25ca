// The launchers' link against a hostile network: what node 0 takes before and after a hello, how
// many connections may wait, and the first line that fails verification, in either direction.
#include "core/runner/node_peers.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/events/event_sink.h"
#include "core/util/net.h"
#include "core/util/system_info.h"
#include "tests/support/test_support.h"

namespace {

const std::string kSecret = "a-test-secret-of-enough-bytes-0123456789";

// A plain client of node 0's port (blocking, with a receive timeout).
int connectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  timeval tv{0, 200000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Node 0 serviced until `done` (or 10 s).
bool serviceUntil(pm::RemoteNodes& nodes, pm::RunVerdict& verdict, pm::EventSink& sink, const std::function<bool()>& done) {
  const double end = pm::monotonicSeconds() + 10;
  while (pm::monotonicSeconds() < end) {
    nodes.service(verdict, sink);
    if (done()) return true;
    std::vector<pollfd> fds;  // until node 0's sockets have something, or 5 ms for the client's side
    nodes.addPollFds(fds);
    ::poll(fds.data(), fds.size(), 5);
  }
  return false;
}

// What a plain client has received so far: its lines, and whether the other end has closed.
struct Received {
  std::string data;
  bool closed = false;
  void poll(int fd) {
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) data.append(buf, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl; (nl = data.find('\n', start)) != std::string::npos; start = nl + 1) out.push_back(data.substr(start, nl - start));
    return out;
  }
};

// A node k made by hand: its session from node 0's challenge, its hello sent.
struct HandNode {
  int fd = -1;
  Received in;
  std::optional<pm::NodeLinkSession> session;
};

}  // namespace

// Bytes without a line end before a hello: node 0 stops reading past 16 KiB, drops the connection
// and says why (it once buffered 1.5 GB from one connection).
TEST(NodePeers, ALongLineBeforeTheHelloDropsTheConnection) {
  const int port = pm::test::freePortPair();
  pm::RemoteNodes nodes("127.0.0.1", port, 2, "digest", kSecret);
  pm::RunVerdict verdict;
  pm::MemorySink sink;
  const int fd = connectTo(port);
  Received in;
  ASSERT_TRUE(serviceUntil(nodes, verdict, sink, [&] { in.poll(fd); return !in.lines().empty(); }));
  const std::string junk(100 << 10, 'x');
  ASSERT_EQ(::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  EXPECT_TRUE(serviceUntil(nodes, verdict, sink, [&] { in.poll(fd); return in.closed; })) << "the connection stayed open";
  EXPECT_NE(nodes.missingNote().find("more than 16384 bytes without a line end before a hello"), std::string::npos)
      << nodes.missingNote();
  EXPECT_TRUE(verdict.undecided()) << "a stranger's bytes ended the run: " << verdict.failure;
  ::close(fd);
}

// Twelve connections at once that say nothing (within the listener's backlog of 16): eight get a
// challenge and wait; the other four are closed on arrival, without one.
TEST(NodePeers, AFloodOfConnectionsKeepsAtMostEightWaiting) {
  const int port = pm::test::freePortPair();
  pm::RemoteNodes nodes("127.0.0.1", port, 2, "digest", kSecret);
  pm::RunVerdict verdict;
  pm::MemorySink sink;
  std::vector<int> fds;
  std::vector<Received> in(12);
  for (int i = 0; i < 12; ++i) fds.push_back(connectTo(port));
  const auto settled = [&] {
    int decided = 0;
    for (size_t i = 0; i < fds.size(); ++i) {
      in[i].poll(fds[i]);
      decided += in[i].closed || !in[i].lines().empty() ? 1 : 0;
    }
    return decided == 12;
  };
  ASSERT_TRUE(serviceUntil(nodes, verdict, sink, settled));
  int challenged = 0, closedSilently = 0;
  for (const auto& r : in) {
    challenged += !r.closed && r.lines().size() == 1 ? 1 : 0;
    closedSilently += r.closed && r.data.empty() ? 1 : 0;
  }
  EXPECT_EQ(challenged, pm::kMaxPendingConnections);
  EXPECT_EQ(closedSilently, 12 - pm::kMaxPendingConnections);
  for (int fd : fds) ::close(fd);
}

// A node joins with the secret and sends one event; then one of its lines is altered on the way.
// Node 0 ends the link at that line: the run fails with the reason, and the node is told it in a
// sealed abort before the connection closes (the lines after it would all fail verification).
TEST(NodePeers, AnAlteredLineFromANodeEndsTheRunWithTheReason) {
  const int port = pm::test::freePortPair();
  pm::RemoteNodes nodes("127.0.0.1", port, 2, "digest", kSecret);
  pm::RunVerdict verdict;
  pm::MemorySink sink;
  HandNode k;
  k.fd = connectTo(port);
  ASSERT_TRUE(serviceUntil(nodes, verdict, sink, [&] { k.in.poll(k.fd); return !k.in.lines().empty(); }));
  const pm::Json challenge = pm::Json::parse(k.in.lines()[0]);
  const std::string nonce = pm::randomNonce();
  k.session.emplace(kSecret, challenge.value("nonce", std::string()), nonce, /*node0=*/false);
  auto sendLine = [&](const std::string& line) { ::send(k.fd, line.data(), line.size(), MSG_NOSIGNAL); };
  sendLine(k.session->seal({{"type", pm::node_msg::kHello}, {"node", 1}, {"nnodes", 2}, {"config", "digest"},
                             {"ranks", {1}}, {"model_sha256", ""}, {"nonce", nonce}}));
  pm::Json event = pm::makeEvent(pm::ev::kLog);
  event["message"] = "genuine";
  sendLine(k.session->seal(event));
  ASSERT_TRUE(serviceUntil(nodes, verdict, sink, [&] { return !sink.ofType(pm::ev::kLog).empty() && sink.ofType(pm::ev::kLog).size() >= 2; }));
  EXPECT_TRUE(verdict.undecided()) << verdict.failure;
  std::string altered = k.session->seal(event);
  altered.replace(altered.find("genuine"), 7, "forged!");
  sendLine(altered);
  ASSERT_TRUE(serviceUntil(nodes, verdict, sink, [&] { return !verdict.undecided(); }));
  EXPECT_NE(verdict.failure.find("failed authentication"), std::string::npos) << verdict.failure;
  EXPECT_NE(verdict.failure.find("node 1"), std::string::npos) << verdict.failure;
  for (const auto& e : sink.events()) EXPECT_EQ(e.dump().find("forged!"), std::string::npos) << "the altered line was recorded";
  const double end = pm::monotonicSeconds() + 5;
  while (!k.in.closed && pm::monotonicSeconds() < end) k.in.poll(k.fd);
  EXPECT_TRUE(k.in.closed);
  // The node's lines from node 0: the challenge (plain), then the welcome and the abort, sealed.
  pm::NodeLinkSession node0View = *k.session;
  std::vector<std::string> types;
  for (size_t i = 1; i < k.in.lines().size(); ++i) {
    if (const auto m = node0View.open(k.in.lines()[i])) types.push_back(m->value("type", "") + ":" + m->value("message", ""));
  }
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0], std::string(pm::node_msg::kWelcome) + ":");
  EXPECT_EQ(types[1], std::string(pm::node_msg::kAbort) + ":" + verdict.failure);
  ::close(k.fd);
}

// Node k's side, against a node 0 made by hand: before the welcome a plain refusal is node 0's
// word (the run fails with its message); after it, a plain "node_refused" injected on the way is
// a line that fails verification: the link ends with that reason, and node 0 hears it in a sealed
// node_finished.
TEST(NodePeers, APlainRefusalCountsOnlyBeforeTheWelcome) {
  for (const bool welcome : {false, true}) {
    SCOPED_TRACE(welcome ? "after the welcome" : "before the welcome");
    const int port = pm::test::freePortPair();
    const int listener = pm::listenTcp("127.0.0.1", port);
    std::unique_ptr<pm::UpLink> up;
    std::thread joiner([&] {
      pm::NodeHello hello;
      hello.node = 1;
      hello.nnodes = 2;
      hello.config = "digest";
      up = std::make_unique<pm::UpLink>("127.0.0.1", port, 10.0, kSecret, hello);
    });
    int fd = -1;
    const double end = pm::monotonicSeconds() + 10;
    while (fd < 0 && pm::monotonicSeconds() < end) fd = pm::acceptTcp(listener);
    ASSERT_GE(fd, 0);
    const std::string challenge = pm::randomNonce();
    ASSERT_TRUE(pm::sendAll(fd, pm::Json{{"type", pm::node_msg::kChallenge}, {"nonce", challenge}}.dump() + "\n"));
    std::string buf;
    const auto helloLine = pm::awaitLine(fd, buf, 10);
    joiner.join();
    ASSERT_TRUE(helloLine.has_value());
    pm::Json hello;
    std::string why;
    auto session = pm::acceptHello(kSecret, challenge, *helloLine, hello, why);
    ASSERT_TRUE(session.has_value()) << why;
    if (welcome) {
      ASSERT_TRUE(pm::sendAll(fd, session->seal(pm::Json{{"type", pm::node_msg::kWelcome}})));
    }
    ASSERT_TRUE(pm::sendAll(fd, pm::Json{{"type", pm::node_msg::kRefused}, {"message", "node 0 refused this node: forged"}}.dump() + "\n"));
    pm::RunVerdict verdict;
    const double until = pm::monotonicSeconds() + 10;
    while (verdict.undecided() && pm::monotonicSeconds() < until) {
      up->service(verdict);
      std::vector<pollfd> fds;  // until node 0's line arrives
      up->addPollFd(fds);
      ::poll(fds.data(), fds.size(), 100);
    }
    if (!welcome) {
      EXPECT_EQ(verdict.failure, "node 0 refused this node: forged");
    } else {
      EXPECT_NE(verdict.failure.find("failed authentication"), std::string::npos) << verdict.failure;
      EXPECT_EQ(verdict.failure.find("forged"), std::string::npos) << verdict.failure;
      const auto said = pm::awaitLine(fd, buf, 10);
      ASSERT_TRUE(said.has_value());
      const auto finished = session->open(*said);
      ASSERT_TRUE(finished.has_value()) << *said;
      EXPECT_EQ(finished->value("type", ""), pm::node_msg::kFinished);
      EXPECT_EQ(finished->value("status", ""), "failed");
      EXPECT_EQ(finished->value("message", ""), verdict.failure);
    }
    up.reset();
    ::close(fd);
    ::close(listener);
  }
}
