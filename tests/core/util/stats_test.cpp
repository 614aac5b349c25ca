// The statistics of the study's rounds: medians that skip what was not measured, the median
// round, each round's ratio against its own round's baseline.
#include "core/util/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pm {

TEST(Stats, MedianSkipsWhatWasNotMeasured) {
  EXPECT_DOUBLE_EQ(median({3, NAN, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_TRUE(std::isnan(median({NAN})));
}

TEST(Stats, TheMedianRoundIsAMeasuredOneTheLowerOfTwoMiddles) {
  EXPECT_EQ(medianIndex({5, 1, 3}), 2u);
  EXPECT_EQ(medianIndex({4, 1, 2, 3}), 2u);  // 2 and 3 in the middle: the lower, round 2
  EXPECT_EQ(medianIndex({NAN, 7, NAN}), 1u);
  EXPECT_EQ(medianIndex({}), 0u);
}

TEST(Stats, EachRoundIsTakenAgainstItsOwnBaseline) {
  // Round 1's baseline was slow (80): its subject's 160 is still 2x; round 2 has no baseline and
  // takes the median of the others (100).
  const std::vector<double> base{100, 80, NAN}, rates{190, 160, 210};
  const std::vector<double> r = perRoundRatios(rates, base);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0], 1.9);
  EXPECT_DOUBLE_EQ(r[1], 2.0);
  EXPECT_DOUBLE_EQ(r[2], 210 / 90.0);
  EXPECT_DOUBLE_EQ(roundBaseline(base, 7), 90);  // beyond the rounds measured: the median
}

}  // namespace pm
