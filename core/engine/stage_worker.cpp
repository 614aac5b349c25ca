#include "core/engine/stage_worker.h"

#include <cmath>
#include <functional>

#ifdef PIPEMARE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/engine/lr_schedule.h"
#include "core/engine/optimizer_factory.h"
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
      mode_(s.mode),
      recompute_(e_.pipeline.recompute) {
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
  asyncSchedule_ = isAsynchronous(schedule_);
  if (schedule_ == ScheduleKind::PipeMare && e_.pipemare.warmup_epochs > 0)
    warmupMinibatches_ = std::min(plan_.totalSteps(), static_cast<int64_t>(std::llround(e_.pipemare.warmup_epochs *
                                                                                         static_cast<double>(plan_.stepsPerEpoch()))));
  const ScheduleKind warmupKind = e_.pipemare.warmup_schedule == "1f1b" ? ScheduleKind::OneFOneB : ScheduleKind::GPipe;
  const std::vector<Action> acts = stageActionsWithWarmup(p, warmupKind, warmupMinibatches_, stage_);
  const int64_t N = plan_.microbatches();
  if (asyncSchedule_) {
    // The stage's delay in its (asynchronous part of the) list: what T1 and T2 scale by.
    std::vector<Action> asyncPart;
    for (const auto& a : acts)
      if (a.kind == ActionKind::Step ? true : a.mb >= warmupMinibatches_ * N) asyncPart.push_back(a);
    stageDelay_ = maxObservedDelay(asyncPart);
    warmupSteps_ = warmupMinibatches_;  // gpipe/1f1b step once per minibatch
    annealSteps_ = e_.pipemare.anneal_steps > 0 ? e_.pipemare.anneal_steps : std::max<int64_t>(1, plan_.stepsPerEpoch());
    if (schedule_ == ScheduleKind::PipeMare && e_.pipemare.t2 && stageDelay_ > 0)
      t2_ = std::make_unique<DiscrepancyCorrector>(e_.pipemare.decay, static_cast<double>(stageDelay_));
    if (e_.pipemare.momentum_mode == "delay-scaled" && e_.optimizer.name == "sgd") {
      // Asynchrony acts like extra momentum (Mitliagkas et al. 2016): implicit ~ tau/(1+tau).
      const double tau = static_cast<double>(stageDelay_);
      setMomentum(*optimizer_, std::max(0.0, e_.optimizer.momentum - tau / (1.0 + tau)));
    }
  }
  for (const auto& a : acts)
    if (a.kind == ActionKind::Step) ++stageSteps_;
  // A minibatch is complete after its last backward and the send/step right after it; then
  // come the bookkeeping (MinibatchDone) and, when due, the evaluation passes.
  int64_t backwards = 0, pending = -1;
  auto flushPending = [&] {
    if (pending < 0) return;
    ops_.push_back({OpKind::MinibatchDone, Action{ActionKind::Step, -1}, pending});
    if (plan_.evalDue(pending + 1) && eval_ && evalBatches_ > 0)
      for (int64_t b = 0; b < evalBatches_; ++b) ops_.push_back({OpKind::EvalBatch, Action{ActionKind::Step, -1}, b});
    pending = -1;
  };
  for (size_t i = 0; i < acts.size(); ++i) {
    ops_.push_back({OpKind::Act, acts[i], 0});
    if (acts[i].kind == ActionKind::Backward && ++backwards % N == 0) pending = backwards / N - 1;
    const bool nextTrails = i + 1 < acts.size() && (acts[i + 1].kind == ActionKind::SendGrad || acts[i + 1].kind == ActionKind::Step);
    if (!nextTrails) flushPending();
  }
  flushPending();
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

void StageWorker::runToEnd(const std::atomic<bool>* stop) {
  while (!done()) {
    if (stop && stop->load()) return;
    runNext();
  }
  comm_->finish();
}

void StageWorker::runNext() {
  const Op op = ops_[pc_++];
  switch (op.kind) {
    case OpKind::Act: execAct(op.act); break;
    case OpKind::MinibatchDone: minibatchDone(op.arg); break;
    case OpKind::EvalBatch: evalBatch(op.arg); break;
  }
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
  const double t0 = monotonicSeconds();
  const int64_t N = plan_.microbatches();
  switch (a.kind) {
    case ActionKind::RecvAct: received_[a.mb] = comm_->recv(stage_ - 1, kTagActivation); break;
    case ActionKind::RecvGrad: gradsIn_[a.mb] = comm_->recv(stage_ + 1, kTagGradient); break;
    case ActionKind::SendAct: {
      auto& f = inflight_.at(a.mb);
      comm_->send(f.output.detach(), stage_ + 1, kTagActivation);
      if (recompute_) f.output = torch::Tensor();
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
    int64_t kSamples = 0;
    for (const auto& m : minibatchCache_.at(mb / N)) kSamples += m.size();
    f.scale = mbSize / static_cast<double>(kSamples);
  }
  const bool asyncMb = isAsyncMb(mb);
  // With recompute only the stage input is kept. Otherwise the graph is kept; an asynchronous
  // microbatch whose weights change before its backward is recomputed then (see backward()).
  const bool noGraph = recompute_;
  if (asyncSchedule_) {
    versions_.onForward(mb);
    const int64_t every = N * std::max<int64_t>(1, e_.training.log_interval);
    if (asyncMb && !last_ && schedule_ == ScheduleKind::PipeMare && mb % every == 0) gapSamples_[mb] = cloneAll(params_);
  }
  {
    std::unique_ptr<torch::NoGradGuard> ng;
    if (noGraph) ng = std::make_unique<torch::NoGradGuard>();
    torch::Tensor out = runModule(x);
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
  torch::Tensor out = f.output;
  const bool asyncMb = isAsyncMb(mb);
  const int64_t lag = asyncSchedule_ ? versions_.delayOf(mb) : 0;
  // A stale microbatch (weights stepped since its forward) is recomputed with the backward's
  // weights; a fresh one uses its graph (identical: same weights, same input).
  const bool stale = lag > 0 || !out.defined();
  if (asyncMb && !last_) {
    auto sample = gapSamples_.find(mb);
    if (sample != gapSamples_.end()) {
      // ||w_fwd - w_bkwd|| / ||w_fwd|| without T2 (current weights) and with T2 (estimate).
      winGapSum_ += relativeGap(sample->second, params_);
      winGapT2Sum_ += relativeGap(sample->second, t2_ ? t2_->estimate(params_, lag) : params_);
      ++winGapCount_;
      gapSamples_.erase(sample);
    }
  }
  if (asyncMb && !last_ && stale) {
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
    std::vector<torch::Tensor> current;
    if (use) {
      current = cloneAll(params_);
      assignAll(params_, *use);
    }
    {
      RecomputeGuard guard(*module_);
      out = runModule(f.input);
    }
    auto g = gradsIn_.find(mb);
    if (g == gradsIn_.end()) throw EngineError("stage " + std::to_string(stage_), "backward of microbatch " + std::to_string(mb) + " before its gradient arrived");
    out.backward(g->second.to(device_));
    gradsIn_.erase(g);
    if (use) assignAll(params_, current);
    if (!first_) gradsOut_[mb] = f.input.grad().defined() ? f.input.grad() : torch::zeros_like(f.input);
    noteBackward(mb, lag);
    return;
  }
  if (recompute_) {
    {
      RecomputeGuard guard(*module_);
      out = runModule(f.input);
    }
    if (last_) out = computeLoss(out, f.target, train_->task()) * f.scale;
  }
  if (last_) {
    out.backward();
  } else {
    auto g = gradsIn_.find(mb);
    if (g == gradsIn_.end()) throw EngineError("stage " + std::to_string(stage_), "backward of microbatch " + std::to_string(mb) + " before its gradient arrived");
    out.backward(g->second.to(device_));
    gradsIn_.erase(g);
  }
  if (!first_) gradsOut_[mb] = f.input.grad().defined() ? f.input.grad() : torch::zeros_like(f.input);
  noteBackward(mb, lag);
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
  if (asyncSchedule_ && schedule_ != ScheduleKind::PipeMare) {
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

void StageWorker::minibatchDone(int64_t k) {
  const int64_t done = k + 1;
  const double now = monotonicSeconds();
  if (last_) {
    const double loss = lossSum_.count(k) ? lossSum_[k] / static_cast<double>(std::max<int64_t>(1, lossSamples_[k])) : NAN;
    lossSum_.erase(k);
    lossSamples_.erase(k);
    lastLoss_ = loss;
    const auto& guard = e_.training.divergence_guard;
    const bool hit = guard.enabled && (!std::isfinite(loss) || loss > guard.max_loss);
    if (plan_.logDue(done) || hit) {
      Json s = makeEvent(ev::kStep);
      s["step"] = done;
      s["epoch"] = plan_.epochAt(done);
      s["samples"] = samples_;
      s["loss"] = loss;
      s["lr"] = lastLr_;
      s["samples_per_s"] = static_cast<double>(winSamples_) / std::max(1e-9, now - winStart_);
      sink_->emit(s);
      Json p = makeEvent(ev::kProgress);
      p["step"] = done;
      p["total_steps"] = plan_.totalSteps();
      p["epoch"] = plan_.epochAt(done);
      const double elapsed = now - runStart_;
      p["elapsed_s"] = elapsed;
      p["eta_s"] = elapsed / static_cast<double>(done) * static_cast<double>(plan_.totalSteps() - done);
      sink_->emit(p);
    }
    if (hit) {
      diverged_ = true;
      divergedMessage_ = "loss " + (std::isfinite(loss) ? std::to_string(loss) : std::string("is not finite")) +
                         " at step " + std::to_string(done) + " (training.divergence_guard.max_loss = " +
                         std::to_string(guard.max_loss) + ")";
      finished_ = true;
    }
  }
  if (plan_.logDue(done) || finished_) {
    updateMemory();
    const double wall = std::max(1e-9, now - winStart_);
    Json st = makeEvent(ev::kStage);
    st["stage"] = stage_;
    st["rank"] = comm_ ? comm_->rank() : stage_;
    st["step"] = done;
    st["compute_s"] = winCompute_;
    st["wait_s"] = winWait_;
    st["idle_s"] = std::max(0.0, wall - winCompute_ - winWait_);
    st["utilization"] = std::min(1.0, winCompute_ / wall);
    // Activations: the peak of the in-flight bytes over the window (at a minibatch boundary
    // nothing is in flight, so the current value would always read 0).
    StageMemory reported = mem_;
    reported.activations = std::max(winPeakActivations_, mem_.activations);
    reported.stash = std::max(winPeakStash_, mem_.stash);
    st["memory"] = reported.toJson();
    st["rss"] = processRssBytes();
#ifdef PIPEMARE_WITH_CUDA
    if (device_.is_cuda()) {
      // The CUDA caching allocator's figures for this stage's device, beside the accounted ones.
      const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
      const auto agg = static_cast<size_t>(c10::cuda::CUDACachingAllocator::StatType::AGGREGATE);
      st["cuda"] = {{"allocated", stats.allocated_bytes[agg].current},
                    {"allocated_peak", stats.allocated_bytes[agg].peak},
                    {"reserved", stats.reserved_bytes[agg].current}};
    }
#endif
    st["inflight_max"] = maxInflight_;
    st["lr"] = lastLr_;
    if (asyncSchedule_) {
      st["tau"] = winTauMax_;
      st["tau_mean"] = winTauCount_ ? winTauSum_ / static_cast<double>(winTauCount_) : 0.0;
      st["tau_expected"] = stageDelay_;
      st["versions"] = winVersionsMax_;
      if (winGapCount_ > 0) {
        st["weight_gap"] = winGapSum_ / static_cast<double>(winGapCount_);
        st["weight_gap_t2"] = winGapT2Sum_ / static_cast<double>(winGapCount_);
      }
      winTauMax_ = winTauCount_ = winGapCount_ = 0;
      winTauSum_ = winGapSum_ = winGapT2Sum_ = 0;
      winVersionsMax_ = versions_.versionsHeld();
    }
    sink_->emit(st);
    winCompute_ = winWait_ = 0;
    winPeakActivations_ = 0;
    winPeakStash_ = 0;
    winStart_ = now;
    winSamples_ = 0;
  }
}

void StageWorker::evalBatch(int64_t b) {
  const double t0 = monotonicSeconds();
  double waited = 0;
  torch::NoGradGuard ng;
  module_->eval();
  torch::Tensor x;
  std::vector<int64_t> idx;
  const int64_t begin = b * evalBatchSize_, end = std::min(eval_->size(), begin + evalBatchSize_);
  for (int64_t i = begin; i < end; ++i) idx.push_back(i);
  Batch batch;
  if (first_ || last_) batch = eval_->get(idx);
  if (first_) {
    x = batch.x.to(device_);
  } else {
    const double w0 = monotonicSeconds();
    x = comm_->recv(stage_ - 1, kTagEval).to(device_);
    waited = monotonicSeconds() - w0;
  }
  torch::Tensor out = runModule(x);
  if (!last_) {
    comm_->send(out, stage_ + 1, kTagEval);
  } else {
    if (b == 0) {
      evalLoss_ = 0;
      evalCorrect_ = evalPredictions_ = evalSamples_ = 0;
    }
    const torch::Tensor y = batch.y.to(device_);
    evalLoss_ += computeLoss(out, y, eval_->task()).item<double>() * static_cast<double>(batch.size());
    evalCorrect_ += countCorrect(out, y, eval_->task());
    evalPredictions_ += batch.y.numel();
    evalSamples_ += batch.size();
    if (b == evalBatches_ - 1) {
      // The minibatch count this evaluation follows: the latest MinibatchDone before it.
      int64_t after = 0;
      for (size_t i = pc_; i-- > 0;)
        if (ops_[i].kind == OpKind::MinibatchDone) {
          after = ops_[i].arg + 1;
          break;
        }
      Json ev = makeEvent(ev::kEval);
      ev["step"] = after;
      ev["epoch"] = plan_.epochAt(after);
      lastEvalLoss_ = evalLoss_ / static_cast<double>(std::max<int64_t>(1, evalSamples_));
      ev["loss"] = lastEvalLoss_;
      if (eval_->task() == Task::LanguageModel) ev["perplexity"] = std::exp(lastEvalLoss_);
      if (eval_->task() != Task::Regression) {
        lastAccuracy_ = static_cast<double>(evalCorrect_) / static_cast<double>(std::max<int64_t>(1, evalPredictions_));
        ev["accuracy"] = lastAccuracy_;
        if (std::isnan(bestAccuracy_) || lastAccuracy_ > bestAccuracy_) bestAccuracy_ = lastAccuracy_;
      }
      ev["samples"] = evalSamples_;
      sink_->emit(ev);
    }
  }
  module_->train();
  const double t1 = monotonicSeconds();
  wait_ += waited;
  winWait_ += waited;
  compute_ += (t1 - t0) - waited;
  winCompute_ += (t1 - t0) - waited;
}

void StageWorker::emitTrace(const char* action, int64_t mb, double start, double end, int64_t minibatch) {
  if (!plan_.traceDue(minibatch)) return;
  Json t = makeEvent(ev::kTrace);
  t["stage"] = stage_;
  t["action"] = action;
  t["mb"] = mb;
  t["start"] = start - runStart_;
  t["end"] = end - runStart_;
  sink_->emit(t);
}

int64_t StageWorker::activationBytes() const {
  int64_t n = 0;
  for (const auto& kv : inflight_) n += tensorBytes(kv.second.input) + tensorBytes(kv.second.output) + tensorBytes(kv.second.target);
  for (const auto& kv : received_) n += tensorBytes(kv.second);
  for (const auto& kv : gradsIn_) n += tensorBytes(kv.second);
  for (const auto& kv : gradsOut_) n += tensorBytes(kv.second);
  return n;
}

void StageWorker::updateMemory() {
  mem_.weights = moduleWeightBytes(*module_);
  mem_.gradients = moduleGradientBytes(*module_);
  mem_.optimizer = optimizerStateBytes(*optimizer_);
  mem_.activations = activationBytes();
  mem_.stash = versions_.stashBytes();
  mem_.delta = t2_ ? t2_->bytes() : 0;
  mem_.peak = std::max(mem_.peak, mem_.total());
  winPeakActivations_ = std::max(winPeakActivations_, mem_.activations);
  winPeakStash_ = std::max(winPeakStash_, mem_.stash);
}

Json StageWorker::summary() const {
  Json s{{"stage", stage_}, {"compute_s", compute_}, {"wait_s", wait_}, {"samples", samples_},
         {"peak_memory", mem_.peak}, {"inflight_max", maxInflight_}};
  if (asyncSchedule_) {
    s["tau_max"] = tauMax_;
    s["tau_expected"] = stageDelay_;
    s["versions_max"] = versionsMax_;
  }
  if (last_) {
    s["final_loss"] = lastLoss_;
    s["final_eval_loss"] = lastEvalLoss_;
    s["final_accuracy"] = lastAccuracy_;
    s["best_accuracy"] = bestAccuracy_;
  }
  return s;
}

std::vector<torch::Tensor> StageWorker::stateTensors() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : module_->named_parameters()) out.push_back(p.value().detach().cpu().clone());
  for (const auto& b : module_->named_buffers()) out.push_back(b.value().detach().cpu().clone());
  return out;
}

void StageWorker::saveState(const std::string& path) const { torch::save(stateTensors(), path); }

}  // namespace pm
