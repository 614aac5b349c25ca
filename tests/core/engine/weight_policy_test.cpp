// WeightPolicy: which weights each schedule's backward sees and what it keeps, driven through
// forwards, backwards and steps on one-parameter stages.
#include <gtest/gtest.h>

#include <cmath>

#include "core/engine/stage_meter.h"
#include "core/engine/weight_policy.h"
#include "core/util/errors.h"

using namespace pm;

namespace {

// A stage of one 1x1 linear layer (weight and bias, 4 bytes each) whose "step" adds `by` to every
// parameter, as an optimizer's update would, between beforeStep and afterStep.
struct Stage {
  torch::nn::Sequential module{torch::nn::Linear(1, 1)};
  std::vector<torch::Tensor> params = module->parameters();
  Stage() {
    torch::NoGradGuard ng;
    for (auto& p : params) p.fill_(1.0);
  }
  StageModuleFactory factory() {
    return [] { return torch::nn::Sequential(torch::nn::Linear(1, 1)); };
  }
  void step(WeightPolicy& policy, double by, bool asyncPhase = true) {
    policy.beforeStep(asyncPhase);
    {
      torch::NoGradGuard ng;
      for (auto& p : params) p.add_(by);
    }
    policy.afterStep(asyncPhase);
  }
  double value() const { return params[0].item<double>(); }
};

double valueOf(const std::optional<std::vector<torch::Tensor>>& w) { return w ? (*w)[0].item<double>() : NAN; }

Experiment pipemare(bool t2) {
  Experiment e;
  e.pipeline.schedule = ScheduleKind::PipeMare;
  e.pipeline.stages = 3;
  e.pipeline.microbatches = 1;
  e.data.batch_size = 8;
  e.training.steps = 20;
  e.pipemare.t2 = t2;
  e.pipemare.decay = 0.5;
  return e;
}

}  // namespace

TEST(WeightPolicy, SyncNeverKeepsAVersion) {
  Stage s;
  SyncPolicy p;
  p.onForward(0);
  s.step(p, 1.0);
  EXPECT_EQ(p.delayOf(0), 0);
  EXPECT_FALSE(p.backwardWeights(0, 0).has_value());
  EXPECT_EQ(p.versionsHeld(), 1);
  EXPECT_EQ(p.stashBytes(), 0);
}

// PipeDream: each backward uses the version its forward ran on; a version is kept while a
// microbatch refers to it, and released with its last backward.
TEST(WeightPolicy, StashGivesEachBackwardItsForwardsVersion) {
  Stage s;
  StashPolicy p(s.module, s.params, s.factory());
  struct Row {
    const char* event;  // F<mb>, B<mb>, S (a step adding 1)
    int64_t versionsHeld;
    int64_t stashBytes;
  };
  // weight and bias: 8 bytes a version. Version 0 serves microbatches 0 and 1, version 1 microbatch 2.
  const std::vector<Row> rows{{"F0", 1, 0}, {"F1", 1, 0}, {"S", 2, 8}, {"F2", 2, 8}, {"S", 3, 16},
                              {"B0", 3, 16}, {"B1", 2, 8}, {"B2", 1, 0}};
  std::map<int64_t, double> forwardValue;
  for (const Row& r : rows) {
    const std::string ev = r.event;
    if (ev[0] == 'F') {
      const int64_t mb = ev[1] - '0';
      p.onForward(mb);
      forwardValue[mb] = s.value();
    } else if (ev[0] == 'B') {
      const int64_t mb = ev[1] - '0';
      const auto w = p.backwardWeights(mb, p.delayOf(mb));
      if (p.delayOf(mb) == 0) EXPECT_FALSE(w.has_value()) << ev;
      else EXPECT_DOUBLE_EQ(valueOf(w), forwardValue[mb]) << ev;
      p.onBackwardDone(mb, -1);
    } else {
      s.step(p, 1.0);
    }
    EXPECT_EQ(p.versionsHeld(), r.versionsHeld) << "after " << ev;
    EXPECT_EQ(p.stashBytes(), r.stashBytes) << "after " << ev;
  }
  EXPECT_DOUBLE_EQ(s.value(), 3.0);
}

// A graph kept on the shadow of its version: the shadow shares the live weights until the step,
// then keeps the old values while the live weights move on.
TEST(WeightPolicy, ShadowKeepsItsVersionAcrossTheStep) {
  Stage s;
  StashPolicy p(s.module, s.params, s.factory());
  p.onForward(0);
  int64_t version = -1;
  torch::nn::Sequential* shadow = p.keepGraphOn(0, version);
  ASSERT_NE(shadow, nullptr);
  EXPECT_EQ(version, 0);
  EXPECT_DOUBLE_EQ((*shadow)->parameters()[0].item<double>(), 1.0);
  s.step(p, 1.0);
  EXPECT_DOUBLE_EQ((*shadow)->parameters()[0].item<double>(), 1.0) << "the shadow is version 0's stash";
  EXPECT_DOUBLE_EQ(s.value(), 2.0);
  EXPECT_EQ(p.versionsHeld(), 2);
  // The shadow's gradients are added to the live ones at the backward.
  (*shadow)->parameters()[0].mutable_grad() = torch::full({1, 1}, 0.5);
  p.onBackwardDone(0, version);
  ASSERT_TRUE(s.params[0].grad().defined());
  EXPECT_DOUBLE_EQ(s.params[0].grad().item<double>(), 0.5);
  EXPECT_EQ(p.versionsHeld(), 1);
}

// 2BW holds at most two versions; a third is an error, not a silent third stash.
TEST(WeightPolicy, TwoVersionsAtMost) {
  Stage s;
  TwoVersionPolicy p(s.module, s.params, s.factory());
  p.onForward(0);
  s.step(p, 1.0);
  EXPECT_EQ(p.versionsHeld(), 2);
  p.onForward(1);
  EXPECT_THROW(s.step(p, 1.0), EngineError);
  StashPolicy unbounded(s.module, s.params, s.factory());
  unbounded.onForward(0);
  s.step(unbounded, 1.0);
  unbounded.onForward(1);
  EXPECT_NO_THROW(s.step(unbounded, 1.0));
  EXPECT_EQ(unbounded.versionsHeld(), 3);
}

// PipeMare stashes nothing: a stale backward uses the live weights, or with T2 the estimate
// w - lag * delta, delta = gamma delta + (1 - gamma)(w_new - w_old), gamma = D^(1/tau).
TEST(WeightPolicy, PipeMareUsesLiveWeightsOrT2Estimate) {
  for (const bool t2 : {false, true}) {
    Stage s;
    const StagePlan plan(pipemare(t2), 0, 3, 64, 0);
    ASSERT_EQ(plan.stageDelay(), 2);
    PipeMarePolicy p(plan, s.params);
    EXPECT_EQ(p.t2() != nullptr, t2);
    p.onForward(0);
    s.step(p, 1.0);
    s.step(p, 1.0);
    EXPECT_EQ(p.delayOf(0), 2);
    EXPECT_EQ(p.stashBytes(), 0);
    EXPECT_EQ(p.versionsHeld(), 1);
    const auto w = p.backwardWeights(0, 2);
    if (!t2) {
      EXPECT_FALSE(w.has_value());
      continue;
    }
    const double gamma = std::pow(0.5, 1.0 / 2.0);
    const double delta = gamma * (1 - gamma) * 1.0 + (1 - gamma) * 1.0;  // two steps of +1
    EXPECT_NEAR(valueOf(w), s.value() - 2 * delta, 1e-6);
    EXPECT_EQ(p.deltaBytes(), 8);
    EXPECT_FALSE(p.backwardWeights(0, 0).has_value()) << "no lag, nothing to correct";
  }
}

// T2 changes delta only in the asynchronous phase (the warm-up's steps are synchronous).
TEST(WeightPolicy, T2IgnoresWarmupSteps) {
  Stage s;
  const StagePlan plan(pipemare(true), 0, 3, 64, 0);
  PipeMarePolicy p(plan, s.params);
  s.step(p, 5.0, /*asyncPhase=*/false);
  EXPECT_TRUE(p.t2()->delta().empty()) << "delta starts at the first asynchronous step";
  s.step(p, 1.0, /*asyncPhase=*/true);
  ASSERT_EQ(p.t2()->delta().size(), 2u);
  EXPECT_NEAR(p.t2()->delta()[0].item<double>(), 1.0 - std::pow(0.5, 1.0 / 2.0), 1e-6) << "(1 - gamma) * the +1 step only";
}

// The weight gap of a sampled microbatch: ||w_fwd - w|| / ||w_fwd||, reported by the meter.
TEST(WeightPolicy, PipeMareMeasuresTheWeightGap) {
  Stage s;
  const StagePlan plan(pipemare(false), 0, 3, 64, 0);
  PipeMarePolicy p(plan, s.params);
  StageMeter meter(false, 0.0);
  p.onForward(0);
  p.sampleForwardWeights(0);
  s.step(p, 1.0);
  p.measureGap(0, s.params, 1, meter);
  Json st;
  meter.closeWindow(st, 1.0, true, 2, 1);
  // w_fwd = (1, 1), w = (2, 2): gap = sqrt(2) / sqrt(2) = 1.
  ASSERT_TRUE(st.contains("weight_gap"));
  EXPECT_NEAR(st["weight_gap"].get<double>(), 1.0, 1e-6);
  EXPECT_NEAR(st["weight_gap_t2"].get<double>(), 1.0, 1e-6);
  Json next;
  meter.closeWindow(next, 2.0, true, 2, 1);
  EXPECT_FALSE(next.contains("weight_gap")) << "a sample is measured once";
}
