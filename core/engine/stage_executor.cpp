#include "core/engine/stage_executor.h"

#include <cmath>
#include <functional>

#include "core/engine/optimizer_factory.h"
#include "core/models/torchscript_model.h"
#include "core/util/errors.h"

namespace pm {

namespace {

// While a stage's forward is recomputed for its backward, BatchNorm layers must not update their
// running statistics a second time: their momentum is set to 0 (running = running * 1 + 0) and
// num_batches_tracked is put back afterwards. (Restoring the statistics by copying would modify
// tensors the autograd graph saved.) A TorchScript unit's layers are not reachable as LibTorch
// modules (and a traced one has its momentum baked into the graph): its buffers are copied
// before and written back afterwards through .data(), which leaves the version counters the
// autograd graph checks untouched.
class RecomputeGuard {
 public:
  explicit RecomputeGuard(torch::nn::Module& m) {
    for (auto& mod : m.modules(/*include_self=*/true)) {
      if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(mod.get())) hold(bn);
      else if (auto* bn1 = dynamic_cast<torch::nn::BatchNorm1dImpl*>(mod.get())) hold(bn1);
      else if (auto* script = dynamic_cast<ScriptUnitImpl*>(mod.get())) holdBuffers(*script);
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
  void holdBuffers(torch::nn::Module& m) {
    torch::NoGradGuard ng;
    for (auto& b : m.buffers()) {
      torch::Tensor kept = b.detach().clone();
      restores_.push_back([b, kept]() mutable { b.data().copy_(kept); });
    }
  }
  std::vector<std::function<void()>> restores_;
};

torch::nn::Sequential stageModule(const std::vector<Unit>& units, const Partition& part, int stage, const torch::Device& device) {
  auto m = makeStage(units, part.begin[static_cast<size_t>(stage)], part.end[static_cast<size_t>(stage)]);
  if (!device.is_cpu()) m->to(device);
  m->train();
  return m;
}

}  // namespace

StageExecutor::StageExecutor(const Experiment& e, const StagePlan& plan, const Partition& partition, const std::vector<Unit>& units,
                             const std::string& device, std::shared_ptr<const BatchSource> train, Communicator* comm,
                             StageMeter& meter, bool keepSentActivations)
    : plan_(plan), e_(e), train_(std::move(train)), comm_(comm), meter_(meter), keepSent_(keepSentActivations) {
  if (device != "cpu") {
    if (!torch::cuda::is_available())
      throw ConfigError("execution.devices", "device \"" + device + "\" requested, but this LibTorch has no CUDA (or no GPU is visible)");
    device_ = torch::Device(device);
  }
  module_ = stageModule(units, partition, plan.stage(), device_);
  params_ = module_->parameters();
  optimizer_ = makeOptimizer(e_.optimizer, params_);
  // A shadow for weight stashing: a fresh module of the same structure (the zoo's constructors
  // are the only way to build one: the units are not Cloneable).
  const int stage = plan.stage();
  const torch::Device dev = device_;
  policy_ = makeWeightPolicy(plan_, module_, params_, [e = e_, partition, stage, dev] {
    return stageModule(buildModel(e.model, e.training.seed), partition, stage, dev);
  });
}

const Batch& StageExecutor::microbatch(int64_t mb) {
  const int64_t N = plan_.microbatches();
  const int64_t k = mb / N;
  auto it = minibatchCache_.find(k);
  if (it == minibatchCache_.end()) {
    Batch b = train_->get(plan_.training().minibatchIndices(k));
    it = minibatchCache_.emplace(k, splitMicrobatches(b, static_cast<int>(N))).first;
    if (static_cast<int64_t>(it->second.size()) != N)
      throw EngineError(where(), "minibatch " + std::to_string(k) + " split into " + std::to_string(it->second.size()) +
                                     " microbatches, expected " + std::to_string(N));
  }
  return it->second[static_cast<size_t>(mb % N)];
}

// Training messages are keyed by their microbatch's rows, which every stage knows from the plan:
// a transport that sends shapes apart (NCCL) agrees on each size's shape once per channel.
int64_t StageExecutor::shapeKey(int64_t mb) const { return plan_.training().microbatchSize(mb); }

void StageExecutor::receiveActivation(int64_t mb) {
  received_[mb] = comm_->recvKeyed(plan_.stage() - 1, kTagActivation, shapeKey(mb));
}

void StageExecutor::receiveGradient(int64_t mb) { gradsIn_[mb] = comm_->recvKeyed(plan_.stage() + 1, kTagGradient, shapeKey(mb)); }

void StageExecutor::sendActivation(int64_t mb) {
  auto& f = inflight_.at(mb);
  comm_->sendKeyed(f.output.detach(), plan_.stage() + 1, kTagActivation, shapeKey(mb));
  if (keepSent_) sentAct_[mb] = f.output.detach();
  if (plan_.recompute()) {
    if (f.keptBytes >= 0) f.keptBytes = std::max<int64_t>(0, f.keptBytes - tensorBytes(f.output));
    f.output = torch::Tensor();
  }
}

void StageExecutor::sendGradient(int64_t mb) {
  auto it = gradsOut_.find(mb);
  comm_->sendKeyed(it->second, plan_.stage() - 1, kTagGradient, shapeKey(mb));
  gradsOut_.erase(it);
}

void StageExecutor::forward(int64_t mb) {
  InFlight f;
  torch::Tensor x;
  const int64_t N = plan_.microbatches();
  const bool first = plan_.first(), last = plan_.last();
  if (first) {
    x = microbatch(mb).x.to(device_);
  } else {
    auto it = received_.find(mb);
    if (it == received_.end()) throw EngineError(where(), "forward of microbatch " + std::to_string(mb) + " before its activation arrived");
    x = it->second.to(device_);
    received_.erase(it);
    if (x.is_floating_point()) x.requires_grad_(true);
  }
  f.input = x;
  const double mbSize = static_cast<double>(x.size(0));
  if (last) {
    f.target = microbatch(mb).y.to(device_);
    f.scale = mbSize / static_cast<double>(plan_.stepSamples(mb));
  }
  // With recompute only the stage input is kept. Otherwise the graph is kept. An asynchronous
  // microbatch whose weights change before its backward (a step comes between them in the list)
  // is, for pipemare, recomputed then with the backward's weights (see backward()), so its graph
  // would only cost time and memory; for pipedream and 2bw its forward runs on its version's
  // shadow module and the graph is kept (see StashPolicy).
  const bool staleMb = plan_.isAsyncMb(mb) && !last && plan_.staleAtBackward(mb);
  const bool shadowed = staleMb && plan_.shadowGraphs();
  const bool noGraph = plan_.recompute() || (staleMb && !shadowed);
  if (plan_.asynchronous()) {
    policy_->onForward(mb);
    if (plan_.samplesWeightGap(mb)) policy_->sampleForwardWeights(mb);
  }
  // Measured from here (the weight-gap sample above is the engine's own measurement, not the
  // stage's memory): what the forward leaves allocated, and its transient peak.
  const bool measure = meter_.measuresTensors();
  StageMeter::Action action(meter_, measure ? activationBytes() + tensorBytes(x) + tensorBytes(f.target) : 0);
  {
    std::unique_ptr<torch::NoGradGuard> ng;
    if (noGraph) ng = std::make_unique<torch::NoGradGuard>();
    torch::nn::Sequential* on = shadowed ? policy_->keepGraphOn(mb, f.shadow) : nullptr;
    // A split backward needs each unit's output (its weight gradients start there).
    std::vector<torch::Tensor>* keep = plan_.splitBackward() && !noGraph ? &f.unitOutputs : nullptr;
    torch::Tensor out = on ? (*on)->forward(x) : keep ? forwardUnits(x, keep) : module_->forward(x);
    if (last) {
      torch::Tensor loss = computeLoss(out, f.target, train_->task());
      const double l = loss.item<double>();
      lossSum_[mb / N] += l * mbSize;
      lossSamples_[mb / N] += static_cast<int64_t>(mbSize);
      f.output = noGraph ? torch::Tensor() : loss * f.scale;
    } else {
      f.output = out;
    }
  }
  if (measure) {
    f.keptBytes = action.kept();
    action.end();
  }
  inflight_[mb] = std::move(f);
  meter_.noteInflight(static_cast<int64_t>(inflight_.size()));
  // The minibatch's data is not needed after its last microbatch went forward.
  if (mb % N == N - 1) minibatchCache_.erase(mb / N);
  meter_.addSamples(static_cast<int64_t>(mbSize));
  updateMemory();
}

void StageExecutor::backward(int64_t mb) {
  auto it = inflight_.find(mb);
  if (it == inflight_.end()) throw EngineError(where(), "backward of microbatch " + std::to_string(mb) + " without its forward");
  InFlight f = std::move(it->second);
  inflight_.erase(it);
  sentAct_.erase(mb);
  const bool last = plan_.last();
  torch::Tensor out = f.output;
  const bool asyncMb = plan_.isAsyncMb(mb);
  const int64_t lag = plan_.asynchronous() ? policy_->delayOf(mb) : 0;
  // A stale microbatch (weights stepped since its forward) is recomputed with the backward's
  // weights; a fresh one uses its graph (identical: same weights, same input).
  // A graph kept on the shadow of the forward's version (pipedream, 2bw) is used as it is.
  const bool onShadow = f.shadow >= 0 && out.defined() && out.requires_grad();
  const bool stale = f.recomputedAhead || (!onShadow && (lag > 0 || !out.defined() || !out.requires_grad()));
  // The live weights are `held` while a graph recomputed ahead has T2's estimate in the parameters.
  if (asyncMb && !last) policy_->measureGap(mb, f.held.empty() ? params_ : f.held, lag, meter_);
  // The backward's transient peak (graph recomputed or kept, gradients, T2's estimate), measured
  // from here: the microbatch's own tensors still count until it ends.
  StageMeter::Action action(meter_, meter_.measuresTensors() ? activationBytes() + tensorBytes(f.input) + tensorBytes(f.target) +
                                                                   std::max<int64_t>(0, f.keptBytes)
                                                             : 0);
  if (asyncMb && !last && stale) {
    backwardStale(mb, f, lag);
  } else {
    if (!f.recomputedAhead && (plan_.recompute() || !out.defined())) {  // (restored from a checkpoint: no graph)
      out = recomputeForward(f.input);
      if (last) out = computeLoss(out, f.target, train_->task()) * f.scale;
    }
    if (!last) backwardWithPeerGradient(mb, out);
    else if (out.requires_grad()) out.backward();  // (a model without parameters has nothing to learn)
  }
  if (!plan_.first()) gradsOut_[mb] = f.input.grad().defined() ? f.input.grad() : torch::zeros_like(f.input);
  action.end();
  lastBackwardMb_ = mb;
  if (!plan_.asynchronous()) return;
  policy_->onBackwardDone(mb, onShadow ? f.shadow : -1);
  if (asyncMb) meter_.noteDelay(lag);
}

void StageExecutor::backwardInput(int64_t mb) {
  auto it = inflight_.find(mb);
  if (it == inflight_.end()) throw EngineError(where(), "input gradient of microbatch " + std::to_string(mb) + " without its forward");
  InFlight f = std::move(it->second);
  inflight_.erase(it);
  sentAct_.erase(mb);
  const bool last = plan_.last();
  const bool measure = meter_.measuresTensors();
  StageMeter::Action action(meter_, measure ? activationBytes() + tensorBytes(f.input) + tensorBytes(f.target) + std::max<int64_t>(0, f.keptBytes) : 0);
  torch::Tensor out = f.output;
  const bool recomputed = plan_.recompute() || !out.defined();  // (restored from a checkpoint: no graph)
  if (recomputed) {
    f.unitOutputs.clear();
    out = recomputeForward(f.input, &f.unitOutputs);
    if (last) out = computeLoss(out, f.target, train_->task()) * f.scale;
    f.output = out;
  }
  torch::Tensor g;  // the gradient of `out`; none on the last stage (the loss)
  if (!last) {
    auto gi = gradsIn_.find(mb);
    if (gi == gradsIn_.end()) throw EngineError(where(), "input gradient of microbatch " + std::to_string(mb) + " before its gradient arrived");
    g = gi->second.to(device_);
    gradsIn_.erase(gi);
  }
  // The last unit's output is `out` (on the last stage, the loss after it); the others are the
  // inputs of the units after them.
  const size_t units = f.unitOutputs.size();
  if (units == 0) throw EngineError(where(), "split backward of microbatch " + std::to_string(mb) + " without the units' outputs");
  f.unitOutputs.back() = out;
  std::vector<torch::Tensor> wrt;
  std::vector<size_t> unitOf;  // wrt[j] is unit unitOf[j]'s output (npos: the stage input)
  if (f.input.requires_grad()) {
    wrt.push_back(f.input);
    unitOf.push_back(std::string::npos);
  }
  for (size_t i = 0; i + 1 < units; ++i)
    if (f.unitOutputs[i].requires_grad()) {
      wrt.push_back(f.unitOutputs[i]);
      unitOf.push_back(i);
    }
  std::vector<torch::Tensor> grads;
  if (out.requires_grad() && !wrt.empty())
    grads = torch::autograd::grad({out}, wrt, g.defined() ? std::vector<torch::Tensor>{g} : std::vector<torch::Tensor>{},
                                  /*retain_graph=*/true, /*create_graph=*/false, /*allow_unused=*/true);
  f.unitGrads.assign(units, torch::Tensor());
  f.unitGrads.back() = g;
  torch::Tensor inputGrad;
  for (size_t j = 0; j < grads.size(); ++j) {
    if (unitOf[j] == std::string::npos) inputGrad = grads[j];
    else f.unitGrads[unitOf[j]] = grads[j];
  }
  if (!plan_.first()) gradsOut_[mb] = inputGrad.defined() ? inputGrad : torch::zeros_like(f.input);
  if (measure) {
    if (recomputed) f.keptBytes = std::max<int64_t>(0, action.kept());
    action.end();
  }
  pendingWeight_[mb] = std::move(f);
  updateMemory();
}

void StageExecutor::backwardWeight(int64_t mb) {
  auto it = pendingWeight_.find(mb);
  if (it == pendingWeight_.end())
    throw EngineError(where(), "weight gradients of microbatch " + std::to_string(mb) + " before its input gradient");
  StageMeter::Action action(meter_, meter_.measuresTensors() ? activationBytes() : 0);
  {
    InFlight f = std::move(it->second);
    pendingWeight_.erase(it);
    const size_t units = f.unitOutputs.size();
    for (size_t i = 0; i < units && i < module_->size(); ++i) {
      const torch::Tensor& o = f.unitOutputs[i];
      const torch::Tensor& g = f.unitGrads[i];
      // Nothing flows back to a unit whose output has no graph, or (not the last) no gradient.
      if (!o.defined() || !o.requires_grad() || (i + 1 < units && !g.defined())) continue;
      std::vector<torch::Tensor> params;
      for (const auto& p : module_->ptr(i)->parameters())
        if (p.requires_grad()) params.push_back(p);
      if (params.empty()) continue;
      // Each unit's graph is its own (a Sequential's units meet only at their outputs): it is
      // freed here.
      const std::vector<torch::Tensor> gs =
          torch::autograd::grad({o}, params, g.defined() ? std::vector<torch::Tensor>{g} : std::vector<torch::Tensor>{},
                                /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
      torch::NoGradGuard ng;
      for (size_t j = 0; j < params.size(); ++j) {
        if (!gs[j].defined()) continue;
        // As autograd accumulates: the first gradient becomes .grad (a copy laid out like the
        // parameter when it is a view, e.g. a transposed matmul result, which the optimizer's
        // zero_grad could not detach), the next ones are added in place.
        if (params[j].grad().defined()) params[j].mutable_grad().add_(gs[j]);
        else if (gs[j].is_view() || !gs[j].is_contiguous()) params[j].mutable_grad() = gs[j].clone(at::MemoryFormat::Contiguous);
        else params[j].mutable_grad() = gs[j];
      }
    }
  }
  action.end();
  lastBackwardMb_ = mb;
  updateMemory();
}

void StageExecutor::backwardStale(int64_t mb, InFlight& f, int64_t lag) {
  std::vector<torch::Tensor> current;  // the live weights to put back after the backward (none: they stayed)
  torch::Tensor out;
  if (f.recomputedAhead) {
    out = f.output;
    current = std::move(f.held);  // the graph was built ahead with the backward's weights
    holdingEstimate_ = false;
  } else {
    f.output = torch::Tensor();  // the graph saw weights that have since changed
    // The backward's weights: pipedream/2bw the version its forward used (stash); pipemare the
    // current weights, or with T2 the estimate w - lag * delta of the forward's weights.
    if (auto use = policy_->backwardWeights(mb, lag)) {
      current = cloneAll(params_);
      assignAll(params_, *use);
    }
    out = recomputeForward(f.input);
  }
  backwardWithPeerGradient(mb, out);
  if (!current.empty()) assignAll(params_, current);
}

bool StageExecutor::recomputeAhead(int64_t mb) {
  if (plan_.last()) return false;
  auto it = inflight_.find(mb);
  if (it == inflight_.end() || it->second.recomputedAhead || it->second.shadow >= 0) return false;
  InFlight& f = it->second;
  const bool noGraph = !f.output.defined() || !f.output.requires_grad();
  int64_t lag = 0;
  if (plan_.isAsyncMb(mb)) {
    // pipemare's stale microbatches, recomputed with the current weights or T2's estimate
    // (pipedream and 2bw keep their graphs on shadows, or with pipeline.recompute recompute on
    // their stash: left to the backward).
    if (!policy_->recomputesAhead()) return false;
    lag = policy_->delayOf(mb);
    if (lag <= 0 && !noGraph) return false;
  } else if (!noGraph) {
    return false;  // synchronous (gpipe, 1f1b, a warm-up minibatch): only with pipeline.recompute, same weights
  }
  const bool measure = meter_.measuresTensors();
  StageMeter::Action action(meter_, measure ? activationBytes() : 0);
  if (auto use = policy_->backwardWeights(mb, lag)) {
    f.held = cloneAll(params_);
    assignAll(params_, *use);
    holdingEstimate_ = true;
  }
  f.output = recomputeForward(f.input);
  f.recomputedAhead = true;
  if (measure) {
    // What the forward kept (its output, if still referenced) plus what the recompute added (the
    // graph, T2's held weights), less the output when the reassignment freed it.
    f.keptBytes = std::max<int64_t>(0, std::max<int64_t>(0, f.keptBytes) + action.kept());
    action.end();
  }
  return true;
}

torch::Tensor StageExecutor::recomputeForward(const torch::Tensor& input, std::vector<torch::Tensor>* outputs) {
  RecomputeGuard guard(*module_);
  meter_.noteRecompute();
  return outputs ? forwardUnits(input, outputs) : module_->forward(input);
}

torch::Tensor StageExecutor::forwardUnits(const torch::Tensor& x, std::vector<torch::Tensor>* outputs) {
  torch::Tensor y = x;
  for (auto& unit : *module_) {
    y = unit.forward(y);
    if (outputs) outputs->push_back(y);
  }
  return y;
}

void StageExecutor::backwardWithPeerGradient(int64_t mb, const torch::Tensor& out) {
  auto g = gradsIn_.find(mb);
  if (g == gradsIn_.end()) throw EngineError(where(), "backward of microbatch " + std::to_string(mb) + " before its gradient arrived");
  // A first stage of units without parameters (a Flatten alone) has nothing to differentiate: its
  // input needs no gradient and it has no weights, so its output has no graph.
  if (out.requires_grad()) out.backward(g->second.to(device_));
  gradsIn_.erase(g);
}

void StageExecutor::step(int64_t k) {
  const bool asyncPhase = plan_.asyncStep(k);
  const double lr = plan_.learningRate(k);
  setLearningRate(*optimizer_, lr);
  lastLr_ = lr;
  if (const double m = plan_.momentumAt(k); m >= 0.0) setMomentum(*optimizer_, m);
  if (plan_.asynchronous() && policy_->beforeStep(asyncPhase)) updateMemory();
  meter_.noteVersions(policy_->versionsHeld());
  optimizer_->step();
  if (plan_.asynchronous()) policy_->afterStep(asyncPhase);
  updateMemory();
  optimizer_->zero_grad();
}

torch::Tensor StageExecutor::evaluate(const torch::Tensor& x) {
  torch::NoGradGuard ng;
  module_->eval();
  torch::Tensor out = module_->forward(x);
  module_->train();
  return out;
}

double StageExecutor::takeMinibatchLoss(int64_t k) {
  const double loss = lossSum_.count(k) ? lossSum_[k] / static_cast<double>(std::max<int64_t>(1, lossSamples_[k])) : NAN;
  lossSum_.erase(k);
  lossSamples_.erase(k);
  return loss;
}

int64_t StageExecutor::activationBytes() const {
  int64_t n = 0;
  for (const auto& kv : inflight_) {
    const InFlight& f = kv.second;
    n += tensorBytes(f.input) + tensorBytes(f.target) + (f.keptBytes >= 0 ? f.keptBytes : tensorBytes(f.output));
  }
  // A pending W keeps its microbatch's graph and the gradients of its units' outputs.
  for (const auto& kv : pendingWeight_) {
    const InFlight& f = kv.second;
    n += tensorBytes(f.input) + tensorBytes(f.target) + (f.keptBytes >= 0 ? f.keptBytes : tensorBytes(f.output));
    for (const auto& g : f.unitGrads) n += tensorBytes(g);
  }
  for (const auto& kv : received_) n += tensorBytes(kv.second);
  for (const auto& kv : gradsIn_) n += tensorBytes(kv.second);
  for (const auto& kv : gradsOut_) n += tensorBytes(kv.second);
  return n;
}

StageMemory StageExecutor::memoryNow() const {
  StageMemory m;
  m.weights = moduleWeightBytes(*module_);
  m.gradients = moduleGradientBytes(*module_);
  m.optimizer = optimizerStateBytes(*optimizer_);
  m.activations = activationBytes();
  m.stash = policy_->stashBytes();
  m.delta = policy_->deltaBytes();
  return m;
}

std::vector<torch::Tensor> StageExecutor::stateTensors() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : module_->named_parameters()) out.push_back(p.value().detach().cpu().clone());
  for (const auto& b : module_->named_buffers()) out.push_back(b.value().detach().cpu().clone());
  return out;
}

}  // namespace pm
