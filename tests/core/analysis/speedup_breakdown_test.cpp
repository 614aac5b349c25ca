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
