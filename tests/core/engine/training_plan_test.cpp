#include <gtest/gtest.h>

#include <set>

#include "core/engine/training_plan.h"

using namespace pm;

TEST(TrainingPlan, StepsPerEpochDropsOnlyBatchesTooSmallToSplit) {
  Experiment e;
  e.data.batch_size = 10;
  e.pipeline.microbatches = 4;
  e.training.epochs = 2;
  EXPECT_EQ(TrainingPlan(e, 105).stepsPerEpoch(), 11);  // last batch of 5 >= N: kept
  EXPECT_EQ(TrainingPlan(e, 102).stepsPerEpoch(), 10);  // last batch of 2 < N: dropped
  EXPECT_EQ(TrainingPlan(e, 102).totalSteps(), 20);
  e.training.steps = 7;
  EXPECT_EQ(TrainingPlan(e, 102).totalSteps(), 7);
}

TEST(TrainingPlan, MinibatchesCoverTheEpochOnceAndReshuffle) {
  Experiment e;
  e.data.batch_size = 8;
  e.training.epochs = 2;
  TrainingPlan plan(e, 64);
  std::multiset<int64_t> seen;
  for (int64_t k = 0; k < 8; ++k)
    for (auto i : plan.minibatchIndices(k)) seen.insert(i);
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 64u);
  EXPECT_NE(plan.minibatchIndices(0), plan.minibatchIndices(8));  // epoch 2 is reshuffled
  TrainingPlan again(e, 64);
  EXPECT_EQ(plan.minibatchIndices(3), again.minibatchIndices(3));  // deterministic
}

TEST(TrainingPlan, EvalLogAndTraceRules) {
  Experiment e;
  e.data.batch_size = 10;
  e.training.epochs = 2;
  e.training.log_interval = 3;
  e.training.trace_steps = 2;
  TrainingPlan plan(e, 50);  // 5 steps per epoch, 10 in all
  EXPECT_TRUE(plan.evalDue(5));
  EXPECT_FALSE(plan.evalDue(4));
  EXPECT_TRUE(plan.evalDue(10));
  EXPECT_TRUE(plan.logDue(3));
  EXPECT_FALSE(plan.logDue(4));
  EXPECT_TRUE(plan.logDue(10));  // the last step is always logged
  EXPECT_TRUE(plan.traceDue(1));
  EXPECT_FALSE(plan.traceDue(2));
}

// Sizes without drawing the shuffle: they agree with minibatchIndices, and microbatches split as
// tensor_split splits (the first size % N one sample larger).
TEST(TrainingPlan, MinibatchAndMicrobatchSizes) {
  Experiment e;
  e.data.batch_size = 10;
  e.pipeline.microbatches = 4;
  e.training.epochs = 2;
  TrainingPlan plan(e, 105);  // 10 full minibatches and one of 5 per epoch
  for (int64_t k = 0; k < plan.totalSteps(); ++k)
    EXPECT_EQ(plan.minibatchSize(k), static_cast<int64_t>(plan.minibatchIndices(k).size())) << "minibatch " << k;
  const std::vector<int64_t> full{3, 3, 2, 2}, last{2, 1, 1, 1};
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.microbatchSize(i), full[static_cast<size_t>(i)]) << "microbatch " << i;
    EXPECT_EQ(plan.microbatchSize(10 * 4 + i), last[static_cast<size_t>(i)]) << "microbatch " << 40 + i;
    EXPECT_EQ(plan.microbatchSize(11 * 4 + i), full[static_cast<size_t>(i)]) << "microbatch " << 44 + i << " (epoch 2)";
  }
}
