#pragma once
// Runs an experiment and records it: creates the run row, marks it running, sends the engine's
// events to the store (and to any extra sinks), and sets the final status (finished | stopped |
// diverged | failed). `single` mode runs in this process; `real` mode starts one worker process
// per stage (core/runner/launcher.h). Nothing recorded is lost on failure: the recorder is
// flushed before the status is written.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis/stored_run.h"  // storedExperiment, for --resume
#include "core/config/experiment.h"
#include "core/engine/run_outcome.h"
#include "core/events/event_sink.h"
#include "core/store/run_checkpoints.h"
#include "core/store/run_store.h"

namespace pm {

struct LocalRunRequest {
  Experiment experiment;
  std::string runName;  // "" = experiment.name
  std::vector<std::shared_ptr<EventSink>> extraSinks;  // e.g. progress printer, stdout JSON lines
  std::string workerBinary;   // `pipemare` executable for real mode ("" = /proc/self/exe)
  std::string saveStateDir;   // save every stage's final parameters and buffers here
  std::vector<std::string> extraTags;  // added to the experiment's tags
  std::string sweepId;        // the sweep this run belongs to ("" = none)
  int64_t resumeRun = 0;      // > 0: continue this stopped/failed/interrupted run from its latest checkpoint
  // Multi-node (real mode): this is node 0 of `nnodes`, the one that records (see LaunchRequest).
  int nnodes = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  std::string secretFile;  // the run secret's file ("" = PIPEMARE_RUN_SECRET or the default, see node_link.h)
};

// The share of a multi-node run on node `nodeRank` > 0: starts its ranks and forwards their events
// to node 0 (which records them); `sink` sees them too (progress). Nothing is recorded here.
RunOutcome runRemoteShare(const Experiment& e, int nnodes, int nodeRank, const std::string& masterAddr, int masterPort,
                          EventSink& sink, const std::atomic<bool>* stop, const std::string& saveStateDir = "",
                          const std::string& secretFile = "");

// The latest step with a checkpoint of every one of `stages` stages under `root`; 0 = none.
int64_t latestCompleteCheckpoint(const std::string& root, int stages);
// The step `run --resume` would continue `run` from: its latest complete checkpoint, if its
// checkpoint directory is its own (run_checkpoints.h); 0 = none.
int64_t resumableStep(const std::string& storePath, const RunRecord& run, int stages);
// Throws ConfigError ("--resume RUN: the run is finished; ...") unless the run is stopped, failed
// or interrupted: the check runLocally makes, for a caller to make before it prints anything.
void checkResumable(const RunRecord& r);

struct LocalRunResult {
  int64_t runId = 0;
  RunOutcome outcome;
};

// `stop` may be set from a signal handler or another thread to stop the run. Checkpoints go to
// checkpointRoot(store, run); they are removed when the run finishes, and all but the latest are
// removed when it ends otherwise.
LocalRunResult runLocally(RunStore& store, const LocalRunRequest& req, const std::atomic<bool>* stop);

}  // namespace pm
