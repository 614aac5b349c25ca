#include "core/runner/local_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/engine/pipeline_engine.h"
#include "core/engine/stage_plan.h"
#include "core/engine/checkpoint_layout.h"
#include "core/events/metric_keys.h"
#include "core/runner/launcher.h"
#include "core/runner/store_recorder.h"
#include "core/util/errors.h"
#include "core/util/file_digest.h"
#include "core/util/process.h"
#include "core/util/system_info.h"

namespace pm {

int64_t resumableStep(const std::string& storePath, const RunRecord& run, int stages) {
  const std::string root = checkpointRoot(storePath, run.id);
  return ownsCheckpointRoot(root, run) ? latestCompleteCheckpoint(root, stages) : 0;
}

int64_t latestCompleteCheckpoint(const std::string& root, int stages) { return CheckpointLayout(root).latestComplete(stages); }

void checkResumable(const RunRecord& r) {
  if (!isResumable(r.status))
    throw ConfigError("--resume " + std::to_string(r.id),
                      std::string("the run is ") + toString(r.status) + "; only stopped, failed or interrupted runs can be resumed");
}

namespace {

void checkMultiNode(const Experiment& e, int nnodes) {
  if (nnodes <= 1) return;
  if (e.execution.mode != ExecutionMode::Real) throw ConfigError("execution.mode", "a multi-node run (--nnodes " + std::to_string(nnodes) + ") needs \"real\"");
  if (nnodes > e.pipeline.stages)
    throw ConfigError("--nnodes", std::to_string(nnodes) + " nodes for " + std::to_string(e.pipeline.stages) + " stages: at most one node per stage");
  if (e.training.checkpoint_every > 0)
    throw ConfigError("training.checkpoint_every", "multi-node runs write no checkpoints (each node would hold only its own "
                                                   "stages'); set it to 0, or run on one node");
  if (e.pipeline.partition.method == PartitionMethod::Time)
    throw ConfigError("pipeline.partition.method", "\"time\" is measured on each node and may differ between them; use \"parameters\" or \"explicit\" for a multi-node run");
}

// The message is for people; the partition travels as data in `partition` (as run_started's, each
// stage's [begin, end) units) and `partition_method`.
Experiment withExplicitPartition(Experiment e, EventSink& sink) {
  Partition part = resolvePartition(e);
  Json log = makeEvent(ev::kLog);
  log["level"] = "info";
  log["message"] = "partition (" + choiceName(e.pipeline.partition.method) + "): " + part.describe();
  Json stages = Json::array();
  for (int s = 0; s < part.stages(); ++s) {
    const size_t i = static_cast<size_t>(s);
    stages.push_back(Json{{"stage", s}, {"units", Json::array({part.begin[i], part.end[i]})}, {"rank", stageRank(e, s)}});
  }
  log["partition"] = stages;
  log["partition_method"] = choiceName(e.pipeline.partition.method);
  sink.emit(log);
  e.pipeline.partition.method = PartitionMethod::Explicit;
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
  std::string modelSha256;  // a TorchScript model: its file's, which every worker checks
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
    if (e.model.fromFile()) {  // the checkpoints hold this model's weights: the file must be the one it trained
      const FileDigest now = digestFile(e.model.path);
      if (!rec->model_file.sha256.empty() && now.sha256 != rec->model_file.sha256)
        throw ConfigError(where, "the model file " + e.model.path + " changed since the run trained it (SHA-256 " +
                                     rec->model_file.sha256.substr(0, 16) + "... then, " + now.sha256.substr(0, 16) +
                                     "... now); put the run's file back to resume it");
      modelSha256 = now.sha256;
    }
    resumeStep = latestCompleteCheckpoint(root, modelStages(e));
    if (resumeStep == 0)
      throw ConfigError(where, "the run has no complete checkpoint in " + (root.empty() ? std::string("(memory)") : root) +
                                   " (set training.checkpoint_every, or stop a single-mode run with Ctrl-C, which checkpoints)");
    e.pipeline.partition.boundaries = CheckpointLayout(root).readPartition(resumeStep);
    e.pipeline.partition.method = PartitionMethod::Explicit;
    result.runId = rec->id;
    // The pause this resume ends: from the last session's last sign of life to now.
    const double stoppedAt = store.lastActivity(rec->id);
    // Claimed before anything of the record changes: a second resume of the run is refused here,
    // naming the process that holds it, and leaves the first one's rows alone.
    if (!store.claimForResume(rec->id, static_cast<int64_t>(getpid()), resumeStep)) {
      const auto now = store.getRun(rec->id);
      const bool running = now && now->status == RunStatus::Running;
      throw ConfigError(where, "run " + std::to_string(rec->id) + " is " + (now ? toString(now->status) : "gone") +
                                   (running ? ": another `pipemare run --resume` (launcher process " +
                                                  std::to_string(now->launcher_pid) + " on " + now->host + ") holds it"
                                            : std::string()) +
                                   "; it was claimed first, so this resume starts nothing");
    }
    store.truncateAfterStep(rec->id, resumeStep);
    // Recorded as data (the pauses so far, at the step the new session continues from), so that
    // time axes, durations and time to target count training only.
    const double now = wallClockSeconds();
    store.appendMetric(rec->id, metric::kTimePaused, resumeStep, now, rec->paused_s + (stoppedAt > 0 ? std::max(0.0, now - stoppedAt) : 0.0));
    store.flush();
  } else {
    const FileDigest model = e.model.fromFile() ? digestFile(e.model.path) : FileDigest{};
    modelSha256 = model.sha256;
    std::vector<std::string> tags = e.tags;
    for (const auto& t : req.extraTags)
      if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
    result.runId = store.createRun(req.runName.empty() ? e.name : req.runName, experimentToJson(e).dump(), tags, e.notes,
                                   req.sweepId);
    store.markRunning(result.runId, static_cast<int64_t>(getpid()));
    if (!model.path.empty()) store.setModelFile(result.runId, model);
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
    if (resumeStep > 0) created["resume_step"] = resumeStep;
    sink.emit(created);
  }

  try {
    EngineOptions opts;
    opts.saveStateDir = req.saveStateDir;
    opts.checkpointDir = root;
    opts.resumeStep = resumeStep;
    if (e.execution.mode == ExecutionMode::Real) {
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
      lr.modelSha256 = modelSha256;
      result.outcome = launchWorkers(lr, sink, stop);
    } else {
      result.outcome = runSingleProcess(e, sink, stop, opts);
    }
  } catch (const std::exception& ex) {
    result.outcome = RunOutcome{RunStatus::Failed, errorText(ex), Json::object()};
    sink.emit(makeErrorEvent(ex));
  }
  // Rows the store refused (a full disk, an I/O error) fail the run whatever the stages did: its
  // record is not whole. What was saved before stays; the message names the store and why.
  try {
    recorder->flush();
  } catch (const std::exception&) {
    // kept in recorder->failure()
  }
  if (const std::string lost = recorder->failure(); !lost.empty()) {
    result.outcome.status = RunStatus::Failed;
    result.outcome.message = "the run store could not record the whole run (" + lost + "); the rows saved before are kept" +
                             (result.outcome.message.empty() ? std::string() : "; the stages: " + result.outcome.message);
  }
  result.outcome.message = withRunId(result.outcome.message, result.runId);
  const RunStatus status = result.outcome.status;
  Json fin = makeEvent(ev::kRunFinished);
  fin["run"] = result.runId;
  fin["status"] = toString(status);
  fin["message"] = result.outcome.message;
  fin["summary"] = result.outcome.summary;
  // The step of the stop checkpoint; a run that writes no checkpoints (root "") has none.
  if (status == RunStatus::Stopped && result.outcome.haltStep > 0 && !root.empty()) fin["halt_step"] = result.outcome.haltStep;
  sink.emit(fin);
  sink.flush();
  try {
    recorder->close();  // no background flush may touch the store from here on
  } catch (const std::exception&) {
    // the end's own rows (its summary line): the status below still goes in
  }
  try {
    try {
      store.setStatus(result.runId, result.outcome.status, result.outcome.message);
    } catch (const StoreError&) {
      // The log may have no room left past its last commit (its file at a size limit, the disk
      // full): its pages moved into the store file, the status fits at the log's start.
      if (!store.compactLog()) throw;
      store.setStatus(result.runId, result.outcome.status, result.outcome.message);
    }
  } catch (const StoreError& ex) {
    // The record stays "running" with a launcher that is gone: the next command that opens the
    // store marks it interrupted, and it can be resumed from its checkpoint.
    throw StoreError(ex.place(), "could not record how run " + std::to_string(result.runId) + " ended (" + toString(status) +
                                     (result.outcome.message.empty() ? "" : ": " + result.outcome.message) + "): " + ex.problem());
  }
  CheckpointLayout(root).prune(modelStages(e), status == RunStatus::Finished || status == RunStatus::Diverged);
  return result;
}

}  // namespace pm
