#pragma once
// Runs an experiment's pipeline. Two execution modes with identical numerics (each stage's
// sequence of actions fixes its arithmetic, whatever the timing):
//  - single: all P stages in this process, in-process channels, one executor thread that runs
//    whichever stage can proceed (a stage never blocks);
//  - real:   this process is one stage (rank) of P processes over c10d (Gloo/NCCL); started by
//    the launcher (core/runner/launcher.h) or by torchrun-style environment variables.
#include <atomic>
#include <string>
#include <vector>

#include "core/comm/communicator.h"
#include "core/comm/gloo_comm.h"
#include "core/config/experiment.h"
#include "core/engine/run_outcome.h"
#include "core/events/event_sink.h"
#include "core/models/model_zoo.h"
#include "core/pipeline/partition.h"

namespace pm {

struct EngineOptions {
  std::string saveStateDir;   // when set: each stage saves its parameters+buffers as stage<s>.pt at the end
  std::string checkpointDir;  // the run's checkpoint root ("" = no checkpoints); see StageWorker
  int64_t resumeStep = 0;     // > 0: every stage restores checkpointFile(checkpointDir, resumeStep, s) first
  const std::atomic<bool>* halt = nullptr;  // real mode: stop at a common checkpoint (StageWorker::runToEnd)
  // real mode: the stage's device, decided by the worker (DeviceContext: execution.devices by local
  // rank); "" = execution.devices[stage] (single mode: every stage of one process).
  std::string device;
};

// Resolves the experiment's partition (by parameters, by measured time, or explicit) for P stages.
// Time-based partitioning profiles each unit's forward+backward on one microbatch.
Partition resolvePartition(const Experiment& e);
// The same for an already built model (`units` are only read; time profiling uses its own copy so
// that it never touches the training model's BatchNorm statistics).
Partition resolvePartition(const Experiment& e, const std::vector<Unit>& units);

// single mode. Emits run_started, then every stage's events, returns the outcome. A stop request
// with a checkpoint directory finishes the minibatch in progress on every stage, writes a
// checkpoint there and returns RunStatus::Stopped (resumable).
RunOutcome runSingleProcess(const Experiment& e, EventSink& sink, const std::atomic<bool>* stop,
                            const EngineOptions& opts = {});

// real mode: runs rank `comm.rank()`: its stage, or its chunks' stages (the partition must already
// be explicit or deterministic). Rank 0 emits run_started. Every stage emits its own stage/trace
// events; the last stage emits step, eval and progress events. A rank holding several stages
// returns their summaries combined (combineStageSummaries: "stages" lists each).
RunOutcome runStageProcess(const Experiment& e, Communicator& comm, EventSink& sink, const std::atomic<bool>* stop,
                           const EngineOptions& opts = {});

// Every stream of messages between two ranks of a real run (its stages' neighbours on other ranks,
// by wire tag: ChunkComm's link tags where a rank holds several stages): the channels NCCL's layout
// opens before training (DistributedOptions::payloadChannels).
std::vector<PayloadChannel> payloadChannels(const Experiment& e);

}  // namespace pm
