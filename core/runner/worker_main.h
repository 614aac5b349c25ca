#pragma once
// `pipemare worker`: one stage process of a real run. Reads the experiment from --config, joins
// the c10d group (flags, or the torchrun-style RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT
// environment), runs its stage, and writes its events as JSON lines on stdout, ending with a
// `stage_finished` event. Exits 0 when its stage finished or diverged, 130 when stopped (SIGINT or
// SIGUSR1: every stage stops after one common minibatch, checkpointing there with a checkpoint
// directory), 1 on failure, 2 on bad input (a bad RANK, WORLD_SIZE or MASTER_PORT, a missing
// --resume-step checkpoint). Ends itself when its parent (the launcher) dies.
#include <cstdint>
#include <string>

namespace pm {

struct WorkerOptions {
  std::string config;
  int rank = -1, worldSize = -1;   // -1: from RANK / WORLD_SIZE
  std::string masterAddr;          // "": MASTER_ADDR or 127.0.0.1
  int masterPort = -1;             // -1: MASTER_PORT
  std::string storeFile;           // single-node runs: c10d FileStore path instead of the TCPStore
  std::string saveStateDir;
  std::string checkpointDir;       // the run's checkpoint root ("" = none)
  int64_t resumeStep = 0;          // > 0: restore this stage from the checkpoint after that step
  std::string modelSha256;         // a TorchScript model: the SHA-256 its file must have ("" = not checked)
};

// Set in the environment of the workers `pipemare run` starts (its pid): they leave resume hints
// to it. Workers started by hand (srun, mpirun) say how to restart them instead.
inline constexpr const char* kLauncherEnv = "PIPEMARE_LAUNCHER_PID";
// Set by `pipemare run` to the fd (0, stdin) of the worker's lifeline: end-of-file there means the
// launcher is gone, and the worker ends at once.
inline constexpr const char* kLifelineEnv = "PIPEMARE_LIFELINE_FD";

// Exit code of a worker that ended itself because its launcher is gone.
inline constexpr int kLauncherGoneExit = 3;

// A worker started by `pipemare run` ends when its launcher dies, at every moment of its life:
// sets the parent-death signal, ends at once when the parent is already not the launcher named in
// the environment (it died before this call), and watches the lifeline. Called first thing in
// main() for `pipemare worker`; does nothing for workers started by hand.
void bindToLauncher();

int workerMain(const WorkerOptions& o);

}  // namespace pm
