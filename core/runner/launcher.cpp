#include "core/runner/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>

#include "core/comm/gloo_comm.h"
#include "core/events/node_link.h"
#include "core/runner/worker_main.h"
#include "core/util/errors.h"
#include "core/util/net.h"
#include "core/util/process.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm {
namespace {

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int outFd = -1, errFd = -1;
  int lifelineFd = -1;  // the worker's stdin: closed here (or by this process's death) ends it
  std::string outBuf, errBuf, errTail;
  bool exited = false;
  int status = 0;
  std::string finishedStatus;  // from its stage_finished event
  std::string finishedMessage;
  Json summary;
};

}  // namespace

std::vector<int> nodeRanks(int stages, int nnodes, int node) {
  std::vector<int> ranks;
  for (int r = 0; r < stages; ++r)
    if (static_cast<int64_t>(r) * nnodes / stages == node) ranks.push_back(r);
  return ranks;
}

namespace {

// A remote node's launcher, seen from node 0.
struct RemoteNode {
  int fd = -1;
  std::string buf;
  int node = -1;  // set once its hello is authenticated
  bool finished = false;
  std::string challenge, peer;
  std::optional<NodeLinkSession> session;
};

// What every node must agree on: the experiment without its name, notes and tags (notes list the
// --set overrides in the order given; neither changes the training), as a 64-bit FNV-1a hash,
// which is the same on every build (std::hash need not be).
std::string configDigest(const Experiment& e) {
  Json j = experimentToJson(e);
  for (const char* key : {"name", "notes", "tags"}) j.erase(key);
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : j.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return std::to_string(h);
}

}  // namespace

RunOutcome launchWorkers(const LaunchRequest& req, EventSink& sink, const std::atomic<bool>* stop) {
  const double launchedAt = monotonicSeconds();
  const Experiment& e = req.experiment;
  const int P = e.pipeline.stages;
  const bool multi = req.nnodes > 1;
  std::vector<int> ranks = req.localRanks;
  if (ranks.empty()) ranks = nodeRanks(P, std::max(1, req.nnodes), req.nodeRank);
  if (multi && req.masterPort <= 0) throw ConfigError("--master-port", "a multi-node run needs the same --master-port on every node");
  // The TCPStore port (multi-node runs only; one node meets through a file store, see below).
  const int port = req.masterPort;
  // Node 0 receives the other nodes' events; the others send theirs to it.
  if (multi && (port < 1 || port > 65534))
    throw ConfigError("--master-port", "must be in 1..65534 for a multi-node run (node 0 also listens on the port after it), found " +
                                           std::to_string(port));
  int listenFd = -1, upFd = -1;
  std::vector<RemoteNode> remotes;
  std::string lastRefusal;  // node 0: the last connection refused (a node with another secret, a forger)
  const RunSecret secret = multi ? loadRunSecret(req.secretFile) : RunSecret{};
  std::optional<NodeLinkSession> upSession;
  std::string upBuf;
  if (multi && req.nodeRank == 0) listenFd = listenTcp(req.masterAddr, port + 1);
  if (multi && req.nodeRank > 0) {
    upFd = connectTcp(req.masterAddr, port + 1, e.execution.timeout_s);
    const auto line = awaitLine(upFd, upBuf, e.execution.timeout_s);
    const Json challenge = line ? Json::parse(*line, nullptr, false) : Json();
    if (!challenge.is_object() || challenge.value("type", "") != node_msg::kChallenge) {
      ::close(upFd);
      throw EngineError("--master-addr", "the launcher at " + req.masterAddr + ":" + std::to_string(port + 1) +
                                             " did not send a node challenge within " +
                                             std::to_string(static_cast<int>(e.execution.timeout_s)) + " s (is it node 0 of this run?)");
    }
    const std::string nonce = randomNonce();
    upSession.emplace(secret.bytes, challenge.value("nonce", std::string()), nonce, /*node0=*/false);
    Json hello{{"type", node_msg::kHello}, {"node", req.nodeRank}, {"nnodes", req.nnodes}, {"config", configDigest(e)},
               {"ranks", ranks}, {"nonce", nonce}};
    sendAll(upFd, upSession->seal(hello));
  }
  // Node 0 -> the other nodes: "stop" (a stop asked on node 0) and "abort" (node 0 refuses the
  // run or it failed there), so that every node ends the same way and says why.
  bool remoteStop = false;  // another node asked for the stop
  auto tellRemotes = [&](const Json& msg) {
    for (auto& r : remotes)
      if (r.fd >= 0 && r.node >= 0 && r.session) sendAll(r.fd, r.session->seal(msg));
  };
  bool toldRemotes = false;
  bool upLost = false;
  auto sendUp = [&](const Json& msg) {
    if (upFd >= 0 && !upLost && !sendAll(upFd, upSession->seal(msg))) upLost = true;
  };
  auto forward = [&](const Json& ev) {
    sink.emit(ev);
    sendUp(ev);
  };
  // Refused lines are said on this launcher's terminal only: nothing from them reaches the run.
  auto refuse = [&](RemoteNode& r, const std::string& why) {
    lastRefusal = "a connection from " + r.peer + " was refused: " + why;
    std::fprintf(stderr, "pipemare: node 0 refused a connection from %s to its node port: %s\n", r.peer.c_str(), why.c_str());
    sendAll(r.fd, Json{{"type", node_msg::kRefused}, {"message", "node 0 refused this node: " + why}}.dump() + "\n");
    ::close(r.fd);
    r.fd = -1;
  };
  const double remoteGraceS = e.execution.timeout_s + 15;
  double localEndedAt = -1;

  // The experiment travels as a private temporary file (never on a command line).
  char tmpl[] = "/tmp/pipemare-exp-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw EngineError("launcher", "cannot create a temporary experiment file");
  const std::string cfgPath = tmpl;
  // Single node: the ranks meet through a c10d FileStore in a private (0700) directory, so no
  // socket listens beyond Gloo's own on loopback. Multi-node runs use the TCPStore on node 0.
  std::string storeDir;
  if (!multi) {
    char dtmpl[] = "/tmp/pipemare-store-XXXXXX";
    if (!mkdtemp(dtmpl)) {
      std::filesystem::remove(cfgPath);
      throw EngineError("launcher", "cannot create a private directory for the ranks' store");
    }
    storeDir = dtmpl;
  }
  {
    std::string text = experimentToJson(e).dump();
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      ::close(fd);
      throw EngineError("launcher", "cannot write " + cfgPath);
    }
    ::close(fd);
  }

  // The workers leave resume hints to this launcher (workers started by hand say how to restart),
  // and end themselves when it dies: they compare their parent with this pid and watch their
  // stdin, a pipe only this launcher writes to (see workerMain).
  const std::vector<std::string> workerEnv{std::string(kLauncherEnv) + "=" + std::to_string(getpid()),
                                           std::string(kLifelineEnv) + "=0"};
  std::vector<Worker> workers;
  auto closeLifelines = [&] {
    for (auto& w : workers)
      if (w.lifelineFd >= 0) {
        ::close(w.lifelineFd);
        w.lifelineFd = -1;
      }
  };
  auto terminateAll = [&](int sig) {
    for (auto& w : workers)
      if (!w.exited && w.pid > 0) ::kill(w.pid, sig);
  };
  try {
    for (int r : ranks) {
      Worker w;
      w.rank = r;
      std::vector<std::string> args{req.workerBinary, "worker", "--config", cfgPath, "--rank", std::to_string(r),
                                    "--world-size", std::to_string(P), "--master-addr", req.masterAddr};
      if (storeDir.empty()) {
        args.push_back("--master-port");
        args.push_back(std::to_string(port));
      } else {
        args.push_back("--store-file");
        args.push_back(storeDir + "/store");
      }
      if (!req.saveStateDir.empty()) {
        args.push_back("--save-state");
        args.push_back(req.saveStateDir);
      }
      if (!req.checkpointDir.empty()) {
        args.push_back("--checkpoint-dir");
        args.push_back(req.checkpointDir);
      }
      if (req.resumeStep > 0) {
        args.push_back("--resume-step");
        args.push_back(std::to_string(req.resumeStep));
      }
      w.pid = spawnProcess(args, w.outFd, w.errFd, "launcher", &w.lifelineFd, workerEnv);
      workers.push_back(std::move(w));
    }
  } catch (...) {
    terminateAll(SIGKILL);
    for (auto& w : workers) waitpid(w.pid, nullptr, 0);
    closeLifelines();
    std::filesystem::remove(cfgPath);
    if (!storeDir.empty()) std::filesystem::remove_all(storeDir);
    throw;
  }
  {
    Json log = makeEvent(ev::kLog);
    log["level"] = "info";
    std::string pids;
    for (const auto& w : workers) pids += (pids.empty() ? "" : ", ") + std::to_string(w.pid);
    log["message"] = "started " + std::to_string(workers.size()) + " worker(s) (pids " + pids + "), store at " +
                     (storeDir.empty() ? req.masterAddr + ":" + std::to_string(port) : storeDir + "/store");
    forward(log);
  }

  RunOutcome out{"finished", "", Json::object()};
  std::string failure;
  double killDeadline = -1;  // when set: SIGKILL whatever is left at this time
  double termDeadline = -1;  // graceful stop: SIGTERM whatever is left at this time
  bool stopping = false;
  std::map<int, Json> remoteSummaries;
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& w : workers) {
      if (w.outFd >= 0) fds.push_back({w.outFd, POLLIN, 0});
      if (w.errFd >= 0) fds.push_back({w.errFd, POLLIN, 0});
    }
    if (listenFd >= 0) fds.push_back({listenFd, POLLIN, 0});
    if (upFd >= 0 && !upLost) fds.push_back({upFd, POLLIN, 0});
    for (auto& r : remotes)
      if (r.fd >= 0) fds.push_back({r.fd, POLLIN, 0});
    // Node 0: the event streams of the other nodes.
    if (listenFd >= 0)
      for (int fd; (fd = acceptTcp(listenFd)) >= 0;) {
        RemoteNode r;
        r.fd = fd;
        r.challenge = randomNonce();
        r.peer = peerAddress(fd);
        sendAll(fd, Json{{"type", node_msg::kChallenge}, {"nonce", r.challenge}}.dump() + "\n");
        remotes.push_back(std::move(r));
      }
    for (auto& r : remotes) {
      if (r.fd < 0) continue;
      bool eof = false;
      for (const auto& line : drainLines(r.fd, r.buf, eof)) {
        if (r.fd < 0) break;  // refused
        Json ev;
        if (!r.session) {
          std::string why;
          r.session = acceptHello(secret.bytes, r.challenge, line, ev, why);
          if (!r.session) {
            refuse(r, why);
            break;
          }
        } else if (auto msg = r.session->open(line)) {
          ev = std::move(*msg);
        } else {
          std::fprintf(stderr, "pipemare: node 0 dropped a line from node %d (%s) that fails authentication\n", r.node, r.peer.c_str());
          continue;
        }
        const std::string type = ev.value("type", "");
        if (type == node_msg::kHello) {
          if (r.node >= 0) continue;  // one hello per connection
          const int node = ev.value("node", -1);
          const int theirNodes = ev.value("nnodes", -1);
          const bool known = std::any_of(remotes.begin(), remotes.end(), [&](const RemoteNode& o) { return &o != &r && o.node == node; });
          r.node = node;
          std::string refused;
          if (node < 1 || node >= req.nnodes)
            refused = "node " + std::to_string(node) + " is not one of nodes 1.." + std::to_string(req.nnodes - 1) + " (--node-rank)";
          else if (theirNodes != req.nnodes)
            refused = "node " + std::to_string(node) + " was started with --nnodes " + std::to_string(theirNodes) + ", node 0 with " +
                      std::to_string(req.nnodes);
          else if (known)
            refused = "node " + std::to_string(node) + " joined twice (two launchers with --node-rank " + std::to_string(node) + ")";
          else if (ev.value("config", std::string()) != configDigest(e))
            refused = "node " + std::to_string(node) + " runs a different experiment (its configuration differs from node 0's)";
          if (!refused.empty()) {
            if (failure.empty()) failure = refused;
            sendAll(r.fd, r.session->seal(Json{{"type", node_msg::kAbort}, {"message", "node 0 refused this node: " + refused}}));
          }
          Json log = makeEvent(ev::kLog);
          log["level"] = "info";
          log["message"] = "node " + std::to_string(node) + " joined with ranks " + ev.value("ranks", Json::array()).dump();
          sink.emit(log);
        } else if (r.node < 0) {
          continue;
        } else if (type == node_msg::kStopping) {
          if (failure.empty() && !stopping && out.status == "finished") {
            remoteStop = true;
            stopping = true;
            out.status = "stopped";
            out.message = "stopped by request on node " + std::to_string(r.node);
          }
        } else if (type == node_msg::kFinished) {
          r.finished = true;
          const std::string st = ev.value("status", std::string());
          if (st == "failed" && failure.empty() && !stopping) failure = "node " + std::to_string(r.node) + ": " + ev.value("message", std::string());
          if (st == "diverged" && out.status == "finished") {
            out.status = "diverged";
            out.message = ev.value("message", std::string());
          }
        } else {
          if (type == "stage_finished" && ev.contains("summary")) remoteSummaries[ev.value("rank", -1)] = ev["summary"];
          sink.emit(ev);
        }
      }
      if (eof && r.fd >= 0) {
        ::close(r.fd);
        r.fd = -1;
        // A connection that never said hello (a port scan, a health probe) is not a node.
        if (r.node >= 0 && !r.finished && failure.empty() && !stopping)
          failure = "node " + std::to_string(r.node) + "'s launcher disconnected before its ranks finished";
      }
    }
    remotes.erase(std::remove_if(remotes.begin(), remotes.end(), [](const RemoteNode& r) { return r.fd < 0 && r.node < 0; }),
                  remotes.end());
    // The other nodes: what node 0 says.
    if (upFd >= 0 && !upLost) {
      bool eof = false;
      for (const auto& line : drainLines(upFd, upBuf, eof)) {
        auto sealed = upSession->open(line);
        if (!sealed) {
          // Node 0 refuses a hello in plain text (it has no session to seal with); the connection
          // then closes, which would end the run anyway.
          const Json plain = Json::parse(line, nullptr, false);
          if (plain.is_object() && plain.value("type", "") == node_msg::kRefused && failure.empty())
            failure = plain.value("message", std::string("node 0 refused this node"));
          else
            std::fprintf(stderr, "pipemare: dropped a line from node 0 that fails authentication\n");
          continue;
        }
        const Json& msg = *sealed;
        const std::string type = msg.value("type", "");
        if (type == node_msg::kAbort && failure.empty()) failure = msg.value("message", std::string("node 0 ended the run"));
        if (type == node_msg::kStop && failure.empty() && !stopping && out.status == "finished") {
          remoteStop = true;
          stopping = true;
          out.status = "stopped";
          out.message = "stopped by request on node 0";
        }
      }
      if (eof && failure.empty() && !stopping) upLost = true;
    }
    if (upLost && failure.empty() && !stopping) failure = "lost the connection to the node-rank 0 launcher at " + req.masterAddr;
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    else ::usleep(50 * 1000);

    for (auto& w : workers) {
      bool eof = false;
      if (w.outFd >= 0) {
        for (const auto& line : drainLines(w.outFd, w.outBuf, eof)) {
          if (line.empty()) continue;
          Json ev;
          try {
            ev = parseEventLine(line);
          } catch (const std::exception&) {
            Json log = makeEvent(ev::kLog);
            log["level"] = "info";
            log["message"] = "rank " + std::to_string(w.rank) + ": " + line.substr(0, 500);
            forward(log);
            continue;
          }
          if (ev.value("type", "") == "stage_finished") {
            w.finishedStatus = ev.value("status", std::string());
            w.finishedMessage = ev.value("message", std::string());
            if (ev.contains("summary")) w.summary = ev["summary"];
          }
          forward(ev);
        }
        if (eof) {
          ::close(w.outFd);
          w.outFd = -1;
        }
      }
      eof = false;
      if (w.errFd >= 0) {
        for (const auto& line : drainLines(w.errFd, w.errBuf, eof)) {
          if (line.empty()) continue;
          w.errTail = line.substr(0, 500);
          Json log = makeEvent(ev::kLog);
          log["level"] = "info";
          log["message"] = "rank " + std::to_string(w.rank) + " stderr: " + line.substr(0, 500);
          forward(log);
        }
        if (eof) {
          ::close(w.errFd);
          w.errFd = -1;
        }
      }
      if (!w.exited) {
        int st = 0;
        pid_t r = waitpid(w.pid, &st, WNOHANG);
        if (r == w.pid) {
          w.exited = true;
          w.status = st;
          // A stopped stage exits 130 (a worker's own stop; this launcher may not have asked).
          const bool clean = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || (WEXITSTATUS(st) == 130 && w.finishedStatus == "stopped"));
          if (w.finishedStatus == "diverged" && out.status == "finished") {
            out.status = "diverged";
            out.message = w.finishedMessage;
          }
          if (clean && w.finishedStatus == "stopped" && out.status == "finished" && failure.empty()) {
            stopping = true;  // the stages halted together (a Ctrl-C that reached them directly)
            out.status = "stopped";
            out.message = w.finishedMessage;
          }
          // A worker ended by the user's Ctrl-C (it reached the whole process group, before the
          // worker could stop in order) is part of the stop, not a failure.
          const bool stopAsked = stop && stop->load();
          if (!clean && failure.empty() && !stopping && !stopAsked && out.status != "diverged") {
            std::string how = WIFSIGNALED(st) ? "was killed by " + signalName(WTERMSIG(st))
                                              : "exited with code " + std::to_string(WEXITSTATUS(st));
            failure = "stage " + std::to_string(w.rank) + " (rank " + std::to_string(w.rank) + ", pid " +
                      std::to_string(w.pid) + ") " + how;
            if (!w.finishedMessage.empty()) failure += ": " + w.finishedMessage;
            else if (!w.errTail.empty()) failure += ": " + w.errTail;
          }
        }
      }
    }

    bool allExited = true;
    for (const auto& w : workers) allExited = allExited && w.exited;
    const bool allClosed = std::all_of(workers.begin(), workers.end(), [](const Worker& w) { return w.outFd < 0 && w.errFd < 0; });
    // Only launchers that said hello count: a silent connection left open is not a node to wait for.
    const bool remotesDone =
        listenFd < 0 || (std::count_if(remotes.begin(), remotes.end(), [](const RemoteNode& r) { return r.node >= 0; }) >= req.nnodes - 1 &&
                         std::all_of(remotes.begin(), remotes.end(), [](const RemoteNode& r) { return r.fd < 0 || r.node < 0; }));
    if (allExited && allClosed && localEndedAt < 0) localEndedAt = monotonicSeconds();
    if (allExited && allClosed && !remotesDone && monotonicSeconds() - localEndedAt > remoteGraceS) {
      if (failure.empty() && out.status == "finished" && !stopping)
        failure = "the other nodes did not report within " + std::to_string(static_cast<int>(remoteGraceS)) + " s";
      break;
    }
    if (allExited && allClosed && remotesDone) break;
    // A failed run does not wait for nodes that never joined: they have nothing to report.
    if (allExited && allClosed && !failure.empty() &&
        std::all_of(remotes.begin(), remotes.end(), [](const RemoteNode& r) { return r.fd < 0 || r.node < 0; }))
      break;
    if (allExited) {
      // Drain what is left without blocking.
      continue;
    }
    const bool endOthers = !failure.empty() || out.status == "diverged" || (stop && stop->load()) || remoteStop;
    if (endOthers && !toldRemotes) {  // every node ends the same way
      toldRemotes = true;
      const bool stopNow = (stop && stop->load() && failure.empty() && out.status == "finished") || remoteStop;
      if (listenFd >= 0)
        tellRemotes(stopNow ? Json{{"type", node_msg::kStop}}
                            : Json{{"type", node_msg::kAbort}, {"message", "node 0: " + (failure.empty() ? out.message : failure)}});
      if (stopNow && !remoteStop) sendUp(Json{{"type", node_msg::kStopping}, {"node", req.nodeRank}});
    }
    if (endOthers && killDeadline < 0) {
      const bool lastHere = std::any_of(workers.begin(), workers.end(), [&](const Worker& w) { return w.rank == P - 1; });
      if (((stop && stop->load()) || remoteStop) && failure.empty() && out.status == "finished") {
        stopping = true;
        out.status = "stopped";
        out.message = "stopped by request";
      }
      // Every node signals its own workers: the last stage, wherever it runs, names the minibatch.
      if (stopping && (lastHere || multi)) {
        // A graceful stop: the stages finish the minibatch in progress together (and checkpoint
        // there when they have a checkpoint directory).
        terminateAll(SIGUSR1);
        termDeadline = monotonicSeconds() + e.execution.timeout_s + 10;
        killDeadline = termDeadline + req.killGraceS;
      } else {
        terminateAll(SIGTERM);
        killDeadline = monotonicSeconds() + req.killGraceS;
      }
    }
    if (termDeadline > 0 && monotonicSeconds() > termDeadline) {
      terminateAll(SIGTERM);
      termDeadline = -1;
    }
    if (killDeadline > 0 && monotonicSeconds() > killDeadline) {
      terminateAll(SIGKILL);
      killDeadline = monotonicSeconds() + 3600;
    }
  }
  closeLifelines();
  std::filesystem::remove(cfgPath);
  if (!storeDir.empty()) std::filesystem::remove_all(storeDir);
  if (listenFd >= 0) ::close(listenFd);
  for (auto& r : remotes)
    if (r.fd >= 0) ::close(r.fd);

  // A Ctrl-C that reached the workers before their own handlers were set (still loading) ends
  // them at once; if they were all gone before this loop acted on the stop, nothing said so and
  // the run read as finished. A stage that did not report finishing was stopped.
  if (stop && stop->load() && failure.empty() && out.status == "finished" && !stopping &&
      std::any_of(workers.begin(), workers.end(), [](const Worker& w) { return w.finishedStatus != "finished"; })) {
    stopping = true;
    out.status = "stopped";
    out.message = "stopped by request during start-up (the stages had not begun training: no checkpoint)";
  }
  if (!failure.empty() && out.status == "finished") {
    out.status = "failed";
    out.message = failure;
    // Node 0 knows which launchers never arrived: the workers' own message (a Gloo timeout)
    // cannot say it.
    if (multi && req.nodeRank == 0) {
      std::vector<std::string> missing;
      for (int n = 1; n < req.nnodes; ++n)
        if (std::none_of(remotes.begin(), remotes.end(), [&](const RemoteNode& r) { return r.node == n; })) missing.push_back(std::to_string(n));
      if (!missing.empty())
        out.message += " (node" + std::string(missing.size() > 1 ? "s " : " ") + join(missing, ", ") +
                       " never joined: is its launcher running, with the same --master-addr and --master-port?" +
                       (lastRefusal.empty() ? std::string() : " " + lastRefusal) + ")";
    }
  }
  if (stopping)
    for (const auto& w : workers)
      if (w.finishedStatus == "stopped" && w.finishedMessage.find("checkpoint") != std::string::npos) out.message = w.finishedMessage;
  if (upFd >= 0) {
    sendUp(Json{{"type", node_msg::kFinished}, {"node", req.nodeRank}, {"status", out.status}, {"message", out.message}});
    ::close(upFd);
  }
  // Summary: the last stage's final metrics, totals and maxima over the stages, and every stage's.
  Json stages = Json::array();
  bool lastStageReported = false;
  for (const auto& w : workers)
    if (w.summary.is_object()) {
      stages.push_back(w.summary);
      lastStageReported = lastStageReported || w.rank == P - 1;
    }
  for (const auto& [rank, summary] : remoteSummaries)
    if (summary.is_object()) {
      stages.push_back(summary);
      lastStageReported = lastStageReported || rank == P - 1;
    }
  out.summary = combineStageSummaries(stages);
  if (!lastStageReported) {  // no final metrics to report: keep only what the stages measured
    for (const char* key : {"final_loss", "final_eval_loss", "final_accuracy", "best_accuracy", "samples"}) out.summary.erase(key);
  }
  // The whole run's time, as single mode counts it (start-up and evaluation included): the last
  // stage's own wall time left out the workers' start-up.
  const double wall = monotonicSeconds() - launchedAt;
  out.summary["wall_s"] = wall;
  if (out.summary.contains("samples") && wall > 0)
    out.summary["samples_per_s"] =
        static_cast<double>(out.summary.value("samples", int64_t{0}) - out.summary.value("resumed_samples", int64_t{0})) / wall;
  return out;
}

}  // namespace pm
