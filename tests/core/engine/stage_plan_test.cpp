// StagePlan: what a stage does, decided from the configuration alone (no tensors).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/engine/stage_plan.h"

using namespace pm;

namespace {

Experiment pipeline(const std::string& schedule, int P, int N, int64_t steps, int batch = 8) {
  Experiment e;
  e.pipeline.schedule = scheduleFromName(schedule);
  e.pipeline.stages = P;
  e.pipeline.microbatches = N;
  e.data.batch_size = batch;
  e.training.steps = steps;
  e.optimizer.lr = 0.1;
  return e;
}

int count(const std::vector<StageOp>& ops, OpKind kind, ActionKind act = ActionKind::Step) {
  int n = 0;
  for (const auto& op : ops) n += op.kind == kind && (kind != OpKind::Act || op.act.kind == act);
  return n;
}

}  // namespace

// The stage's delay for each schedule and stage: 0 for the synchronous ones; for pipedream and
// pipemare the software 1F1B's ceil((P-1-s)/u) steps (u microbatches per step: pipemare steps
// once per minibatch of N).
TEST(StagePlan, StageDelayPerScheduleAndStage) {
  struct Row {
    std::string schedule;
    int P, N, u;
    std::vector<int64_t> delays;  // per stage
  };
  for (const Row& r : {Row{"gpipe", 4, 2, 1, {0, 0, 0, 0}}, Row{"1f1b", 4, 2, 1, {0, 0, 0, 0}},
                       Row{"pipedream", 4, 2, 1, {3, 2, 1, 0}}, Row{"pipemare", 4, 1, 1, {3, 2, 1, 0}},
                       Row{"pipemare", 5, 2, 2, {2, 2, 1, 1, 0}}, Row{"pipedream-2bw", 4, 2, 4, {1, 1, 1, 0}}}) {
    Experiment e = pipeline(r.schedule, r.P, r.N, 12);
    e.pipeline.update_interval = r.u;
    for (int s = 0; s < r.P; ++s) {
      const StagePlan plan(e, s, r.P, 1024, 0);
      EXPECT_EQ(plan.stageDelay(), r.delays[static_cast<size_t>(s)]) << r.schedule << " P=" << r.P << " stage " << s;
      EXPECT_EQ(plan.asynchronous(), r.schedule != "gpipe" && r.schedule != "1f1b") << r.schedule;
    }
  }
}

// Every microbatch goes forward and backward once on every stage; one bookkeeping per minibatch;
// the evaluation passes follow the bookkeeping of the minibatches that end an epoch.
TEST(StagePlan, OperationListCoversEveryMicrobatchOnce) {
  for (const std::string schedule : {"gpipe", "1f1b", "zb-h1", "pipedream", "pipedream-2bw", "pipemare"}) {
    Experiment e = pipeline(schedule, 3, 2, 0);
    e.pipeline.update_interval = schedule == "pipedream-2bw" ? 4 : 1;
    const bool split = schedule == "zb-h1";
    e.training.epochs = 2;
    for (int s = 0; s < 3; ++s) {
      const StagePlan plan(e, s, 3, 64, 300);  // 8 steps per epoch; 300 eval samples = 2 batches of 256
      const auto& ops = plan.ops();
      EXPECT_EQ(plan.training().totalSteps(), 16);
      EXPECT_EQ(count(ops, OpKind::Act, ActionKind::Forward), 32) << schedule << " stage " << s;
      EXPECT_EQ(count(ops, OpKind::Act, ActionKind::Backward), split ? 0 : 32) << schedule << " stage " << s;
      EXPECT_EQ(count(ops, OpKind::Act, ActionKind::BackwardInput), split ? 32 : 0) << schedule << " stage " << s;
      EXPECT_EQ(count(ops, OpKind::Act, ActionKind::BackwardWeight), split ? 32 : 0) << schedule << " stage " << s;
      EXPECT_EQ(count(ops, OpKind::MinibatchDone), 16) << schedule;
      EXPECT_EQ(count(ops, OpKind::EvalBatch), 2 * 2) << schedule;  // two epochs, two batches each
      int64_t expected = 0;
      for (const auto& op : ops)
        if (op.kind == OpKind::MinibatchDone) {
          EXPECT_EQ(op.arg, expected++) << schedule;
        }
      EXPECT_EQ(plan.ops(s).size(), ops.size());
    }
  }
}

// T1: in pipemare's asynchronous phase the learning rate is lr * tau^-(1 - k/K), back to lr after
// K steps; the synchronous warm-up and the other schedules keep the optimizer's rate.
TEST(StagePlan, LearningRateWithT1AndWarmup) {
  Experiment e = pipeline("pipemare", 4, 1, 40);
  e.pipemare.t1 = true;
  e.pipemare.anneal_steps = 10;
  e.pipemare.warmup_epochs = 0.5;  // of 8 steps per epoch (64 samples / 8): 4 warm-up steps
  const StagePlan first(e, 0, 4, 64, 0), last(e, 3, 4, 64, 0);
  EXPECT_EQ(first.warmupMinibatches(), 4);
  EXPECT_EQ(first.stageDelay(), 3);
  struct Row {
    int64_t k;
    double lrStage0;
  };
  for (const Row& r : {Row{0, 0.1}, Row{3, 0.1}, Row{4, 0.1 / 3.0}, Row{9, 0.1 * std::pow(3.0, -0.5)}, Row{14, 0.1}, Row{30, 0.1}}) {
    EXPECT_NEAR(first.learningRate(r.k), r.lrStage0, 1e-12) << "step " << r.k;
    EXPECT_DOUBLE_EQ(last.learningRate(r.k), 0.1) << "the last stage has no delay, step " << r.k;
  }
  EXPECT_FALSE(first.isAsyncMb(3));
  EXPECT_TRUE(first.isAsyncMb(4));
  EXPECT_FALSE(first.asyncStep(3));
  EXPECT_TRUE(first.asyncStep(4));
  Experiment g = pipeline("gpipe", 4, 1, 40);
  g.pipemare.t1 = true;
  EXPECT_DOUBLE_EQ(StagePlan(g, 0, 4, 64, 0).learningRate(5), 0.1);
}

// Delay-scaled momentum: m - tau/(1+tau) (at least 0) from the first asynchronous step, the
// configured momentum before; unchanged (-1) for other optimizers and modes.
TEST(StagePlan, DelayScaledMomentum) {
  Experiment e = pipeline("pipemare", 3, 1, 20);
  e.optimizer.momentum = 0.9;
  e.pipemare.momentum_mode = MomentumMode::DelayScaled;
  e.pipemare.warmup_epochs = 0.25;  // 8 steps per epoch: 2 warm-up steps
  const StagePlan s0(e, 0, 3, 64, 0), s1(e, 1, 3, 64, 0), s2(e, 2, 3, 64, 0);
  EXPECT_DOUBLE_EQ(s0.momentumAt(0), 0.9);
  EXPECT_NEAR(s0.momentumAt(2), 0.9 - 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(s1.momentumAt(2), 0.9 - 1.0 / 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(s2.momentumAt(2), 0.9);
  e.pipemare.momentum_mode = MomentumMode::Same;
  EXPECT_LT(StagePlan(e, 0, 3, 64, 0).momentumAt(2), 0);
  e.pipemare.momentum_mode = MomentumMode::DelayScaled;
  e.optimizer.name = OptimizerType::Adam;
  EXPECT_LT(StagePlan(e, 0, 3, 64, 0).momentumAt(2), 0);
}

// The samples each step averages over: the minibatch for gpipe and pipemare, the update_interval
// microbatches for pipedream and 2bw (cut at the end of the run).
TEST(StagePlan, StepSamplesPerSchedule) {
  struct Row {
    std::string schedule;
    int u;
    int64_t mb, samples;
  };
  // batch 10 in N = 4 microbatches of 3, 3, 2, 2; 3 steps = 12 microbatches.
  for (const Row& r : {Row{"gpipe", 1, 5, 10}, Row{"pipemare", 1, 7, 10}, Row{"pipedream", 1, 0, 3}, Row{"pipedream", 1, 3, 2},
                       Row{"pipedream", 2, 2, 4}, Row{"pipedream-2bw", 8, 1, 20}, Row{"pipedream-2bw", 8, 9, 10}}) {
    Experiment e = pipeline(r.schedule, 2, 4, 3, 10);
    e.pipeline.update_interval = r.u;
    EXPECT_EQ(StagePlan(e, 1, 2, 100, 0).stepSamples(r.mb), r.samples) << r.schedule << " u=" << r.u << " mb " << r.mb;
  }
}

// What a stale microbatch keeps: pipedream and 2bw keep its graph on a shadow (not with
// recompute, not on the last stage, which has no stale microbatch); pipemare recomputes it.
TEST(StagePlan, ShadowGraphsAndT2) {
  Experiment e = pipeline("pipedream", 3, 2, 6);
  EXPECT_TRUE(StagePlan(e, 0, 3, 64, 0).shadowGraphs());
  EXPECT_FALSE(StagePlan(e, 2, 3, 64, 0).shadowGraphs());
  e.pipeline.recompute = true;
  EXPECT_FALSE(StagePlan(e, 0, 3, 64, 0).shadowGraphs());
  Experiment m = pipeline("pipemare", 3, 1, 6);
  m.pipemare.t2 = true;
  EXPECT_FALSE(StagePlan(m, 0, 3, 64, 0).shadowGraphs());
  EXPECT_TRUE(StagePlan(m, 0, 3, 64, 0).t2());
  EXPECT_FALSE(StagePlan(m, 2, 3, 64, 0).t2()) << "no delay, nothing to correct";
  const StagePlan p0(m, 0, 3, 64, 0);
  int stale = 0;
  for (int64_t mb = 0; mb < 6; ++mb) stale += p0.staleAtBackward(mb);
  EXPECT_GT(stale, 0);
}
