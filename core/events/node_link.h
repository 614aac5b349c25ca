#pragma once
// The launchers' link in a multi-node run, declared once: node k > 0 connects to node 0 at
// --master-port + 1 and forwards its workers' events; node 0 records them and tells every node how
// the run ends.
//
// Trust: both ends hold the run secret (loadRunSecret). On accepting, node 0 sends a fresh random
// challenge; node k answers with a hello carrying its own fresh nonce. From the hello on, every
// line in either direction is "<HMAC-SHA256 hex> <JSON>", keyed per connection by
// HMAC(secret, challenge, nonce) and covering the direction and a sequence number: a line from a
// process without the secret, a replayed line (another connection, another position) or an
// altered one fails verification and is refused. Nothing is encrypted: events are readable on the
// network (see docs/cluster.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/events/event.h"

namespace pm {

// The messages of the link (docs/events.md, "The launchers' link").
namespace node_msg {
// node 0 -> k, the first line, plain: {"type", "nonce"}.
inline constexpr const char* kChallenge = "node_challenge";
// node 0 -> k, plain, then the connection closes: the hello failed authentication {"message"}.
// Taken only before the session exists (before kWelcome): later every line must verify.
inline constexpr const char* kRefused = "node_refused";
// node 0 -> k, sealed: the hello verified and the node is one of the run's; from here on a line
// that fails verification ends the run on both nodes.
inline constexpr const char* kWelcome = "node_welcome";
// k -> node 0: {"node", "nnodes", "config" (configDigest), "ranks", "nonce"}; the first sealed line.
inline constexpr const char* kHello = "node_hello";
// k -> node 0: the stop was asked on node k {"node"}.
inline constexpr const char* kStopping = "node_stopping";
// k -> node 0: node k's launcher ended {"node", "status" (a RunStatus name, run_status.h), "message"}.
inline constexpr const char* kFinished = "node_finished";
// node 0 -> k: stop every stage after one common minibatch.
inline constexpr const char* kStop = "stop";
// node 0 -> k: end now {"message"} (node 0 refused node k, or the run failed).
inline constexpr const char* kAbort = "abort";
// Every other line from node k is one of its workers' events (docs/events.md).
}  // namespace node_msg

// Bounds on what the link takes from the network: a line before the hello verifies (the challenge
// answered by anyone who connects) is at most kMaxHelloBytes; an authenticated line at most
// kMaxLineBytes. Node 0 keeps at most kMaxPendingConnections connections that have not yet said a
// verified hello, each for kHelloTimeoutS at most; more are closed on arrival.
inline constexpr size_t kMaxHelloBytes = 16u << 10;
inline constexpr size_t kMaxLineBytes = 4u << 20;
inline constexpr int kMaxPendingConnections = 8;
inline constexpr double kHelloTimeoutS = 10.0;

// Where the run secret comes from, in order: `secretFile` (--secret-file), the environment
// variable PIPEMARE_RUN_SECRET, or the user's secret file ($XDG_CONFIG_HOME/pipemare/run-secret,
// else ~/.config/pipemare/run-secret), made with 32 random bytes (mode 0600) when absent, so that
// nodes sharing a home directory agree without setup. Throws ConfigError (exit 2) naming the
// source when it is unreadable, readable by other users, or shorter than 16 bytes.
struct RunSecret {
  std::string bytes;
  std::string source;  // "--secret-file F", "PIPEMARE_RUN_SECRET", or the default file's path
};
inline constexpr const char* kRunSecretEnv = "PIPEMARE_RUN_SECRET";
RunSecret loadRunSecret(const std::string& secretFile);

// 16 bytes from OpenSSL's random generator, as 32 hex digits.
std::string randomNonce();

// One authenticated connection, seen from one end.
class NodeLinkSession {
 public:
  // `node0`: this end is node 0 (it sent `challenge`; the other end chose `nonce`).
  NodeLinkSession(const std::string& secret, const std::string& challenge, const std::string& nonce, bool node0);
  // The line to send (with its newline), numbered with the next sequence number of this direction.
  std::string seal(const Json& msg);
  // The message of a received line, or nothing when its MAC does not verify for the next
  // sequence number of the other direction (the number advances only on success).
  std::optional<Json> open(const std::string& line);

 private:
  std::string mac(const std::string& direction, uint64_t seq, const std::string& text) const;
  std::string key_;
  bool node0_;
  uint64_t sent_ = 0, received_ = 0;
};

// Node 0's side of a hello line: the session when it verifies (a well-formed nonce, a valid MAC),
// else nothing and `why` says what failed.
std::optional<NodeLinkSession> acceptHello(const std::string& secret, const std::string& challenge, const std::string& line,
                                           Json& hello, std::string& why);

}  // namespace pm
