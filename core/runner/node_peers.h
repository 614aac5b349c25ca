#pragma once
// The launchers' link of a multi-node run as each launcher uses it (the messages and their
// authentication are core/events/node_link.h's): node 0 accepts, checks and records the other
// launchers (RemoteNodes); node k > 0 joins node 0 and forwards its events there (UpLink). Both
// update the run's verdict with what the other end says, so that every node ends the same way and
// says why.
#include <poll.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/events/event_sink.h"
#include "core/events/node_link.h"
#include "core/runner/run_verdict.h"

namespace pm {

// What every node must agree on: the experiment without its name, notes and tags (notes list the
// --set overrides in the order given; neither changes the training) and without the model file's
// path (each node reads its own copy; the copies' SHA-256 are compared instead), as a 64-bit
// FNV-1a hash, which is the same on every build (std::hash need not be).
std::string configDigest(const Experiment& e);

// Node 0's side: the other nodes' launchers. Each connection is challenged; its hello must verify
// (the run secret) and match this run (node number, --nnodes, experiment), else it is refused.
// The events of accepted nodes go to the sink.
class RemoteNodes {
 public:
  // Listens on addr:port (throws EngineError naming it).
  // `modelSha256`: node 0's model file's SHA-256 ("" for a zoo model), which every node's must equal.
  RemoteNodes(const std::string& addr, int port, int nnodes, std::string digest, std::string secret,
              std::string modelSha256 = "");
  ~RemoteNodes();
  RemoteNodes(const RemoteNodes&) = delete;
  RemoteNodes& operator=(const RemoteNodes&) = delete;

  // The listening socket and the open connections, to wait on.
  void addPollFds(std::vector<pollfd>& fds) const;
  // Accepts new connections and handles what the connected launchers sent, without blocking.
  void service(RunVerdict& verdict, EventSink& sink);
  // Sends `msg` to every accepted node.
  void tell(const Json& msg);

  // Every other node said hello and every one has closed its connection.
  bool done() const;
  // No node that said hello is still connected.
  bool noneConnected() const;
  // For a failed run: " (node N never joined: ...)" naming the nodes that never said hello, with
  // the last refused connection; "" when every node joined.
  std::string missingNote() const;
  // The stage summaries of the other nodes' stage_finished events, by rank.
  const std::map<int, Json>& stageSummaries() const { return summaries_; }

  // Closes the listening socket and every connection.
  void close();

 private:
  // A remote node's launcher, seen from node 0.
  struct Peer {
    int fd = -1;
    std::string buf;
    int node = -1;  // set once its hello is authenticated
    bool finished = false;
    std::string challenge, peer;
    std::optional<NodeLinkSession> session;
    double since = 0;  // when it connected (monotonic s): the hello is due within kHelloTimeoutS
  };

  void accept();
  void read(Peer& r, RunVerdict& verdict, EventSink& sink);
  bool open(Peer& r, const std::string& line, Json& msg, RunVerdict& verdict);
  // Ends an authenticated node's link for `why`: the run fails with it, the node is told (sealed
  // abort) and the connection closed.
  void endLink(Peer& r, const std::string& why, RunVerdict& verdict);
  void dispatch(Peer& r, const Json& msg, RunVerdict& verdict, EventSink& sink);
  void hello(Peer& r, const Json& msg, RunVerdict& verdict, EventSink& sink);
  std::string refusal(const Peer& r, const Json& hello) const;
  void refuse(Peer& r, const std::string& why);

  int listenFd_ = -1;
  int nnodes_;
  std::string digest_, secret_, modelSha256_;
  std::vector<Peer> peers_;
  bool floodSaid_ = false;   // the closing of surplus connections was said (once per burst)
  std::string lastRefusal_;  // the last connection refused (a node with another secret, a forger)
  std::map<int, Json> summaries_;
};

// What node k says in its hello.
struct NodeHello {
  int node = 0;
  int nnodes = 0;
  std::string config;  // configDigest
  std::vector<int> ranks;
  std::string modelSha256;  // the SHA-256 of this node's model file ("" for a zoo model)
};

// Node k's side: its link to node 0, which receives this node's events and says how the run ends.
class UpLink {
 public:
  // Connects to node 0 at addr:port and answers its challenge with `hello`. Throws EngineError at
  // "--master-addr" when no challenge comes within timeoutS.
  UpLink(const std::string& addr, int port, double timeoutS, const std::string& secret, const NodeHello& hello);
  ~UpLink();
  UpLink(const UpLink&) = delete;
  UpLink& operator=(const UpLink&) = delete;

  // The connection while it lasts, to wait on.
  void addPollFd(std::vector<pollfd>& fds) const;
  // Sends `msg` to node 0; a failed send marks the link lost.
  void send(const Json& msg);
  // The stop was asked here (node_stopping).
  void sayStopping() { send(Json{{"type", node_msg::kStopping}, {"node", node_}}); }
  // Handles what node 0 said (its stop, its abort, its refusal), without blocking; a link lost
  // while the run goes on fails it.
  void service(RunVerdict& verdict);
  // Says how this node's launcher ended (node_finished) and closes the link.
  void finish(RunStatus status, const std::string& message);

 private:
  void handle(const std::string& line, RunVerdict& verdict);
  // Ends the link for `why`: the run fails with it, node 0 hears it (a sealed node_finished), the
  // connection closes.
  void endLink(const std::string& why, RunVerdict& verdict);

  std::string addr_;
  int node_;
  int fd_ = -1;
  std::string buf_;
  std::optional<NodeLinkSession> session_;
  bool lost_ = false;
  bool welcomed_ = false;  // node 0's sealed welcome came: from here on a plain refusal is not taken
};

}  // namespace pm
