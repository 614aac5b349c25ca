#include <gtest/gtest.h>

#include <cmath>

#include "core/engine/lr_schedule.h"

using namespace pm;

TEST(LrSchedule, ConstantStepCosineWarmup) {
  OptimizerConfig o;
  o.lr = 0.1;
  EXPECT_DOUBLE_EQ(baseLearningRate(o, 500, 1000), 0.1);
  o.schedule.name = LrScheduleType::Step;
  o.schedule.step_size = 100;
  o.schedule.gamma = 0.5;
  EXPECT_DOUBLE_EQ(baseLearningRate(o, 99, 1000), 0.1);
  EXPECT_DOUBLE_EQ(baseLearningRate(o, 250, 1000), 0.025);
  o.schedule.name = LrScheduleType::Cosine;
  o.schedule.min_lr = 0.0;
  EXPECT_NEAR(baseLearningRate(o, 0, 1001), 0.1, 1e-12);
  EXPECT_NEAR(baseLearningRate(o, 500, 1001), 0.05, 1e-12);
  EXPECT_NEAR(baseLearningRate(o, 1000, 1001), 0.0, 1e-12);  // the last step of 1001 reaches the floor
  // With a warm-up and a floor: the peak once (the warm-up's last step), then down to min_lr at the
  // last step (it does not stop above it, e.g. at 0.0145, nor repeat the peak).
  o.schedule.min_lr = 0.01;
  o.schedule.warmup_steps = 3;
  EXPECT_NEAR(baseLearningRate(o, 2, 10), 0.1, 1e-12);
  EXPECT_LT(baseLearningRate(o, 3, 10), 0.1);
  EXPECT_NEAR(baseLearningRate(o, 9, 10), 0.01, 1e-12);
  o.schedule.warmup_steps = 0;
  o.schedule.min_lr = 0.0;
  o.schedule.name = LrScheduleType::LinearWarmup;
  o.schedule.warmup_steps = 10;
  EXPECT_NEAR(baseLearningRate(o, 4, 1000), 0.05, 1e-12);
  EXPECT_NEAR(baseLearningRate(o, 10, 1000), 0.1, 1e-12);
  o.schedule.name = LrScheduleType::InverseSqrt;
  EXPECT_NEAR(baseLearningRate(o, 39, 1000), 0.1 * std::sqrt(10.0 / 40.0), 1e-12);
}

TEST(LrSchedule, T1Formula) {
  // lr * tau^-(1 - k/K): starts at lr/tau, anneals to lr at K, stays there.
  EXPECT_NEAR(t1LearningRate(0.1, 4.0, 0, 100), 0.025, 1e-12);
  EXPECT_NEAR(t1LearningRate(0.1, 4.0, 50, 100), 0.1 * std::pow(4.0, -0.5), 1e-12);
  EXPECT_NEAR(t1LearningRate(0.1, 4.0, 100, 100), 0.1, 1e-12);
  EXPECT_NEAR(t1LearningRate(0.1, 4.0, 1000, 100), 0.1, 1e-12);
  EXPECT_NEAR(t1LearningRate(0.1, 1.0, 0, 100), 0.1, 1e-12);  // tau <= 1: no scaling
}

TEST(LrSchedule, T1AnnealLength) {
  PipeMareConfig pm;
  EXPECT_EQ(t1AnnealSteps(pm, 469), 469);  // default: one epoch of updates
  pm.anneal_epochs = 3;
  EXPECT_EQ(t1AnnealSteps(pm, 469), 1407);
  pm.anneal_epochs = 0.5;
  EXPECT_EQ(t1AnnealSteps(pm, 469), 235);  // rounded to the nearest step
  pm.anneal_epochs = 0.001;
  EXPECT_EQ(t1AnnealSteps(pm, 469), 1);  // never 0 (0 would mean no annealing)
  pm.anneal_epochs = 0;
  pm.anneal_steps = 40;
  EXPECT_EQ(t1AnnealSteps(pm, 469), 40);
  EXPECT_EQ(t1AnnealSteps(PipeMareConfig{}, 0), 1);
}
