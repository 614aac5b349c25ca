#pragma once
// One pipeline stage: its slice of the model, its optimizer, and the ordered list of operations
// it executes (the schedule's actions, plus minibatch bookkeeping and evaluation passes).
// The worker never decides the order: it executes its list. In single-process mode an executor
// interleaves several workers (ready() says whether the next operation would block); in real
// mode each process runs one worker to the end.
// Threading: a worker is used by one thread at a time. It emits events to its sink.
#include <torch/torch.h>

#include <atomic>
#include <map>
#include <unordered_set>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"
#include "core/config/experiment.h"
#include "core/engine/batch_source.h"
#include "core/engine/memory_accounting.h"
#include "core/engine/training_plan.h"
#include "core/engine/weight_versions.h"
#include "core/events/event_sink.h"
#include "core/models/model_zoo.h"
#include "core/pipeline/partition.h"
#include "core/pipeline/schedule.h"

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
  std::string mode = "single";
  std::string checkpointDir;                  // root of this run's checkpoints ("" = none)
};

class StageWorker {
 public:
  explicit StageWorker(StageSetup s);
  ~StageWorker();

  int stage() const { return stage_; }
  bool done() const { return finished_ || halted_ || pc_ >= ops_.size(); }
  // Whether the next operation can run without blocking on a peer.
  bool ready();
  void runNext();
  // Runs every remaining operation (real mode); returns early when `stop` is set or the run
  // diverged.
  // `halt` (real mode, may be null): a request to stop at a checkpoint. The last stage then picks
  // k = its next minibatch and publishes it (Communicator::putControl); every stage reads it before
  // each of its minibatch bookkeeping steps and halts after minibatch k with a checkpoint. (The
  // last stage finishes minibatch k first, so no stage has passed k when it is published.)
  void runToEnd(const std::atomic<bool>* stop, const std::atomic<bool>* halt = nullptr);

  bool diverged() const { return diverged_; }
  const std::string& divergedMessage() const { return divergedMessage_; }
  // The last stage's results: final/best metrics; every stage: compute/wait/wall totals.
  Json summary() const;
  torch::nn::Sequential& module() { return module_; }
  // Parameters and buffers in a fixed order (for comparisons and saving).
  std::vector<torch::Tensor> stateTensors() const;
  void saveState(const std::string& path) const;
  const StageMemory& memory() const { return mem_; }
  size_t operationCount() const { return ops_.size(); }

  // Checkpoints (docs/engine.md). A stage writes its whole state right after its bookkeeping of
  // minibatch k (every training.checkpoint_every steps, and when halted there) as
  // checkpointFile(dir, k + 1, stage). Cuts taken at the same k on every stage are consistent:
  // the only messages crossing them are activations sent before the sender's cut and received
  // after the receiver's; the sender stores those and sends them again after a restore.
  static std::string checkpointFile(const std::string& dir, int64_t step, int stage);
  // k of the next minibatch bookkeeping this stage will do; -1 when none is left.
  int64_t nextMinibatchDone() const;
  // Stop (done() becomes true) right after minibatch k's bookkeeping, writing a checkpoint there.
  void haltAfterMinibatch(int64_t k) { haltAfter_ = k; }
  bool halted() const { return halted_; }
  int64_t haltStep() const { return haltAfter_ + 1; }  // the checkpoint's step once halted
  int64_t checkpointsWritten() const { return checkpointsWritten_; }
  // Restores a checkpoint written by this stage of the same experiment (throws EngineError
  // naming the file when it does not fit); then resendPending() sends the crossing messages.
  void restore(const std::string& file);
  // After restore(): the trace time of the checkpoint's cut (rows the first session traced from
  // then on are traced again); -1 when not restored.
  double traceCut() const { return traceCutS_; }
  void resendPending();
  // Real mode: agrees with the other stages on the clock the schedule trace uses (rank 0's start),
  // so that the stages' actions line up in one timeline: on one machine exactly (one monotonic
  // clock, told apart by the kernel's boot id), across machines through the wall clock (as close
  // as the machines' clocks are synchronized). Without it each process timed from its own start,
  // and messages appeared to arrive before they were sent. Single mode shares runStart already.
  void agreeTraceClock();

 private:
  void meetAndLeave(const std::string& phase, const std::string& what);
  // Waits for `key` in the shared control store until monotonic time `until`; then throws
  // EngineError "<failure> within <timeout_s> s".
  int64_t awaitControl(const std::string& key, double until, const std::string& failure);
  enum class OpKind { Act, MinibatchDone, EvalBatch };
  struct Op {
    OpKind kind;
    Action act;
    int64_t arg;  // minibatch index (MinibatchDone) or eval batch index (EvalBatch)
  };
  struct InFlight {
    torch::Tensor input;   // stage input (leaf with grad for s > 0)
    torch::Tensor output;  // stage output (scaled loss on the last stage); undefined when recomputed
    torch::Tensor target;  // last stage: the microbatch's targets
    double scale = 1.0;    // loss scale: microbatch size / minibatch size
    int64_t shadow = -1;   // the weight version whose shadow module ran the forward (-1: the live module)
    // Bytes the forward left allocated (output, and what autograd saved for the backward), measured
    // by TensorMemoryMeter; -1 when not measured (CUDA, restored from a checkpoint): the output counts.
    int64_t keptBytes = -1;
    // pipemare: the stale microbatch's forward was recomputed ahead, while its gradient was in
    // flight (output is that graph); with T2 `held` keeps the live weights while the estimate
    // stays in the parameters until the backward (which follows at once) puts them back.
    bool recomputedAhead = false;
    std::vector<torch::Tensor> held;
  };
  // PipeDream and 2BW keep the graph of a microbatch whose backward comes after a step: its forward
  // runs on a shadow of the stage module whose parameters share the live weights' storage until the
  // step, when the live weights move to a copy and the shadow's become that version's stash (never
  // written while referenced), and whose buffers are the live module's (BatchNorm statistics are updated
  // once, at the forward, as on the live module). The backward differentiates that graph and adds
  // the shadow's gradients to the live ones, so nothing is recomputed: the memory is the planner's
  // (stashed versions + activations in flight). Shadows are reused once their version is released.
  struct Shadow {
    torch::nn::Sequential module;
    std::vector<torch::Tensor> params;
  };
  // The stage forward again from its input, without updating BatchNorm statistics (counted).
  torch::Tensor recomputeForward(const torch::Tensor& input);
  // out.backward() with the gradient received from the next stage for microbatch mb.
  void backwardWithPeerGradient(int64_t mb, const torch::Tensor& out);
  Shadow& shadowOfCurrentVersion();
  void collectShadowGrads(Shadow& s);
  void releaseShadows();

  void buildOps();
  std::vector<Op> opsFor(int stage) const;  // the operation list of any stage of this pipeline
  void saveCheckpoint(int64_t step);
  void execAct(const Action& a);
  void forward(int64_t mb);
  void backward(int64_t mb);
  // pipemare, real mode: before the receive of a stale microbatch's gradient, recompute its
  // forward with the backward's weights (the stage would otherwise wait idle, then recompute while
  // the next stage waits for it). Numerically the same: same input, same weights, nothing steps
  // between the receive and the backward.
  void recomputeAhead(int64_t mb);
  void step(int64_t k);
  void noteBackward(int64_t mb, int64_t lag);
  void minibatchDone(int64_t k);
  void evalBatch(int64_t b);
  const Batch& microbatch(int64_t mb);
  torch::Tensor runModule(const torch::Tensor& x);
  void emitTrace(const char* action, int64_t mb, double start, double end, int64_t minibatch);
  void updateMemory();
  int64_t activationBytes() const;

  Experiment e_;
  int stage_, stages_;
  bool first_, last_;
  ScheduleKind schedule_;
  Partition partition_;
  torch::Device device_{torch::kCPU};  // execution.devices[stage] (or [0] for all)
  torch::nn::Sequential module_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::shared_ptr<const BatchSource> train_, eval_;
  Communicator* comm_;
  EventSink* sink_;
  TrainingPlan plan_;
  double runStart_;
  double traceCutS_ = -1;  // restore(): the checkpoint's time on the trace clock (-1: not resumed)
  double traceOrigin_;  // monotonic seconds of trace time 0 (runStart_ until agreeTraceClock)
  int64_t etaStep_ = -1;  // the ETA's reference point: this session's first logged step, and its time
  double etaTime_ = 0;
  std::string mode_;
  bool recompute_;
  int64_t stageSteps_ = 0;  // optimizer steps this stage will take (for cosine schedules)

  // Asynchronous schedules (pipedream, pipedream-2bw, pipemare). Microbatches of the first
  // warmupMinibatches_ minibatches run synchronously (PipeMare's warm-up).
  bool asyncSchedule_ = false;
  int64_t warmupMinibatches_ = 0;
  int64_t warmupSteps_ = 0;       // steps taken by the synchronous warm-up part
  int64_t stageDelay_ = 0;        // tau of this stage in its action list (steps between F and B, max)
  int64_t annealSteps_ = 1;       // T1's K
  double asyncMomentum_ = -1.0;   // delay-scaled SGD momentum of the asynchronous phase (< 0: unchanged)
  // The samples whose gradients the optimizer step that microbatch mb's backward feeds
  // accumulates: its minibatch, or for pipedream and 2bw its update_interval microbatches. A
  // microbatch's loss is scaled by its share, so every step applies their mean gradient.
  int64_t stepSamples(int64_t mb);
  std::pair<int64_t, int64_t> stepGroup_{-1, 0};  // (first microbatch, samples) of the last group summed
  bool isAsyncMb(int64_t mb) const { return asyncSchedule_ && mb >= warmupMinibatches_ * plan_.microbatches(); }
  std::vector<torch::Tensor> params_;
  WeightVersions versions_;
  std::unique_ptr<DiscrepancyCorrector> t2_;
  std::map<int64_t, std::vector<torch::Tensor>> gapSamples_;  // w_fwd of sampled microbatches
  std::unordered_set<int64_t> staleAtBackward_;  // microbatches with a step between F and B
  bool shadowGraphs_ = false;                    // pipedream / 2bw without recompute: see Shadow
  std::map<int64_t, Shadow> shadows_;            // version -> its shadow
  std::vector<Shadow> freeShadows_;
  int64_t stepsDone_ = 0;
  int64_t winTauMax_ = 0, winTauCount_ = 0, winVersionsMax_ = 1, winGapCount_ = 0;
  double winTauSum_ = 0, winGapSum_ = 0, winGapT2Sum_ = 0;
  int64_t tauMax_ = 0, versionsMax_ = 1;
  int64_t winRecomputed_ = 0;  // stage forwards recomputed for a backward in the window
  bool holdingEstimate_ = false;  // T2's estimate is in the parameters until the next backward
  // PIPEMARE_RECOMPUTE_AHEAD=always (tests): recompute ahead in a single-process run too.
  bool recomputeAheadAlways_ = false;

  std::vector<Op> ops_;
  size_t pc_ = 0;
  bool finished_ = false;
  ScheduleParams scheduleParams_;
  ScheduleKind warmupKind_ = ScheduleKind::GPipe;

  // checkpoints
  std::string checkpointDir_;
  int64_t haltAfter_ = -1;
  bool halted_ = false;
  int64_t checkpointsWritten_ = 0;
  std::map<int64_t, torch::Tensor> sentAct_;  // activations sent and not yet back-propagated (async)
  std::vector<std::pair<int64_t, torch::Tensor>> resend_;  // after a restore

  std::map<int64_t, std::vector<Batch>> minibatchCache_;
  std::map<int64_t, torch::Tensor> received_;   // activations received, by microbatch
  std::map<int64_t, torch::Tensor> gradsIn_;    // gradients received, by microbatch
  std::map<int64_t, torch::Tensor> gradsOut_;   // gradients to send, by microbatch
  std::map<int64_t, InFlight> inflight_;
  std::map<int64_t, double> lossSum_;           // last stage: sum of microbatch losses * size
  std::map<int64_t, int64_t> lossSamples_;
  int64_t lastBackwardMb_ = -1;

  // evaluation accumulators (last stage)
  double evalLoss_ = 0;
  int64_t evalCorrect_ = 0, evalPredictions_ = 0, evalSamples_ = 0;
  int64_t evalBatches_ = 0, evalBatchSize_ = 256;

  // measurements
  double compute_ = 0, wait_ = 0;            // totals
  double winCompute_ = 0, winWait_ = 0, winStart_ = 0;
  int64_t winSamples_ = 0, samples_ = 0;
  int64_t resumedSamples_ = 0;  // samples_ as restored from a checkpoint (this session's start)
  StageMemory mem_;
  int64_t maxInflight_ = 0;
  int64_t winPeakActivations_ = 0, winPeakStash_ = 0, winPeakTotal_ = 0;
  bool meter_ = false;  // TensorMemoryMeter measures this stage's tensors (CPU)
  // An action's activations at its transient peak: those before it plus the meter's peak above its start.
  void noteActionPeak(int64_t activationsAtPeak);
  double lastLoss_ = NAN, lastEvalLoss_ = NAN, lastAccuracy_ = NAN, bestAccuracy_ = NAN;
  double lastLr_ = 0;
  bool diverged_ = false;
  std::string divergedMessage_;
};

}  // namespace pm
