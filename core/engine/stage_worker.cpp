#include "core/engine/stage_worker.h"
// Its reports are in stage_worker_report.cpp, its checkpoints in stage_worker_checkpoint.cpp.

#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>

#include "core/engine/lr_schedule.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/tensor_memory_meter.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

namespace {


bool isWait(ActionKind k) {
  return k == ActionKind::RecvAct || k == ActionKind::RecvGrad || k == ActionKind::SendAct || k == ActionKind::SendGrad;
}

// While a stage's forward is recomputed for its backward, BatchNorm layers must not update their
// running statistics a second time: their momentum is set to 0 (running = running * 1 + 0) and
// num_batches_tracked is put back afterwards. (Restoring the statistics by copying would modify
// tensors the autograd graph saved.)
class RecomputeGuard {
 public:
  explicit RecomputeGuard(torch::nn::Module& m) {
    for (auto& mod : m.modules(/*include_self=*/true)) {
      if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(mod.get())) hold(bn);
      else if (auto* bn1 = dynamic_cast<torch::nn::BatchNorm1dImpl*>(mod.get())) hold(bn1);
    }
  }
  ~RecomputeGuard() {
    torch::NoGradGuard ng;
    for (auto& r : restores_) r();
  }

 private:
  template <class BN>
  void hold(BN* bn) {
    if (!bn->options.track_running_stats()) return;
    auto momentum = bn->options.momentum();
    auto tracked = bn->num_batches_tracked.clone();
    bn->options.momentum(0.0);
    restores_.push_back([bn, momentum, tracked] {
      bn->options.momentum(momentum);
      bn->num_batches_tracked.copy_(tracked);
    });
  }
  std::vector<std::function<void()>> restores_;
};

}  // namespace

StageWorker::StageWorker(StageSetup s)
    : e_(std::move(s.experiment)),
      stage_(s.stage),
      stages_(s.partition.stages()),
      first_(s.stage == 0),
      last_(s.stage == s.partition.stages() - 1),
      schedule_(scheduleFromName(e_.pipeline.schedule)),
      partition_(s.partition),
      train_(std::move(s.train)),
      eval_(std::move(s.eval)),
      comm_(s.comm),
      sink_(s.sink),
      plan_(e_, train_ ? train_->size() : 0),
      runStart_(s.runStart),
      traceOrigin_(s.runStart),
      mode_(s.mode),
      recompute_(e_.pipeline.recompute),
      checkpointDir_(s.checkpointDir) {
  module_ = makeStage(s.units, partition_.begin[static_cast<size_t>(stage_)], partition_.end[static_cast<size_t>(stage_)]);
  const auto& devices = e_.execution.devices;
  const std::string dev = devices.empty() ? "cpu" : devices[devices.size() == 1 ? 0 : static_cast<size_t>(stage_)];
  if (dev != "cpu") {
    if (!torch::cuda::is_available())
      throw ConfigError("execution.devices", "device \"" + dev + "\" requested, but this LibTorch has no CUDA (or no GPU is visible)");
    device_ = torch::Device(dev);
    module_->to(device_);
  }
  module_->train();
  TensorMemoryMeter::install();
  meter_ = TensorMemoryMeter::installed() && device_.is_cpu();
  params_ = module_->parameters();
  optimizer_ = makeOptimizer(e_.optimizer, params_);
  evalBatchSize_ = std::max<int64_t>(e_.data.batch_size, 256);
  if (eval_) evalBatches_ = (eval_->size() + evalBatchSize_ - 1) / evalBatchSize_;
  buildOps();
  winStart_ = monotonicSeconds();
  mem_.weights = moduleWeightBytes(*module_);
}

StageWorker::~StageWorker() = default;

void StageWorker::buildOps() {
  ScheduleParams p;
  p.kind = schedule_;
  p.stages = stages_;
  p.microbatches = plan_.microbatches();
  p.minibatches = plan_.totalSteps();
  p.update_interval = schedule_ == ScheduleKind::PipeMare ? plan_.microbatches() : std::max(1, e_.pipeline.update_interval);
  p.paper_timing = e_.pipeline.timing == "paper";
  asyncSchedule_ = isAsynchronous(schedule_);
  if (schedule_ == ScheduleKind::PipeMare && e_.pipemare.warmup_epochs > 0)
    warmupMinibatches_ = std::min(plan_.totalSteps(), static_cast<int64_t>(std::llround(e_.pipemare.warmup_epochs *
                                                                                         static_cast<double>(plan_.stepsPerEpoch()))));
  warmupKind_ = e_.pipemare.warmup_schedule == "1f1b" ? ScheduleKind::OneFOneB : ScheduleKind::GPipe;
  scheduleParams_ = p;
  const std::vector<Action> acts = stageActionsWithWarmup(p, warmupKind_, warmupMinibatches_, stage_);
  const int64_t N = plan_.microbatches();
  if (asyncSchedule_) {
    // The stage's delay in its (asynchronous part of the) list: what T1 and T2 scale by.
    std::vector<Action> asyncPart;
    for (const auto& a : acts)
      if (a.kind == ActionKind::Step ? true : a.mb >= warmupMinibatches_ * N) asyncPart.push_back(a);
    stageDelay_ = maxObservedDelay(asyncPart);
    warmupSteps_ = warmupMinibatches_;  // gpipe/1f1b step once per minibatch
    annealSteps_ = t1AnnealSteps(e_.pipemare, plan_.stepsPerEpoch());
    if (schedule_ == ScheduleKind::PipeMare && e_.pipemare.t2 && stageDelay_ > 0)
      t2_ = std::make_unique<DiscrepancyCorrector>(e_.pipemare.decay, static_cast<double>(stageDelay_));
    if (e_.pipemare.momentum_mode == "delay-scaled" && e_.optimizer.name == "sgd") {
      // Asynchrony acts like extra momentum (Mitliagkas et al. 2016): implicit ~ tau/(1+tau).
      // Applied from the first asynchronous step; a synchronous warm-up keeps the configured one.
      const double tau = static_cast<double>(stageDelay_);
      asyncMomentum_ = std::max(0.0, e_.optimizer.momentum - tau / (1.0 + tau));
    }
  }
  for (const auto& a : acts)
    if (a.kind == ActionKind::Step) ++stageSteps_;
  if (asyncSchedule_)
    for (const int64_t mb : staleMicrobatches(acts)) staleAtBackward_.insert(mb);
  shadowGraphs_ = asyncSchedule_ && schedule_ != ScheduleKind::PipeMare && !recompute_ && !last_;
  if (const char* ahead = std::getenv("PIPEMARE_RECOMPUTE_AHEAD")) recomputeAheadAlways_ = std::string(ahead) == "always";
  ops_ = opsFor(stage_);
}

std::vector<StageWorker::Op> StageWorker::opsFor(int stage) const {
  const std::vector<Action> acts = stageActionsWithWarmup(scheduleParams_, warmupKind_, warmupMinibatches_, stage);
  const int64_t N = plan_.microbatches();
  std::vector<Op> ops;
  // A minibatch is complete after its last backward and the send/step right after it; then
  // come the bookkeeping (MinibatchDone) and, when due, the evaluation passes.
  int64_t backwards = 0, pending = -1;
  auto flushPending = [&] {
    if (pending < 0) return;
    ops.push_back({OpKind::MinibatchDone, Action{ActionKind::Step, -1}, pending});
    if (plan_.evalDue(pending + 1) && eval_ && evalBatches_ > 0)
      for (int64_t b = 0; b < evalBatches_; ++b) ops.push_back({OpKind::EvalBatch, Action{ActionKind::Step, -1}, b});
    pending = -1;
  };
  for (size_t i = 0; i < acts.size(); ++i) {
    ops.push_back({OpKind::Act, acts[i], 0});
    if (acts[i].kind == ActionKind::Backward && ++backwards % N == 0) pending = backwards / N - 1;
    const bool nextTrails = i + 1 < acts.size() && (acts[i + 1].kind == ActionKind::SendGrad || acts[i + 1].kind == ActionKind::Step);
    if (!nextTrails) flushPending();
  }
  flushPending();
  return ops;
}

bool StageWorker::ready() {
  if (done()) return false;
  const Op& op = ops_[pc_];
  if (op.kind == OpKind::EvalBatch) return first_ || comm_->poll(stage_ - 1, kTagEval);
  if (op.kind != OpKind::Act) return true;
  switch (op.act.kind) {
    case ActionKind::RecvAct: return comm_->poll(stage_ - 1, kTagActivation);
    case ActionKind::RecvGrad: return comm_->poll(stage_ + 1, kTagGradient);
    default: return true;
  }
}

void StageWorker::runToEnd(const std::atomic<bool>* stop, const std::atomic<bool>* halt) {
  bool published = false;
  while (!done()) {
    if (stop && stop->load()) return;
    if (haltAfter_ < 0) {  // a stop: every stage halts after the same minibatch (with a checkpoint if it has a directory)
      if (last_ && !published && halt && halt->load()) {
        published = true;
        const int64_t k = nextMinibatchDone();
        if (k >= 0) {
          haltAfter_ = k;
          comm_->putControl("halt", k);
        }
      } else if (!last_ && ops_[pc_].kind == OpKind::MinibatchDone) {
        int64_t k = -1;
        if (comm_->getControl("halt", k)) haltAfter_ = k;
      }
    }
    runNext();
  }
  // Every stage that completed all its ops waits for the others before it leaves: leaving closes
  // its connections, which would reset them under a neighbour still reading its last messages
  // (a receive is kept posted ahead on every channel). Diverged and stopped runs end without it.
  if (!halted_) {
    comm_->finish();
    if (comm_->sharedControl() && !diverged_ && !(stop && stop->load()) && pc_ >= ops_.size()) meetAndLeave("done", "the end of the run");
    return;
  }
  // After a halt, sends crossing the cut are never received (they are in the checkpoint): do not
  // wait for them, but keep the connections open until every stage has halted, or a peer's
  // pending send to this stage would fail before it reaches its own cut.
  meetAndLeave("halted", "the stop checkpoint");
}

// Publishes `phase`/<stage> in the shared store, waits until every stage has, then leaves in
// order: rank 0 hosts the store (TCPStore), so it leaves last.
void StageWorker::meetAndLeave(const std::string& phase, const std::string& what) {
  const double until = monotonicSeconds() + e_.execution.timeout_s;
  auto awaitAll = [&](const std::string& key, int from) {
    for (int r = from; r < stages_; ++r)
      awaitControl(key + "/" + std::to_string(r), until, "stage " + std::to_string(r) + " did not reach " + what);
  };
  comm_->putControl(phase + "/" + std::to_string(stage_), 1);
  awaitAll(phase, 0);
  if (stage_ != 0) comm_->putControl(phase + "-left/" + std::to_string(stage_), 1);
  else awaitAll(phase + "-left", 1);
}

int64_t StageWorker::awaitControl(const std::string& key, double until, const std::string& failure) {
  int64_t v = 0;
  while (!comm_->getControl(key, v)) {
    if (monotonicSeconds() > until)
      throw EngineError("stage " + std::to_string(stage_),
                        failure + " within " + std::to_string(static_cast<int>(e_.execution.timeout_s)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return v;
}

void StageWorker::runNext() {
  const Op op = ops_[pc_++];
  switch (op.kind) {
    case OpKind::Act: execAct(op.act); break;
    case OpKind::MinibatchDone: minibatchDone(op.arg); break;
    case OpKind::EvalBatch: evalBatch(op.arg); break;
  }
  // The parameters hold T2's estimate for a graph recomputed ahead: its backward (the next op)
  // runs now, before anything (a stop) could look at the weights.
  if (holdingEstimate_ && pc_ < ops_.size()) runNext();
}

void StageWorker::recomputeAhead(int64_t mb) {
  if (last_) return;
  auto it = inflight_.find(mb);
  if (it == inflight_.end() || it->second.recomputedAhead || it->second.shadow >= 0) return;
  InFlight& f = it->second;
  const bool noGraph = !f.output.defined() || !f.output.requires_grad();
  int64_t lag = 0;
  if (isAsyncMb(mb)) {
    // pipemare's stale microbatches, recomputed with the current weights or T2's estimate
    // (pipedream and 2bw keep their graphs on shadows, or with pipeline.recompute recompute on
    // their stash: left to the backward).
    if (schedule_ != ScheduleKind::PipeMare) return;
    lag = versions_.delayOf(mb);
    if (lag <= 0 && !noGraph) return;
  } else if (!noGraph) {
    return;  // synchronous (gpipe, 1f1b, a warm-up minibatch): only with pipeline.recompute, same weights
  }
  // Only when its backward is the very next op (nothing can step the weights in between), and in a
  // multi-process run, where the stage may wait for the gradient (LibTorch 1.13's Gloo receive
  // cannot be asked whether it has arrived without completing it, so it is done before every such
  // receive: when the gradient is already there it costs what the recompute at the backward
  // would). A single-process run executes a receive only once its message is there.
  if (pc_ >= ops_.size() || ops_[pc_].kind != OpKind::Act || ops_[pc_].act.kind != ActionKind::Backward || ops_[pc_].act.mb != mb)
    return;
  if (!recomputeAheadAlways_ && !comm_->sharedControl()) return;
  const double t0 = monotonicSeconds();
  const int64_t liveBefore = meter_ ? TensorMemoryMeter::live() : 0;
  if (meter_) TensorMemoryMeter::resetPeak();
  const int64_t activationsBefore = meter_ ? activationBytes() : 0;
  if (t2_ && lag > 0) {
    f.held = cloneAll(params_);
    assignAll(params_, t2_->estimate(params_, lag));
    holdingEstimate_ = true;
  }
  f.output = recomputeForward(f.input);
  f.recomputedAhead = true;
  if (meter_) {
    // What the forward kept (its output, if still referenced) plus what the recompute added (the
    // graph, T2's held weights), less the output when the reassignment freed it.
    f.keptBytes = std::max<int64_t>(0, std::max<int64_t>(0, f.keptBytes) + TensorMemoryMeter::live() - liveBefore);
    noteActionPeak(activationsBefore + TensorMemoryMeter::peak() - liveBefore);
  }
  const double t1 = monotonicSeconds();
  compute_ += t1 - t0;
  winCompute_ += t1 - t0;
  emitTrace("R", mb, t0, t1, mb / plan_.microbatches());
}

const Batch& StageWorker::microbatch(int64_t mb) {
  const int64_t N = plan_.microbatches();
  const int64_t k = mb / N;
  auto it = minibatchCache_.find(k);
  if (it == minibatchCache_.end()) {
    Batch b = train_->get(plan_.minibatchIndices(k));
    it = minibatchCache_.emplace(k, splitMicrobatches(b, static_cast<int>(N))).first;
    if (static_cast<int64_t>(it->second.size()) != N)
      throw EngineError("stage " + std::to_string(stage_), "minibatch " + std::to_string(k) + " split into " +
                                                               std::to_string(it->second.size()) + " microbatches, expected " +
                                                               std::to_string(N));
  }
  return it->second[static_cast<size_t>(mb % N)];
}

torch::Tensor StageWorker::runModule(const torch::Tensor& x) { return module_->forward(x); }

void StageWorker::execAct(const Action& a) {
  if (a.kind == ActionKind::RecvGrad) recomputeAhead(a.mb);
  const double t0 = monotonicSeconds();
  const int64_t N = plan_.microbatches();
  switch (a.kind) {
    case ActionKind::RecvAct: received_[a.mb] = comm_->recv(stage_ - 1, kTagActivation); break;
    case ActionKind::RecvGrad: gradsIn_[a.mb] = comm_->recv(stage_ + 1, kTagGradient); break;
    case ActionKind::SendAct: {
      auto& f = inflight_.at(a.mb);
      comm_->send(f.output.detach(), stage_ + 1, kTagActivation);
      if (asyncSchedule_ && !checkpointDir_.empty()) sentAct_[a.mb] = f.output.detach();
      if (recompute_) {
        if (f.keptBytes >= 0) f.keptBytes = std::max<int64_t>(0, f.keptBytes - tensorBytes(f.output));
        f.output = torch::Tensor();
      }
      break;
    }
    case ActionKind::SendGrad: {
      auto it = gradsOut_.find(a.mb);
      comm_->send(it->second, stage_ - 1, kTagGradient);
      gradsOut_.erase(it);
      break;
    }
    case ActionKind::Forward: forward(a.mb); break;
    case ActionKind::Backward: backward(a.mb); break;
    case ActionKind::Step: step(a.mb); break;
  }
  const double t1 = monotonicSeconds();
  if (isWait(a.kind)) {
    wait_ += t1 - t0;
    winWait_ += t1 - t0;
  } else {
    compute_ += t1 - t0;
    winCompute_ += t1 - t0;
  }
  const int64_t minibatch = a.kind == ActionKind::Step ? std::max<int64_t>(0, lastBackwardMb_) / N : a.mb / N;
  emitTrace(traceActionName(a.kind), a.mb, t0, t1, minibatch);
}

void StageWorker::forward(int64_t mb) {
  InFlight f;
  torch::Tensor x;
  const int64_t N = plan_.microbatches();
  if (first_) {
    x = microbatch(mb).x.to(device_);
  } else {
    auto it = received_.find(mb);
    if (it == received_.end()) throw EngineError("stage " + std::to_string(stage_), "forward of microbatch " + std::to_string(mb) + " before its activation arrived");
    x = it->second.to(device_);
    received_.erase(it);
    if (x.is_floating_point()) x.requires_grad_(true);
  }
  f.input = x;
  double mbSize = static_cast<double>(x.size(0));
  if (last_) {
    const Batch& b = microbatch(mb);
    f.target = b.y.to(device_);
    f.scale = mbSize / static_cast<double>(stepSamples(mb));
  }
  const bool asyncMb = isAsyncMb(mb);
  // With recompute only the stage input is kept. Otherwise the graph is kept. An asynchronous
  // microbatch whose weights change before its backward (a step comes between them in the list)
  // is, for pipemare, recomputed then with the backward's weights (see backward()), so its graph
  // would only cost time and memory; for pipedream and 2bw its forward runs on its version's
  // shadow module and the graph is kept (see Shadow).
  const bool staleMb = asyncMb && !last_ && staleAtBackward_.count(mb) > 0;
  const bool shadowed = staleMb && shadowGraphs_;
  const bool noGraph = recompute_ || (staleMb && !shadowed);
  if (asyncSchedule_) {
    versions_.onForward(mb);
    const int64_t every = N * std::max<int64_t>(1, e_.training.log_interval);
    if (asyncMb && !last_ && schedule_ == ScheduleKind::PipeMare && mb % every == 0) gapSamples_[mb] = cloneAll(params_);
  }
  // Measured from here (the weight-gap sample above is the engine's own measurement, not the
  // stage's memory): what the forward leaves allocated, and its transient peak.
  const int64_t activationsBefore = meter_ ? activationBytes() + tensorBytes(x) + tensorBytes(f.target) : 0;
  const int64_t liveBefore = meter_ ? TensorMemoryMeter::live() : 0;
  if (meter_) TensorMemoryMeter::resetPeak();
  {
    std::unique_ptr<torch::NoGradGuard> ng;
    if (noGraph) ng = std::make_unique<torch::NoGradGuard>();
    torch::Tensor out;
    if (shadowed) {
      f.shadow = versions_.currentVersion();
      out = shadowOfCurrentVersion().module->forward(x);
    } else {
      out = runModule(x);
    }
    if (last_) {
      torch::Tensor loss = computeLoss(out, f.target, train_->task());
      const double l = loss.item<double>();
      lossSum_[mb / N] += l * mbSize;
      lossSamples_[mb / N] += static_cast<int64_t>(mbSize);
      f.output = noGraph ? torch::Tensor() : loss * f.scale;
    } else {
      f.output = out;
    }
  }
  if (meter_) {
    f.keptBytes = std::max<int64_t>(0, TensorMemoryMeter::live() - liveBefore);
    noteActionPeak(activationsBefore + TensorMemoryMeter::peak() - liveBefore);
  }
  inflight_[mb] = std::move(f);
  maxInflight_ = std::max<int64_t>(maxInflight_, static_cast<int64_t>(inflight_.size()));
  if (mb % N == N - 1) {
    // The minibatch's data is no longer needed once its last microbatch went forward.
    minibatchCache_.erase(mb / N);
  }
  samples_ += static_cast<int64_t>(mbSize);
  winSamples_ += static_cast<int64_t>(mbSize);
  updateMemory();
}

void StageWorker::backward(int64_t mb) {
  auto it = inflight_.find(mb);
  if (it == inflight_.end()) throw EngineError("stage " + std::to_string(stage_), "backward of microbatch " + std::to_string(mb) + " without its forward");
  InFlight f = std::move(it->second);
  inflight_.erase(it);
  sentAct_.erase(mb);
  torch::Tensor out = f.output;
  const bool asyncMb = isAsyncMb(mb);
  const int64_t lag = asyncSchedule_ ? versions_.delayOf(mb) : 0;
  // A stale microbatch (weights stepped since its forward) is recomputed with the backward's
  // weights; a fresh one uses its graph (identical: same weights, same input).
  // A graph kept on the shadow of the forward's version (pipedream, 2bw) is used as it is.
  const bool onShadow = f.shadow >= 0 && out.defined() && out.requires_grad();
  const bool stale = f.recomputedAhead || (!onShadow && (lag > 0 || !out.defined() || !out.requires_grad()));
  if (asyncMb && !last_) {
    auto sample = gapSamples_.find(mb);
    if (sample != gapSamples_.end()) {
      // ||w_fwd - w_bkwd|| / ||w_fwd|| without T2 (current weights) and with T2 (estimate). The
      // live weights are `held` while a graph recomputed ahead has T2's estimate in the parameters.
      const std::vector<torch::Tensor>& live = f.held.empty() ? params_ : f.held;
      winGapSum_ += relativeGap(sample->second, live);
      winGapT2Sum_ += relativeGap(sample->second, t2_ ? t2_->estimate(live, lag) : live);
      ++winGapCount_;
      gapSamples_.erase(sample);
    }
  }
  // The backward's transient peak (graph recomputed or kept, gradients, T2's estimate), measured
  // from here: the microbatch's own tensors still count until it ends.
  const int64_t activationsBefore =
      meter_ ? activationBytes() + tensorBytes(f.input) + tensorBytes(f.target) + std::max<int64_t>(0, f.keptBytes) : 0;
  const int64_t liveBefore = meter_ ? TensorMemoryMeter::live() : 0;
  if (meter_) TensorMemoryMeter::resetPeak();
  const auto notePeak = [&] {
    if (meter_) noteActionPeak(activationsBefore + TensorMemoryMeter::peak() - liveBefore);
  };
  if (asyncMb && !last_ && stale) {
    std::vector<torch::Tensor> current;  // the live weights to put back after the backward (none: they stayed)
    if (f.recomputedAhead) {
      current = std::move(f.held);  // the graph was built ahead with the backward's weights
      holdingEstimate_ = false;
    } else {
      if (out.defined()) out = torch::Tensor();  // the graph saw weights that have since changed
      // The backward's weights: pipedream/2bw the version its forward used (stash); pipemare the
      // current weights, or with T2 the estimate w - lag * delta of the forward's weights.
      const std::vector<torch::Tensor>* use = nullptr;
      std::vector<torch::Tensor> corrected;
      if (schedule_ == ScheduleKind::PipeMare) {
        if (t2_ && lag > 0) {
          corrected = t2_->estimate(params_, lag);
          use = &corrected;
        }
      } else {
        use = versions_.weightsFor(mb);
      }
      if (use) {
        current = cloneAll(params_);
        assignAll(params_, *use);
      }
      out = recomputeForward(f.input);
    }
    backwardWithPeerGradient(mb, out);
    if (!current.empty()) assignAll(params_, current);
    if (!first_) gradsOut_[mb] = f.input.grad().defined() ? f.input.grad() : torch::zeros_like(f.input);
    notePeak();
    noteBackward(mb, lag);
    return;
  }
  if (!f.recomputedAhead && (recompute_ || !out.defined())) {  // (restored from a checkpoint: no graph)
    out = recomputeForward(f.input);
    if (last_) out = computeLoss(out, f.target, train_->task()) * f.scale;
  }
  if (last_) {
    out.backward();
  } else {
    backwardWithPeerGradient(mb, out);
  }
  if (onShadow) collectShadowGrads(shadows_.at(f.shadow));
  if (!first_) gradsOut_[mb] = f.input.grad().defined() ? f.input.grad() : torch::zeros_like(f.input);
  notePeak();
  noteBackward(mb, lag);
  if (onShadow) releaseShadows();
}

torch::Tensor StageWorker::recomputeForward(const torch::Tensor& input) {
  RecomputeGuard guard(*module_);
  ++winRecomputed_;
  return runModule(input);
}

void StageWorker::backwardWithPeerGradient(int64_t mb, const torch::Tensor& out) {
  auto g = gradsIn_.find(mb);
  if (g == gradsIn_.end()) throw EngineError("stage " + std::to_string(stage_), "backward of microbatch " + std::to_string(mb) + " before its gradient arrived");
  out.backward(g->second.to(device_));
  gradsIn_.erase(g);
}

StageWorker::Shadow& StageWorker::shadowOfCurrentVersion() {
  const int64_t v = versions_.currentVersion();
  auto it = shadows_.find(v);
  if (it != shadows_.end()) return it->second;
  Shadow sh;
  if (!freeShadows_.empty()) {
    sh = std::move(freeShadows_.back());
    freeShadows_.pop_back();
  } else {
    // A fresh module of the same structure (the zoo's constructors are the only way to build one:
    // the units are not Cloneable); its buffers become the live module's.
    auto units = buildModel(e_.model.name, e_.training.seed);
    sh.module = makeStage(units, partition_.begin[static_cast<size_t>(stage_)], partition_.end[static_cast<size_t>(stage_)]);
    sh.module->to(device_);
    sh.module->train();
    torch::NoGradGuard ng;
    auto mine = sh.module->buffers(), live = module_->buffers();
    if (mine.size() != live.size()) throw EngineError("stage " + std::to_string(stage_), "shadow module does not match the stage's buffers");
    for (size_t i = 0; i < mine.size(); ++i) mine[i].set_(live[i]);
    sh.params = sh.module->parameters();
    if (sh.params.size() != params_.size()) throw EngineError("stage " + std::to_string(stage_), "shadow module does not match the stage's parameters");
  }
  {
    // Until the step the shadow shares the live weights' storage (no copy); see step().
    torch::NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) sh.params[i].set_(params_[i]);
  }
  return shadows_.emplace(v, std::move(sh)).first->second;
}

void StageWorker::collectShadowGrads(Shadow& sh) {
  torch::NoGradGuard ng;
  // As autograd accumulates into a leaf: the first gradient is taken, later ones are added.
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& from = sh.params[i].mutable_grad();
    if (!from.defined()) continue;
    torch::Tensor& to = params_[i].mutable_grad();
    if (to.defined()) to.add_(from);
    else to = from;
    from = torch::Tensor();
  }
}

void StageWorker::releaseShadows() {
  for (auto it = shadows_.begin(); it != shadows_.end();) {
    if (it->first < versions_.currentVersion() && !versions_.stashed(it->first)) {
      // Let the released version's storage go (a pooled shadow holds no weights).
      torch::NoGradGuard ng;
      for (auto& p : it->second.params) p.set_();
      freeShadows_.push_back(std::move(it->second));
      it = shadows_.erase(it);
    } else {
      ++it;
    }
  }
}

int64_t StageWorker::stepSamples(int64_t mb) {
  const int64_t N = plan_.microbatches();
  if (schedule_ != ScheduleKind::PipeDream && schedule_ != ScheduleKind::PipeDream2BW) return plan_.minibatchSize(mb / N);
  // pipedream and 2bw step after every update_interval backwards, in microbatch order, and once
  // more after the last: the step's group is [mb - mb % u, + u), cut at the end of the run.
  // Summed once per group (microbatches go forward in order), not per microbatch.
  const int64_t u = scheduleParams_.update_interval;
  const int64_t begin = mb - mb % u, end = std::min(begin + u, plan_.totalSteps() * N);
  if (begin != stepGroup_.first) {
    int64_t n = 0;
    for (int64_t i = begin; i < end; ++i) n += plan_.microbatchSize(i);
    stepGroup_ = {begin, n};
  }
  return stepGroup_.second;
}

void StageWorker::noteBackward(int64_t mb, int64_t lag) {
  lastBackwardMb_ = mb;
  if (!asyncSchedule_) return;
  versions_.onBackwardDone(mb);
  if (!isAsyncMb(mb)) return;
  winTauMax_ = std::max(winTauMax_, lag);
  tauMax_ = std::max(tauMax_, lag);
  winTauSum_ += static_cast<double>(lag);
  ++winTauCount_;
}

void StageWorker::step(int64_t k) {
  const bool asyncPhase = asyncSchedule_ && k >= warmupSteps_;
  const int64_t kPhase = asyncPhase ? k - warmupSteps_ : k;
  double lr = baseLearningRate(e_.optimizer, k, std::max<int64_t>(1, stageSteps_));
  if (asyncPhase && schedule_ == ScheduleKind::PipeMare && e_.pipemare.t1)
    lr = t1LearningRate(lr, static_cast<double>(stageDelay_), kPhase, annealSteps_);
  setLearningRate(*optimizer_, lr);
  lastLr_ = lr;
  if (asyncMomentum_ >= 0.0) setMomentum(*optimizer_, asyncPhase ? asyncMomentum_ : e_.optimizer.momentum);
  if (asyncSchedule_ && schedule_ != ScheduleKind::PipeMare) {
    if (auto sh = shadows_.find(versions_.currentVersion()); sh != shadows_.end()) {
      // Copy-on-write as in beforeStep, the other way round: the shadow keeps this version's
      // storage (its kept graphs saved those tensors) and becomes the stash; the live weights
      // move to a copy, which the step changes. No graph holds the live weights now: every
      // microbatch in flight across this step went forward on the shadow.
      torch::NoGradGuard ng;
      for (auto& p : params_) p.set_data(p.data().clone());
      versions_.adopt(sh->second.params);
    }
    versions_.beforeStep(params_);
    updateMemory();
  }
  winVersionsMax_ = std::max<int64_t>(winVersionsMax_, versions_.versionsHeld());
  versionsMax_ = std::max<int64_t>(versionsMax_, versions_.versionsHeld());
  std::vector<torch::Tensor> before;
  if (t2_ && asyncPhase) before = cloneAll(params_);
  optimizer_->step();
  if (t2_ && asyncPhase) t2_->update(before, params_);
  if (asyncSchedule_) versions_.afterStep();
  ++stepsDone_;
  updateMemory();
  optimizer_->zero_grad();
}

}  // namespace pm
