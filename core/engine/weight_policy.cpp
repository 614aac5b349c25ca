#include "core/engine/weight_policy.h"

#include "core/engine/stage_meter.h"
#include "core/util/errors.h"

namespace pm {

std::unique_ptr<WeightPolicy> makeWeightPolicy(const StagePlan& plan, torch::nn::Sequential& live,
                                               std::vector<torch::Tensor>& params, StageModuleFactory fresh) {
  switch (scheduleDecl(plan.schedule()).weights) {
    case WeightFamily::Stash: return std::make_unique<StashPolicy>(live, params, std::move(fresh));
    case WeightFamily::TwoVersions: return std::make_unique<TwoVersionPolicy>(live, params, std::move(fresh));
    case WeightFamily::Predicted: return std::make_unique<PipeMarePolicy>(plan, params);
    case WeightFamily::Current: break;
  }
  return std::make_unique<SyncPolicy>();
}

StashPolicy::StashPolicy(torch::nn::Sequential& live, std::vector<torch::Tensor>& params, StageModuleFactory fresh)
    : live_(live), params_(params), fresh_(std::move(fresh)) {}

torch::nn::Sequential* StashPolicy::keepGraphOn(int64_t /*mb*/, int64_t& version) {
  version = versions_.currentVersion();
  return &shadowOfCurrentVersion().module;
}

std::optional<std::vector<torch::Tensor>> StashPolicy::backwardWeights(int64_t mb, int64_t /*lag*/) const {
  const std::vector<torch::Tensor>* w = versions_.weightsFor(mb);
  if (!w) return std::nullopt;
  return *w;
}

void StashPolicy::onBackwardDone(int64_t mb, int64_t shadowVersion) {
  if (shadowVersion >= 0) collectGrads(shadows_.at(shadowVersion));
  versions_.onBackwardDone(mb);
  if (shadowVersion >= 0) releaseShadows();
}

bool StashPolicy::beforeStep(bool /*asyncPhase*/) {
  if (auto sh = shadows_.find(versions_.currentVersion()); sh != shadows_.end()) {
    // Copy-on-write as in WeightVersions::beforeStep, the other way round: the shadow keeps this
    // version's storage (its kept graphs saved those tensors) and becomes the stash; the live
    // weights move to a copy, which the step changes. No graph holds the live weights now: every
    // microbatch in flight across this step went forward on the shadow.
    torch::NoGradGuard ng;
    for (auto& p : params_) p.set_data(p.data().clone());
    versions_.adopt(sh->second.params);
  }
  versions_.beforeStep(params_);
  return true;
}

void StashPolicy::save(torch::serialize::OutputArchive& a) const {
  torch::serialize::OutputArchive v;
  versions_.save(v);
  a.write("versions", v);
}

void StashPolicy::load(torch::serialize::InputArchive& a) {
  torch::serialize::InputArchive v;
  a.read("versions", v);
  versions_.load(v);
}

StashPolicy::Shadow& StashPolicy::shadowOfCurrentVersion() {
  const int64_t v = versions_.currentVersion();
  auto it = shadows_.find(v);
  if (it != shadows_.end()) return it->second;
  Shadow sh;
  if (!freeShadows_.empty()) {
    sh = std::move(freeShadows_.back());
    freeShadows_.pop_back();
  } else {
    sh.module = fresh_();
    torch::NoGradGuard ng;
    auto mine = sh.module->buffers(), live = live_->buffers();
    if (mine.size() != live.size()) throw EngineError("weight stash", "shadow module does not match the stage's buffers");
    for (size_t i = 0; i < mine.size(); ++i) mine[i].set_(live[i]);
    sh.params = sh.module->parameters();
    if (sh.params.size() != params_.size()) throw EngineError("weight stash", "shadow module does not match the stage's parameters");
  }
  {
    // Until the step the shadow shares the live weights' storage (no copy); see beforeStep().
    torch::NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) sh.params[i].set_(params_[i]);
  }
  return shadows_.emplace(v, std::move(sh)).first->second;
}

void StashPolicy::collectGrads(Shadow& sh) {
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

void StashPolicy::releaseShadows() {
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

void TwoVersionPolicy::afterStep(bool asyncPhase) {
  if (versionsHeld() > 2)
    throw EngineError("pipedream-2bw", "the stage holds " + std::to_string(versionsHeld()) +
                                           " weight versions; 2bw keeps at most two (pipeline.update_interval must be >= the stages)");
  StashPolicy::afterStep(asyncPhase);
}

PipeMarePolicy::PipeMarePolicy(const StagePlan& plan, std::vector<torch::Tensor>& params) : params_(params) {
  if (plan.t2()) t2_ = std::make_unique<DiscrepancyCorrector>(plan.t2Decay(), static_cast<double>(plan.stageDelay()));
}

std::optional<std::vector<torch::Tensor>> PipeMarePolicy::backwardWeights(int64_t /*mb*/, int64_t lag) const {
  if (t2_ && lag > 0) return t2_->estimate(params_, lag);
  return std::nullopt;
}

bool PipeMarePolicy::beforeStep(bool asyncPhase) {
  if (t2_ && asyncPhase) beforeStep_ = cloneAll(params_);
  return false;
}

void PipeMarePolicy::afterStep(bool asyncPhase) {
  if (t2_ && asyncPhase) {
    t2_->update(beforeStep_, params_);
    beforeStep_.clear();
  }
  versions_.afterStep();
}

void PipeMarePolicy::sampleForwardWeights(int64_t mb) { gapSamples_[mb] = cloneAll(params_); }

void PipeMarePolicy::measureGap(int64_t mb, const std::vector<torch::Tensor>& live, int64_t lag, StageMeter& meter) {
  auto sample = gapSamples_.find(mb);
  if (sample == gapSamples_.end()) return;
  // ||w_fwd - w_bkwd|| / ||w_fwd|| without T2 (current weights) and with T2 (estimate).
  meter.noteGap(relativeGap(sample->second, live), relativeGap(sample->second, t2_ ? t2_->estimate(live, lag) : live));
  gapSamples_.erase(sample);
}

void PipeMarePolicy::save(torch::serialize::OutputArchive& a) const {
  torch::serialize::OutputArchive v;
  versions_.save(v);
  a.write("versions", v);
  if (t2_) {
    torch::serialize::OutputArchive t;
    t2_->save(t);
    a.write("t2", t);
  }
}

void PipeMarePolicy::load(torch::serialize::InputArchive& a) {
  torch::serialize::InputArchive v;
  a.read("versions", v);
  versions_.load(v);
  if (t2_) {
    torch::serialize::InputArchive t;
    a.read("t2", t);
    t2_->load(t);
  }
}

}  // namespace pm
