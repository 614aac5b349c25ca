// The Compare view's and `pipemare compare`'s per-run figures (core/analysis/run_summary).
#include <gtest/gtest.h>

#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"

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
