// The speedup breakdown: per-stage compute per minibatch from windowed stage metrics, and the
// factors of a measured speedup.
#include <gtest/gtest.h>

#include <cmath>

#include "core/analysis/speedup_breakdown.h"

using namespace pm;

TEST(SpeedupBreakdown, ComputePerMinibatchIsTheMedianWindowLeavingOutStartUp) {
  // Stage 0: windows of 2 minibatches; the first (start-up) is slow and ignored.
  // Stage 1: windows of unequal length; one outlier window (an evaluation) is outvoted.
  std::vector<StageMetricPoint> pts = {
      {0, 2, 9.0}, {0, 4, 0.40}, {0, 6, 0.42}, {0, 8, 0.38},
      {1, 1, 5.0}, {1, 3, 1.0},  {1, 6, 1.5},  {1, 8, 3.0},  {1, 9, 0.5},
  };
  const auto c = computePerMinibatch(pts, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_NEAR(c[0], 0.20, 1e-12);  // median of 0.20, 0.21, 0.19
  EXPECT_NEAR(c[1], 0.50, 1e-12);  // median of 0.5, 0.5, 1.5, 0.5
  EXPECT_TRUE(std::isnan(c[2]));   // no points
}

TEST(SpeedupBreakdown, FactorsMultiplyToTheMeasuredRatio) {
  // Stages of 18.9 and 21.8 ms per microbatch-equivalent, one stage alone 38 ms.
  const std::vector<double> c = {0.189, 0.218};
  const auto gpipe = breakdownSpeedup(c, 0.38, true, 8, 1.50);
  EXPECT_NEAR(gpipe.balanceBound, 0.407 / 0.218, 1e-12);
  EXPECT_NEAR(gpipe.fill, 8.0 / 9.0, 1e-12);
  EXPECT_NEAR(gpipe.computeInflation, 0.407 / 0.38, 1e-12);
  EXPECT_NEAR(gpipe.expected, gpipe.balanceBound * gpipe.fill / gpipe.computeInflation, 1e-12);
  EXPECT_NEAR(gpipe.expected * gpipe.efficiency, 1.50, 1e-12);
  const auto mare = breakdownSpeedup(c, 0.38, false, 8, 1.70);
  EXPECT_EQ(mare.fill, 1.0);
  EXPECT_NEAR(mare.expected, 0.38 / 0.218, 1e-12);
  // Equal stages without inflation: the bound is P.
  EXPECT_NEAR(breakdownSpeedup({1, 1, 1}, 3, false, 4, 3).efficiency, 1.0, 1e-12);
}

TEST(SpeedupBreakdown, MissingInputsGiveNaNNotNumbers) {
  EXPECT_TRUE(std::isnan(breakdownSpeedup({0.1, NAN}, 0.2, false, 4, 1.5).expected));
  EXPECT_TRUE(std::isnan(breakdownSpeedup({0.1, 0.1}, 0.0, false, 4, 1.5).efficiency));
  EXPECT_TRUE(std::isnan(breakdownSpeedup({}, 0.2, true, 4, 1.5).balanceBound));
}

// Two runs side by side: A trains from t = 10 to 30 at 100 samples/s while B runs, then alone
// at 150 until t = 40; B starts late (t = 14) at 80 samples/s and stops at 30. Only [14, 30]
// counts: A 100, B 80 (A's solo tail and B's late start are left out).
TEST(SpeedupBreakdown, SideBySideRatesCountOnlyTheCommonWindow) {
  std::vector<std::pair<double, double>> a, b;
  for (int t = 10; t <= 40; t += 2) a.push_back({t, t <= 30 ? 100.0 * (t - 10) : 2000 + 150.0 * (t - 30)});
  for (int t = 14; t <= 30; t += 2) b.push_back({t, 80.0 * (t - 14)});
  const auto r = sideBySideRates({a, b});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0], 100.0, 1e-9);
  EXPECT_NEAR(r[1], 80.0, 1e-9);
  // Over their whole spans A would read (2000 + 1500) / 30 = 116.7: more than it ran side by side.
  EXPECT_GT((a.back().second - a.front().second) / (a.back().first - a.front().first), 110.0);
  // Runs that never overlapped give no figure.
  const std::vector<std::pair<double, double>> late = {{50, 0}, {52, 200}};
  for (double v : sideBySideRates({a, late})) EXPECT_TRUE(std::isnan(v));
  for (double v : sideBySideRates({a, {}})) EXPECT_TRUE(std::isnan(v));
}
