#pragma once
// Starts the stage processes of a `real` run (`pipemare worker`, one per rank, argument vectors,
// never a shell), merges their event streams into one sink, watches them, and decides the run's
// outcome. A worker that dies ends the others within seconds (SIGTERM, then SIGKILL) and fails the
// run with a message naming its stage, rank and signal; `stop` ends all workers (status stopped).
// Workers end themselves when the launcher dies (parent-death signal).
#include <atomic>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/engine/run_outcome.h"
#include "core/events/event_sink.h"

namespace pm {

struct LaunchRequest {
  Experiment experiment;        // partition already resolved (explicit boundaries)
  std::string workerBinary;     // path of the `pipemare` executable
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;           // 0 = pick a free port
  std::vector<int> localRanks;  // ranks started here; empty = all
  std::string saveStateDir;     // forwarded to workers (--save-state)
  std::string checkpointDir;    // forwarded to workers (--checkpoint-dir)
  int64_t resumeStep = 0;       // forwarded to workers (--resume-step)
  double killGraceS = 3.0;      // SIGTERM -> SIGKILL delay
  // Multi-node: `nnodes` launchers, one per node, each starting its share of the ranks
  // (contiguous blocks, nodeRanks()). Node 0 records: it listens on masterAddr:masterPort+1 for
  // the event streams of the other launchers, which forward their workers' events there.
  int nnodes = 1, nodeRank = 0;
  std::string secretFile;  // multi-node: the run secret's file ("" = PIPEMARE_RUN_SECRET or the default, see node_link.h)
  // A TorchScript model: the SHA-256 its file had when the run was recorded ("" = this node's file
  // as it is now). Every worker checks its file against it; node 0 checks the other nodes'.
  std::string modelSha256;
};

// The ranks node `node` of `nnodes` starts for a P-stage pipeline (contiguous, sizes differ by at most 1).
std::vector<int> nodeRanks(int stages, int nnodes, int node);

RunOutcome launchWorkers(const LaunchRequest& req, EventSink& sink, const std::atomic<bool>* stop);

}  // namespace pm
