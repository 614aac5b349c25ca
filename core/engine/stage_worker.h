#pragma once
// One pipeline stage: it executes its StagePlan's operation list in order (the schedule's
// actions, plus minibatch bookkeeping and evaluation passes), reports (step, progress, stage,
// eval and trace events) and checkpoints. The arithmetic is its StageExecutor's, the weights
// each pass sees its WeightPolicy's, the measurements its StageMeter's.
// The worker never decides the order: it executes its list, as its rank's RankRunner tells it
// (rank_runner.h: one worker per stage the rank holds, run in the rank's order; in single-process
// mode an executor interleaves the ranks, ready() saying whether the next operation would block).
// Threading: a worker is used by one thread at a time. It emits events to its sink.
#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"
#include "core/config/experiment.h"
#include "core/engine/batch_source.h"
#include "core/engine/checkpoint_layout.h"
#include "core/engine/stage_executor.h"
#include "core/engine/stage_meter.h"
#include "core/engine/stage_plan.h"
#include "core/events/event_sink.h"
#include "core/models/model_zoo.h"
#include "core/pipeline/partition.h"

namespace pm {

struct StageSetup {
  Experiment experiment;
  int stage = 0;
  Partition partition;
  std::vector<Unit> units;                    // the whole model (this stage uses its slice)
  std::shared_ptr<const BatchSource> train;   // used by the first (inputs) and last (targets) stage
  std::shared_ptr<const BatchSource> eval;
  Communicator* comm = nullptr;               // not owned
  EventSink* sink = nullptr;                  // not owned
  double runStart = 0;                        // monotonic seconds; trace times are relative to it
  std::string checkpointDir;                  // root of this run's checkpoints ("" = none)
  bool recomputeAheadAlways = false;          // see StagePlan
  std::string device;                         // "" = execution.devices[rank] (or [0] for all)
  int rank = -1;                              // the rank that runs the stage (-1: the stage's number)
};

// Waits for `key` in the shared control store until monotonic time `until`, returning its value;
// then throws EngineError at `place`: "<failure> within <timeoutS> s".
int64_t awaitControl(Communicator& comm, const std::string& key, double until, double timeoutS, const std::string& place,
                     const std::string& failure);

class StageWorker {
 public:
  explicit StageWorker(StageSetup s);
  ~StageWorker();

  int stage() const { return plan_.stage(); }
  int rank() const { return rank_; }
  bool lastStage() const { return plan_.last(); }
  const StagePlan& plan() const { return plan_; }
  bool done() const { return finished_ || halted_ || pc_ >= ops().size(); }
  // Whether the next operation can run without blocking on a peer.
  bool ready();
  void runNext();
  // The index of the next operation in plan().ops().
  size_t position() const { return pc_; }
  bool atMinibatchDone() const { return !done() && ops()[pc_].kind == OpKind::MinibatchDone; }
  // The last stage's choice of the minibatch every stage halts after on a stop request (-1: none
  // is left): k such that no stage can have passed it when it is published.
  int64_t safeHaltMinibatch() const;

  bool diverged() const { return diverged_; }
  const std::string& divergedMessage() const { return divergedMessage_; }
  // The last stage's results: final/best metrics; every stage: compute/wait/wall totals.
  Json summary() const;
  torch::nn::Sequential& module() { return executor_.module(); }
  // Parameters and buffers in a fixed order (for comparisons and saving).
  std::vector<torch::Tensor> stateTensors() const { return executor_.stateTensors(); }
  void saveState(const std::string& path) const;
  const StageMemory& memory() const { return meter_.memory(); }
  size_t operationCount() const { return ops().size(); }

  // Checkpoints (docs/engine.md). A stage writes its whole state right after its bookkeeping of
  // minibatch k (every training.checkpoint_every steps, and when halted there) as
  // CheckpointLayout::stageFile(k + 1, stage). Cuts taken at the same k on every stage are
  // consistent: the only messages crossing them are activations sent before the sender's cut and
  // received after the receiver's; the sender stores those and sends them again after a restore.
  // k of the next minibatch bookkeeping this stage will do; -1 when none is left.
  int64_t nextMinibatchDone() const;
  // Stop (done() becomes true) right after minibatch k's bookkeeping, writing a checkpoint there.
  void haltAfterMinibatch(int64_t k) { haltAfter_ = k; }
  bool halted() const { return halted_; }
  int64_t haltStep() const { return haltAfter_ + 1; }  // the checkpoint's step once halted
  int64_t checkpointsWritten() const { return checkpointsWritten_; }
  // Restores the checkpoint of `step` written by this stage of the same experiment (throws
  // EngineError naming the file when it does not fit); then resendPending() sends the crossing
  // messages. Returns the file.
  std::string restore(int64_t step);
  // After restore(): the trace time of the checkpoint's cut (rows the first session traced from
  // then on are traced again); -1 when not restored.
  double traceCut() const { return traceCutS_; }
  void resendPending() { executor_.resendPending(); }
  // Real mode: agrees with the other stages on the clock the schedule trace uses (rank 0's start),
  // so that the stages' actions line up in one timeline: on one machine exactly (one monotonic
  // clock, told apart by the kernel's boot id), across machines through the wall clock (as close
  // as the machines' clocks are synchronized). Single mode shares runStart already.
  void agreeTraceClock();

 private:
  const std::vector<StageOp>& ops() const { return plan_.ops(); }
  void execAct(const Action& a);
  void recomputeAheadOf(int64_t mb);
  void minibatchDone(int64_t k);
  void emitStepAndProgress(int64_t done, double loss, double now);
  void emitStageEvent(int64_t done, double now);
  void evalBatch(int64_t b);
  void emitEval();
  void emitTrace(const char* action, int64_t mb, double start, double end, int64_t minibatch);
  void saveCheckpoint(int64_t step);
  // The activations sent before the cut after minibatch step-1 and received after it.
  std::vector<int64_t> messagesCrossingCut(int64_t step) const;

  Experiment e_;
  StagePlan plan_;
  Partition partition_;
  std::shared_ptr<const BatchSource> eval_;
  Communicator* comm_;
  EventSink* sink_;
  int rank_;
  StageMeter meter_;
  StageExecutor executor_;
  CheckpointLayout checkpoints_;
  double runStart_;
  double traceCutS_ = -1;  // restore(): the checkpoint's time on the trace clock (-1: not resumed)
  double traceOrigin_;     // monotonic seconds of trace time 0 (runStart_ until agreeTraceClock)
  int64_t etaStep_ = -1;   // the ETA's reference point: this session's first logged step, and its time
  double etaTime_ = 0;

  size_t pc_ = 0;
  bool finished_ = false;
  int64_t haltAfter_ = -1;
  bool halted_ = false;
  int64_t checkpointsWritten_ = 0;
  int64_t stepsDone_ = 0;

  // evaluation accumulators (last stage)
  double evalLoss_ = 0;
  int64_t evalCorrect_ = 0, evalPredictions_ = 0, evalSamples_ = 0;

  double lastLoss_ = NAN, lastEvalLoss_ = NAN, lastAccuracy_ = NAN, bestAccuracy_ = NAN;
  bool diverged_ = false;
  std::string divergedMessage_;
};

}  // namespace pm
