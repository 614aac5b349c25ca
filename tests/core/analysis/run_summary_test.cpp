// The Compare view's and `pipemare compare`'s per-run figures (core/analysis/run_summary).
#include <gtest/gtest.h>

#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"

#include <cmath>

// A run whose ranks hold two stages each (zb-v on 2 ranks): a rank's utilization is its stages'
// summed (they share one thread) and its peak memory their peaks summed (one device); the mean and
// the largest are over ranks. The same figures with one stage per rank are the stages' own.
TEST(RunSummary, RanksHoldingSeveralStagesAreSummedPerRank) {
  pm::RunData d;
  d.record.id = 7;
  d.record.stage_ranks = {0, 1, 1, 0};
  const double util[] = {0.40, 0.30, 0.35, 0.45};
  const double peak[] = {10, 20, 30, 15};
  for (int s = 0; s < 4; ++s) {
    d.utilization.push_back({s, 5, util[s]});
    d.memPeak.push_back({s, 3, peak[s] - 1});
    d.memPeak.push_back({s, 5, peak[s]});
  }
  const pm::RunSummary chunked = pm::summarizeRun(d, 0.8);
  EXPECT_NEAR(chunked.values[static_cast<size_t>(pm::SummaryField::Utilization)], (0.85 + 0.65) / 2, 1e-12);
  EXPECT_NEAR(chunked.values[static_cast<size_t>(pm::SummaryField::PeakMemory)], 50, 1e-12);  // rank 1: 20 + 30

  d.record.stage_ranks = {0, 1, 2, 3};
  const pm::RunSummary one = pm::summarizeRun(d, 0.8);
  EXPECT_NEAR(one.values[static_cast<size_t>(pm::SummaryField::Utilization)], 0.375, 1e-12);
  EXPECT_NEAR(one.values[static_cast<size_t>(pm::SummaryField::PeakMemory)], 30, 1e-12);
}

// A run stopped and resumed twice: paused 50 s before the resume at wall 200 and 30 s more before
// the one at 300 (the store keeps the running total, 50 then 80). Training time leaves out the
// pauses before each point; the wall clock keeps them; time to target counts training only.
TEST(RunData, TrainingTimeLeavesEachResumesPauseOut) {
  pm::RunData d;
  d.t0 = 100;
  d.pauses = {{10, 200, 50}, {20, 300, 80}};
  EXPECT_DOUBLE_EQ(pm::trainingTime(d, 150), 50);   // first session
  EXPECT_DOUBLE_EQ(pm::trainingTime(d, 210), 60);   // after the first resume
  EXPECT_DOUBLE_EQ(pm::trainingTime(d, 310), 130);  // after the second
  const std::vector<pm::MetricPoint> acc = {{5, 150, 0.5}, {15, 260, 0.9}, {25, 320, 0.95}};
  d.metrics["eval/accuracy"] = acc;
  const auto training = pm::xValues(d, acc, pm::XAxis::TrainingTime);
  const auto clock = pm::xValues(d, acc, pm::XAxis::WallClock);
  ASSERT_EQ(training.size(), 3u);
  EXPECT_DOUBLE_EQ(training[1], 110);
  EXPECT_DOUBLE_EQ(clock[1], 160);
  EXPECT_DOUBLE_EQ(clock[2] - training[2], 80);
  const pm::RunSummary s = pm::summarizeRun(d, 0.8);
  EXPECT_DOUBLE_EQ(s.value(pm::SummaryField::TimeToTarget), 110);
  EXPECT_STREQ(pm::xAxisName(pm::XAxis::TrainingTime), "training time (s)");
}

// A run's duration is its time from start to end (or now, while it runs) less its pauses.
TEST(RunData, TrainingDurationLeavesThePausesOut) {
  pm::RunRecord r;
  r.started_at = 1000;
  r.finished_at = 1300;
  r.paused_s = 100;
  r.status = pm::RunStatus::Finished;
  EXPECT_DOUBLE_EQ(pm::trainingDuration(r, 5000), 200);
  r.finished_at = 0;
  r.status = pm::RunStatus::Running;
  EXPECT_DOUBLE_EQ(pm::trainingDuration(r, 1400), 300);
  r.status = pm::RunStatus::Stopped;  // no end recorded, not running: no duration
  EXPECT_TRUE(std::isnan(pm::trainingDuration(r, 1400)));
  r.started_at = 0;
  r.status = pm::RunStatus::Running;
  EXPECT_TRUE(std::isnan(pm::trainingDuration(r, 1400)));
}
