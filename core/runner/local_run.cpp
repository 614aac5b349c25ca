#include "core/runner/local_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/engine/pipeline_engine.h"
#include "core/engine/stage_worker.h"
#include "core/runner/launcher.h"
#include "core/runner/store_recorder.h"
#include "core/util/errors.h"
#include "core/util/process.h"

namespace pm {

namespace {

// step -> directory, for every step directory holding all stages' files.
std::map<int64_t, std::filesystem::path> completeCheckpoints(const std::string& root, int stages) {
  std::map<int64_t, std::filesystem::path> out;
  std::error_code ec;
  if (root.empty() || !std::filesystem::is_directory(root, ec)) return out;
  for (const auto& d : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (name.rfind("step-", 0) != 0) continue;
    char* end = nullptr;
    const long long step = std::strtoll(name.c_str() + 5, &end, 10);
    if (step <= 0 || *end) continue;
    bool all = std::filesystem::exists(d.path() / "partition.json", ec);
    for (int s = 0; s < stages && all; ++s)
      all = std::filesystem::exists(StageWorker::checkpointFile(root, step, s), ec);
    if (all) out[step] = d.path();
  }
  return out;
}

void pruneCheckpoints(const std::string& root, int stages, bool all) {
  std::error_code ec;
  if (root.empty()) return;
  if (all) {
    std::filesystem::remove_all(root, ec);
    return;
  }
  const auto complete = completeCheckpoints(root, stages);
  const int64_t keep = complete.empty() ? 0 : complete.rbegin()->first;
  for (const auto& d : std::filesystem::directory_iterator(root, ec))
    if (d.path().filename().string().rfind("step-", 0) == 0 && d.path().filename().string() != "step-" + std::to_string(keep))
      std::filesystem::remove_all(d.path(), ec);  // owner.json stays
}

}  // namespace

int64_t resumableStep(const std::string& storePath, const RunRecord& run, int stages) {
  const std::string root = checkpointRoot(storePath, run.id);
  return ownsCheckpointRoot(root, run) ? latestCompleteCheckpoint(root, stages) : 0;
}

int64_t latestCompleteCheckpoint(const std::string& root, int stages) {
  const auto c = completeCheckpoints(root, stages);
  return c.empty() ? 0 : c.rbegin()->first;
}

void checkResumable(const RunRecord& r) {
  if (r.status != "stopped" && r.status != "failed" && r.status != "interrupted")
    throw ConfigError("--resume " + std::to_string(r.id),
                      "the run is " + r.status + "; only stopped, failed or interrupted runs can be resumed");
}

Experiment storedExperiment(const RunRecord& r) {
  const std::string where = "run " + std::to_string(r.id) + " (stored configuration)";
  Json j = Json::parse(r.config_json, nullptr, false);
  if (j.is_discarded()) throw StoreError(where, "is not valid JSON");
  return experimentFromJson(j, where);
}

namespace {

void checkMultiNode(const Experiment& e, int nnodes) {
  if (nnodes <= 1) return;
  if (e.execution.mode != "real") throw ConfigError("execution.mode", "a multi-node run (--nnodes " + std::to_string(nnodes) + ") needs \"real\"");
  if (nnodes > e.pipeline.stages)
    throw ConfigError("--nnodes", std::to_string(nnodes) + " nodes for " + std::to_string(e.pipeline.stages) + " stages: at most one node per stage");
  if (e.training.checkpoint_every > 0)
    throw ConfigError("training.checkpoint_every", "multi-node runs write no checkpoints (each node would hold only its own "
                                                   "stages'); set it to 0, or run on one node");
  if (e.pipeline.partition.method == "time")
    throw ConfigError("pipeline.partition.method", "\"time\" is measured on each node and may differ between them; use \"parameters\" or \"explicit\" for a multi-node run");
}

Experiment withExplicitPartition(Experiment e, EventSink& sink) {
  Partition part = resolvePartition(e);
  Json log = makeEvent(ev::kLog);
  log["level"] = "info";
  log["message"] = "partition (" + e.pipeline.partition.method + "): " + part.describe();
  sink.emit(log);
  e.pipeline.partition.method = "explicit";
  e.pipeline.partition.boundaries.assign(part.begin.begin() + 1, part.begin.end());
  return e;
}

}  // namespace

RunOutcome runRemoteShare(const Experiment& e, int nnodes, int nodeRank, const std::string& masterAddr, int masterPort,
                          EventSink& sink, const std::atomic<bool>* stop, const std::string& saveStateDir,
                          const std::string& secretFile) {
  checkMultiNode(e, nnodes);
  if (nodeRank < 1 || nodeRank >= nnodes)
    throw ConfigError("--node-rank", "must be in 1.." + std::to_string(nnodes - 1) + " here (node 0 records the run), found " + std::to_string(nodeRank));
  LaunchRequest lr;
  lr.experiment = withExplicitPartition(e, sink);
  lr.workerBinary = selfExecutable();
  lr.nnodes = nnodes;
  lr.nodeRank = nodeRank;
  lr.masterAddr = masterAddr;
  lr.masterPort = masterPort;
  lr.saveStateDir = saveStateDir;
  lr.secretFile = secretFile;
  return launchWorkers(lr, sink, stop);
}

LocalRunResult runLocally(RunStore& store, const LocalRunRequest& req, const std::atomic<bool>* stop) {
  Experiment e = req.experiment;
  LocalRunResult result;
  int64_t resumeStep = 0;
  std::string root;
  checkMultiNode(e, req.nnodes);
  if (req.resumeRun > 0 && req.nnodes > 1)
    throw ConfigError("--resume", "continues single-node runs only: multi-node runs write no checkpoints");
  if (req.resumeRun > 0) {
    const std::string where = "--resume " + std::to_string(req.resumeRun);
    auto rec = store.getRun(req.resumeRun);
    if (!rec) throw StoreError(store.path(), "no run with id " + std::to_string(req.resumeRun), true);
    checkResumable(*rec);
    e = storedExperiment(*rec);
    root = checkpointRoot(store.path(), rec->id);
    if (!root.empty() && std::filesystem::exists(root) && !ownsCheckpointRoot(root, *rec))
      throw ConfigError(where, "the checkpoints in " + root + " are not this run's (they belong to another store or to an "
                                   "earlier run with this id); nothing to resume from");
    resumeStep = latestCompleteCheckpoint(root, e.pipeline.stages);
    if (resumeStep == 0)
      throw ConfigError(where, "the run has no complete checkpoint in " + (root.empty() ? std::string("(memory)") : root) +
                                   " (set training.checkpoint_every, or stop a single-mode run with Ctrl-C, which checkpoints)");
    std::ifstream pf(root + "/step-" + std::to_string(resumeStep) + "/partition.json");
    Json pj = Json::parse(pf, nullptr, false);
    if (pj.is_discarded() || !pj.contains("boundaries"))
      throw StoreError(root + "/step-" + std::to_string(resumeStep) + "/partition.json", "is missing or not valid JSON");
    e.pipeline.partition.method = "explicit";
    e.pipeline.partition.boundaries = pj["boundaries"].get<std::vector<int>>();
    result.runId = rec->id;
    store.truncateAfterStep(rec->id, resumeStep);
    store.markResumed(rec->id, static_cast<int64_t>(getpid()));
  } else {
    std::vector<std::string> tags = e.tags;
    for (const auto& t : req.extraTags)
      if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
    result.runId = store.createRun(req.runName.empty() ? e.name : req.runName, experimentToJson(e).dump(), tags, e.notes,
                                   req.sweepId);
    store.markRunning(result.runId, static_cast<int64_t>(getpid()));
    // Multi-node runs write no checkpoints: the other nodes' stages could not write them here.
    root = req.nnodes > 1 ? std::string() : checkpointRoot(store.path(), result.runId);
    claimCheckpointRoot(root, store.path(), *store.getRun(result.runId));
  }

  auto recorder = std::make_shared<StoreRecorder>(store, result.runId);
  FanoutSink sink;
  sink.add(recorder);
  for (const auto& s : req.extraSinks) sink.add(s);
  {
    Json created = makeEvent(ev::kLog);
    created["level"] = "info";
    created["message"] = resumeStep > 0 ? "run " + std::to_string(result.runId) + " resumed from its checkpoint after step " +
                                              std::to_string(resumeStep) + " (" + root + ")"
                                        : "run " + std::to_string(result.runId) + " created in " + store.path();
    created["run"] = result.runId;
    sink.emit(created);
  }

  try {
    EngineOptions opts;
    opts.saveStateDir = req.saveStateDir;
    opts.checkpointDir = root;
    opts.resumeStep = resumeStep;
    if (e.execution.mode == "real") {
      // The partition is decided once, here, and handed to every worker as explicit boundaries.
      e = withExplicitPartition(e, sink);
      LaunchRequest lr;
      lr.experiment = e;
      lr.workerBinary = req.workerBinary.empty() ? selfExecutable() : req.workerBinary;
      lr.saveStateDir = req.saveStateDir;
      lr.checkpointDir = root;
      lr.resumeStep = resumeStep;
      lr.nnodes = req.nnodes;
      lr.nodeRank = 0;
      lr.masterAddr = req.masterAddr;
      lr.masterPort = req.masterPort;
      lr.secretFile = req.secretFile;
      result.outcome = launchWorkers(lr, sink, stop);
    } else {
      result.outcome = runSingleProcess(e, sink, stop, opts);
    }
  } catch (const std::exception& ex) {
    result.outcome = RunOutcome{"failed", ex.what(), Json::object()};
    sink.emit(makeErrorEvent(ex));
  }
  result.outcome.message = withRunId(result.outcome.message, result.runId);
  Json fin = makeEvent(ev::kRunFinished);
  fin["run"] = result.runId;
  fin["status"] = result.outcome.status;
  fin["message"] = result.outcome.message;
  fin["summary"] = result.outcome.summary;
  sink.emit(fin);
  sink.flush();
  recorder->close();  // no background flush may touch the store from here on
  store.setStatus(result.runId, result.outcome.status, result.outcome.message);
  pruneCheckpoints(root, e.pipeline.stages, result.outcome.status == "finished" || result.outcome.status == "diverged");
  return result;
}

}  // namespace pm
