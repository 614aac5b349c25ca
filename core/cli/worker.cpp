// pipemare worker: one stage's process of a real-mode run, started by the run's launcher.
#include "core/cli/commands.h"
#include "core/runner/worker_main.h"

namespace pm::cli {

int workerCommand(const WorkerArgs& a) {
  WorkerOptions o;
  o.config = a.config;
  o.rank = a.rank;
  o.worldSize = a.worldSize;
  o.masterAddr = a.masterAddr;
  o.masterPort = a.masterPort;
  o.storeFile = a.storeFile;
  o.saveStateDir = a.saveState;
  o.checkpointDir = a.checkpointDir;
  o.resumeStep = a.resumeStep;
  o.modelSha256 = a.modelSha256;
  return workerMain(o);
}

}  // namespace pm::cli
