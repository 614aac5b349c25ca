#include "core/runner/launcher.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>

#include "core/events/node_link.h"
#include "core/engine/stage_plan.h"
#include "core/events/run_status.h"
#include "core/runner/event_relay.h"
#include "core/runner/node_peers.h"
#include "core/runner/run_verdict.h"
#include "core/runner/worker_processes.h"
#include "core/util/errors.h"
#include "core/util/file_digest.h"
#include "core/util/system_info.h"

namespace pm {

std::vector<int> nodeRanks(int stages, int nnodes, int node) {
  std::vector<int> ranks;
  for (int r = 0; r < stages; ++r)
    if (static_cast<int64_t>(r) * nnodes / stages == node) ranks.push_back(r);
  return ranks;
}

namespace {

// The TCPStore port (multi-node runs only; one node meets through a file store): node 0 also
// listens on the port after it for the other nodes' events.
void checkNodePort(const LaunchRequest& req) {
  if (req.nnodes <= 1) return;
  if (req.masterPort <= 0) throw ConfigError("--master-port", "a multi-node run needs the same --master-port on every node");
  if (req.masterPort > 65534)
    throw ConfigError("--master-port", "must be in 1..65534 for a multi-node run (node 0 also listens on the port after it), found " +
                                           std::to_string(req.masterPort));
}

// Watches the workers and the other nodes until the run has ended, and ends the workers when it
// must: all at once on a failure, together after one common minibatch on a stop.
class RunWatch {
 public:
  RunWatch(const LaunchRequest& req, WorkerProcesses& workers, RemoteNodes* remotes, UpLink* up, EventSink& sink,
           EventRelay& relay, RunVerdict& verdict, const std::atomic<bool>* stop)
      : req_(req), workers_(workers), remotes_(remotes), up_(up), sink_(sink), relay_(relay), v_(verdict), stop_(stop),
        remoteGraceS_(req.experiment.execution.timeout_s + 15) {}

  void run() {
    while (step()) {
    }
  }

 private:
  bool stopAsked() const { return stop_ && stop_->load(); }
  // One pass: reads what there is, waits up to 100 ms; false once the run has ended.
  bool step();
  bool ended();
  void endOthers();

  const LaunchRequest& req_;
  WorkerProcesses& workers_;
  RemoteNodes* remotes_;  // node 0 of a multi-node run
  UpLink* up_;            // node k > 0
  EventSink& sink_;
  EventRelay& relay_;
  RunVerdict& v_;
  const std::atomic<bool>* stop_;
  const double remoteGraceS_;  // how long node 0 waits for the other nodes once its own workers ended
  double localEndedAt_ = -1;
  bool toldRemotes_ = false;
  double killDeadline_ = -1;  // when set: SIGKILL whatever is left at this time
  double termDeadline_ = -1;  // graceful stop: SIGTERM whatever is left at this time
};

bool RunWatch::step() {
  std::vector<pollfd> fds;
  workers_.addPollFds(fds);
  if (remotes_) remotes_->addPollFds(fds);
  if (up_) up_->addPollFd(fds);
  // Node 0: the event streams of the other nodes. The other nodes: what node 0 says.
  if (remotes_) remotes_->service(v_, sink_);
  if (up_) up_->service(v_);
  if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
  else ::usleep(50 * 1000);

  workers_.service(relay_);
  if (ended()) return false;
  if (workers_.allExited()) return true;  // drain what is left without blocking
  endOthers();
  // A graceful stop needs every stage to reach the common minibatch. A worker that ended without
  // halting there (the Ctrl-C reached it directly, or killed it during start-up) leaves the others
  // waiting for it until their timeout: they are ended now instead.
  if (termDeadline_ > 0 && workers_.anyEndedWithoutHalt()) {
    workers_.signalAll(SIGTERM);
    termDeadline_ = -1;
  }
  if (termDeadline_ > 0 && monotonicSeconds() > termDeadline_) {
    workers_.signalAll(SIGTERM);
    termDeadline_ = -1;
  }
  if (killDeadline_ > 0 && monotonicSeconds() > killDeadline_) {
    workers_.signalAll(SIGKILL);
    killDeadline_ = monotonicSeconds() + 3600;
  }
  return true;
}

// This node's workers have all ended and closed their output, and the other nodes have reported
// (or node 0 waited long enough for them, or the run failed and no node is left to hear from).
bool RunWatch::ended() {
  if (!workers_.allExited() || !workers_.allClosed()) return false;
  const bool remotesDone = !remotes_ || remotes_->done();
  if (localEndedAt_ < 0) localEndedAt_ = monotonicSeconds();
  if (!remotesDone && monotonicSeconds() - localEndedAt_ > remoteGraceS_) {
    if (v_.failure.empty() && v_.status == RunStatus::Finished && !v_.stopping)
      v_.failure = "the other nodes did not report within " + std::to_string(static_cast<int>(remoteGraceS_)) + " s";
    return true;
  }
  if (remotesDone) return true;
  // A failed run does not wait for nodes that never joined: they have nothing to report.
  return !v_.failure.empty() && remotes_->noneConnected();
}

// A failure, a divergence or a stop ends every worker, on every node.
void RunWatch::endOthers() {
  const bool endThem = !v_.failure.empty() || v_.status == RunStatus::Diverged || stopAsked() || v_.remoteStop;
  if (!endThem) return;
  if (!toldRemotes_) {  // every node ends the same way
    toldRemotes_ = true;
    const bool stopNow = (stopAsked() && v_.failure.empty() && v_.status == RunStatus::Finished) || v_.remoteStop;
    // Node 0 -> the other nodes: "stop" (a stop asked on node 0 or relayed from another node) and
    // "abort" (node 0 refuses the run or it failed there), so that every node says why it ended.
    if (remotes_)
      remotes_->tell(stopNow ? Json{{"type", node_msg::kStop}}
                             : Json{{"type", node_msg::kAbort}, {"message", "node 0: " + (v_.failure.empty() ? v_.message : v_.failure)}});
    if (stopNow && !v_.remoteStop && up_) up_->sayStopping();
  }
  if (killDeadline_ >= 0) return;
  if ((stopAsked() || v_.remoteStop) && v_.failure.empty() && v_.status == RunStatus::Finished) {
    v_.stopping = true;
    v_.status = RunStatus::Stopped;
    v_.message = "stopped by request";
  }
  // Every node signals its own workers: the last stage, wherever it runs, names the minibatch.
  const ScheduleParams place = stagePlacement(req_.experiment);
  if (v_.stopping && (workers_.runsRank(chunkPlace(place, place.stages - 1).rank) || req_.nnodes > 1)) {
    // A graceful stop: the stages finish the minibatch in progress together (and checkpoint
    // there when they have a checkpoint directory).
    workers_.signalAll(SIGUSR1);
    termDeadline_ = monotonicSeconds() + req_.experiment.execution.timeout_s + 10;
    killDeadline_ = termDeadline_ + req_.killGraceS;
  } else {
    workers_.signalAll(SIGTERM);
    killDeadline_ = monotonicSeconds() + req_.killGraceS;
  }
}

WorkerCommand workerCommand(const LaunchRequest& req, const WorkerFiles& files, const std::string& modelSha256) {
  WorkerCommand cmd;
  cmd.binary = req.workerBinary;
  cmd.configPath = files.configPath();
  cmd.worldSize = req.experiment.pipeline.stages;
  cmd.masterAddr = req.masterAddr;
  cmd.masterPort = req.masterPort;
  cmd.storeDir = files.storeDir();
  cmd.saveStateDir = req.saveStateDir;
  cmd.checkpointDir = req.checkpointDir;
  cmd.resumeStep = req.resumeStep;
  cmd.modelSha256 = modelSha256;
  return cmd;
}

}  // namespace

RunOutcome launchWorkers(const LaunchRequest& req, EventSink& sink, const std::atomic<bool>* stop) {
  const double launchedAt = monotonicSeconds();
  const Experiment& e = req.experiment;
  const bool multi = req.nnodes > 1;
  std::vector<int> ranks = req.localRanks;
  if (ranks.empty()) ranks = nodeRanks(e.pipeline.stages, std::max(1, req.nnodes), req.nodeRank);
  checkNodePort(req);
  // Node 0 receives the other nodes' events; the others send theirs to it.
  const RunSecret secret = multi ? loadRunSecret(req.secretFile) : RunSecret{};
  std::optional<RemoteNodes> remotes;
  std::optional<UpLink> up;
  // The model file as this node reads it: its workers load it and check it against this digest.
  const std::string modelSha256 =
      !req.modelSha256.empty() ? req.modelSha256 : e.model.fromFile() ? digestFile(e.model.path).sha256 : std::string();
  if (multi && req.nodeRank == 0)
    remotes.emplace(req.masterAddr, req.masterPort + 1, req.nnodes, configDigest(e), secret.bytes, modelSha256);
  if (multi && req.nodeRank > 0)
    up.emplace(req.masterAddr, req.masterPort + 1, e.execution.timeout_s, secret.bytes,
               NodeHello{req.nodeRank, req.nnodes, configDigest(e), ranks, modelSha256});

  WorkerFiles files(e, /*fileStore=*/!multi);
  WorkerProcesses workers;
  workers.start(workerCommand(req, files, modelSha256), ranks);
  RunVerdict verdict;
  EventRelay relay(sink, up ? &*up : nullptr, verdict, stop);
  relay.log("started " + std::to_string(workers.workers().size()) + " worker(s) (pids " + workers.pidList() + "), store at " +
            (files.storeDir().empty() ? req.masterAddr + ":" + std::to_string(req.masterPort) : files.storeDir() + "/store"));

  RunWatch watch(req, workers, remotes ? &*remotes : nullptr, up ? &*up : nullptr, sink, relay, verdict, stop);
  watch.run();
  workers.closeLifelines();
  files.remove();
  if (remotes) remotes->close();

  RunOutcome out = settleOutcome(verdict, workers, remotes ? &*remotes : nullptr, stop && stop->load());
  if (up) up->finish(out.status, out.message);
  const std::map<int, Json> noRemoteSummaries;
  out.summary = runSummary(workers, remotes ? remotes->stageSummaries() : noRemoteSummaries, modelStages(e),
                           monotonicSeconds() - launchedAt);
  return out;
}

}  // namespace pm
