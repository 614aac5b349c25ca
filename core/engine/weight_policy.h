#pragma once
// Which weights a stage's forwards and backwards see, and what the stage keeps for that: one
// policy per family of schedules (docs/engine.md, "Weights by schedule").
//   SyncPolicy        gpipe, 1f1b: one version; a step never falls between a forward and its backward.
//   StashPolicy       pipedream: the backward uses the version its forward used (weight stashing).
//                     A stale microbatch's forward runs on a shadow of its version, so its graph is
//                     kept across the step rather than recomputed.
//   TwoVersionPolicy  pipedream-2bw: stashing whose schedule (update_interval >= P) needs at most
//                     two versions; it holds the stage to that bound.
//   PipeMarePolicy    pipemare: no stash; the backward uses the current weights, or with T2 the
//                     estimate w - lag * delta of the forward's; the weight gap is sampled.
// A policy is told of every forward, backward and step and answers which weights to use; the
// executor does the arithmetic. Single-threaded (one per stage).
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/engine/stage_plan.h"
#include "core/engine/weight_versions.h"

namespace pm {

class StageMeter;

class WeightPolicy {
 public:
  virtual ~WeightPolicy() = default;

  // The forward of microbatch mb runs now, on the current weights.
  virtual void onForward(int64_t /*mb*/) {}
  // The module a stale microbatch's forward runs on so that its graph survives the steps before
  // its backward (the current version's shadow), with `version` set to that version; nullptr:
  // the live module.
  virtual torch::nn::Sequential* keepGraphOn(int64_t /*mb*/, int64_t& /*version*/) { return nullptr; }
  // Steps taken between mb's forward and now.
  virtual int64_t delayOf(int64_t /*mb*/) const { return 0; }
  // The weights a stale microbatch's backward recomputes its forward with; none: the live ones.
  virtual std::optional<std::vector<torch::Tensor>> backwardWeights(int64_t /*mb*/, int64_t /*lag*/) const {
    return std::nullopt;
  }
  // Whether a stale microbatch is recomputed ahead of its gradient's receive (with
  // backwardWeights), rather than at its backward.
  virtual bool recomputesAhead() const { return false; }
  // The backward of mb is done; shadowVersion: the shadow its graph was kept on (-1: none).
  virtual void onBackwardDone(int64_t /*mb*/, int64_t /*shadowVersion*/) {}
  // Around an optimizer step (asyncPhase: the step belongs to the asynchronous phase).
  // beforeStep returns whether the stage's memory changed (a version was stashed).
  virtual bool beforeStep(bool /*asyncPhase*/) { return false; }
  virtual void afterStep(bool /*asyncPhase*/) {}

  // pipemare: the forward weights of a sampled microbatch, and at its backward the gap between
  // them and the live weights, without and with T2's estimate (into the meter).
  virtual void sampleForwardWeights(int64_t /*mb*/) {}
  virtual void measureGap(int64_t /*mb*/, const std::vector<torch::Tensor>& /*live*/, int64_t /*lag*/, StageMeter& /*meter*/) {}

  virtual int64_t versionsHeld() const { return 1; }
  virtual int64_t stashBytes() const { return 0; }
  virtual int64_t deltaBytes() const { return 0; }
  // Checkpoints: the policy's state, under its own keys of the stage's archive.
  virtual void save(torch::serialize::OutputArchive& /*a*/) const {}
  virtual void load(torch::serialize::InputArchive& /*a*/) {}
};

// A fresh module of the stage's structure (on the stage's device, in training mode).
using StageModuleFactory = std::function<torch::nn::Sequential()>;

// The policy for `plan`'s schedule over the stage's live module and its parameters (kept by
// reference: both must outlive the policy).
std::unique_ptr<WeightPolicy> makeWeightPolicy(const StagePlan& plan, torch::nn::Sequential& live,
                                               std::vector<torch::Tensor>& params, StageModuleFactory fresh);

class SyncPolicy : public WeightPolicy {};

class StashPolicy : public WeightPolicy {
 public:
  StashPolicy(torch::nn::Sequential& live, std::vector<torch::Tensor>& params, StageModuleFactory fresh);
  void onForward(int64_t mb) override { versions_.onForward(mb); }
  torch::nn::Sequential* keepGraphOn(int64_t mb, int64_t& version) override;
  int64_t delayOf(int64_t mb) const override { return versions_.delayOf(mb); }
  std::optional<std::vector<torch::Tensor>> backwardWeights(int64_t mb, int64_t lag) const override;
  void onBackwardDone(int64_t mb, int64_t shadowVersion) override;
  bool beforeStep(bool asyncPhase) override;
  void afterStep(bool /*asyncPhase*/) override { versions_.afterStep(); }
  int64_t versionsHeld() const override { return versions_.versionsHeld(); }
  int64_t stashBytes() const override { return versions_.stashBytes(); }
  void save(torch::serialize::OutputArchive& a) const override;
  void load(torch::serialize::InputArchive& a) override;

 private:
  // A module of the stage's structure whose parameters share one version's storage and whose
  // buffers are the live module's (BatchNorm statistics are updated once, at the forward, as on
  // the live module). Until the step it shares the live weights; at the step the live weights
  // move to a copy and the shadow's become that version's stash (never written while
  // referenced). The backward differentiates its graph and adds its gradients to the live ones.
  // Shadows are reused once their version is released.
  struct Shadow {
    torch::nn::Sequential module;
    std::vector<torch::Tensor> params;
  };
  Shadow& shadowOfCurrentVersion();
  void collectGrads(Shadow& s);
  void releaseShadows();

  torch::nn::Sequential& live_;
  std::vector<torch::Tensor>& params_;
  StageModuleFactory fresh_;
  WeightVersions versions_;
  std::map<int64_t, Shadow> shadows_;  // version -> its shadow
  std::vector<Shadow> freeShadows_;
};

class TwoVersionPolicy : public StashPolicy {
 public:
  using StashPolicy::StashPolicy;
  // Throws EngineError when a step would leave more than two versions held.
  void afterStep(bool asyncPhase) override;
};

class PipeMarePolicy : public WeightPolicy {
 public:
  PipeMarePolicy(const StagePlan& plan, std::vector<torch::Tensor>& params);
  void onForward(int64_t mb) override { versions_.onForward(mb); }
  int64_t delayOf(int64_t mb) const override { return versions_.delayOf(mb); }
  std::optional<std::vector<torch::Tensor>> backwardWeights(int64_t mb, int64_t lag) const override;
  bool recomputesAhead() const override { return true; }
  void onBackwardDone(int64_t mb, int64_t /*shadowVersion*/) override { versions_.onBackwardDone(mb); }
  bool beforeStep(bool asyncPhase) override;
  void afterStep(bool asyncPhase) override;
  void sampleForwardWeights(int64_t mb) override;
  void measureGap(int64_t mb, const std::vector<torch::Tensor>& live, int64_t lag, StageMeter& meter) override;
  int64_t deltaBytes() const override { return t2_ ? t2_->bytes() : 0; }
  void save(torch::serialize::OutputArchive& a) const override;
  void load(torch::serialize::InputArchive& a) override;
  const DiscrepancyCorrector* t2() const { return t2_.get(); }

 private:
  std::vector<torch::Tensor>& params_;
  WeightVersions versions_;
  std::unique_ptr<DiscrepancyCorrector> t2_;
  std::vector<torch::Tensor> beforeStep_;  // T2: the weights before the step in progress
  std::map<int64_t, std::vector<torch::Tensor>> gapSamples_;  // w_fwd of sampled microbatches
};

}  // namespace pm
