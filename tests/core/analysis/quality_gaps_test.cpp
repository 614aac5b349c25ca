// The study's quality judgments as numbers: a variant's gap to gpipe over seeds, the verdict on
// the 1.0-point target beside the seeds' spread, the rate a regime is judged at.
#include "core/analysis/quality_gaps.h"

#include <gtest/gtest.h>

namespace pm {
namespace {

FinalAccuracy acc(std::vector<double> seeds) {
  FinalAccuracy f;
  double sum = 0;
  f.lo = f.hi = seeds.front();
  for (size_t i = 0; i < seeds.size(); ++i) {
    sum += seeds[i];
    f.lo = std::min(f.lo, seeds[i]);
    f.hi = std::max(f.hi, seeds[i]);
    f.seeds.push_back(static_cast<int64_t>(i + 1));
  }
  f.mean = sum / static_cast<double>(seeds.size());
  return f;
}

TEST(QualityGaps, AGapIsTheMeanDifferenceInPointsWithTheLargerSpread) {
  RegimeResults r;
  r["0.1"]["gpipe"] = acc({0.920, 0.912});
  r["0.1"]["t1t2"] = acc({0.910, 0.894});
  const Gap g = gapOf(r, "0.1", "t1t2");
  EXPECT_NEAR(g.points, (0.902 - 0.916) * 100, 1e-9);  // -1.4 points
  EXPECT_NEAR(g.spread, 1.6, 1e-9);                    // t1t2's range, the larger
  EXPECT_EQ(g.seeds, 2u);
  // One seed: no spread. A rate or a variant not run: no gap.
  r["0.3"]["gpipe"] = acc({0.9});
  r["0.3"]["t1t2"] = acc({0.85});
  EXPECT_TRUE(std::isnan(gapOf(r, "0.3", "t1t2").spread));
  EXPECT_NEAR(gapOf(r, "0.3", "t1t2").points, -5.0, 1e-9);
  EXPECT_TRUE(std::isnan(gapOf(r, "1.0", "t1t2").points));
  EXPECT_TRUE(std::isnan(gapOf(r, "0.1", "naive").points));
}

// The delay a gap is reported at is the one the runs recorded (stage 0's tau), not one computed
// from P and N; unknown where no run recorded it.
TEST(QualityGaps, TheDelayIsTheOneTheRunsRecorded) {
  RegimeResults r;
  r["0.1"]["gpipe"] = acc({0.92});
  r["0.1"]["t1t2"] = acc({0.91});
  r["0.1"]["t1t2"].delay = 3;
  EXPECT_EQ(delayOf(r, "0.1", "t1t2"), 3);
  EXPECT_TRUE(std::isnan(delayOf(r, "0.1", "gpipe")));
  EXPECT_TRUE(std::isnan(delayOf(r, "0.1", "naive")));
  EXPECT_TRUE(std::isnan(delayOf(r, "0.3", "t1t2")));
}

TEST(QualityGaps, TheVerdictWeighsTheTargetAgainstTheSeedsSpread) {
  const auto gap = [](double points, double spread) {
    Gap g;
    g.points = points;
    g.spread = spread;
    g.seeds = std::isnan(spread) ? 1 : 2;
    return g;
  };
  EXPECT_EQ(judgeGap(Gap{}), GapVerdict::NoFigure);
  EXPECT_EQ(judgeGap(gap(-0.4, NAN)), GapVerdict::Reproduced);
  EXPECT_EQ(judgeGap(gap(-0.99, 0.5)), GapVerdict::Reproduced);
  EXPECT_EQ(judgeGap(gap(-0.2, 1.0)), GapVerdict::ReproducedWithinNoise);
  EXPECT_EQ(judgeGap(gap(-1.4, 0.3)), GapVerdict::NotReproduced);  // misses by 0.4, more than the spread
  EXPECT_EQ(judgeGap(gap(-1.4, 0.5)), GapVerdict::WithinNoise);    // misses by 0.4, less than the spread
  EXPECT_EQ(judgeGap(gap(-1.4, NAN)), GapVerdict::NotReproduced);  // one seed: no noise to hide in
  EXPECT_TRUE(missesTarget(gap(-1.4, 0.3)));
  EXPECT_FALSE(missesTarget(gap(-1.4, 0.5)));
}

TEST(QualityGaps, ARegimeIsJudgedAtTheRateWithMostSeedsThenGpipesBest) {
  RegimeResults r;
  r["0.1"]["gpipe"] = acc({0.90, 0.91});
  r["0.1"]["t1t2"] = acc({0.89, 0.90});
  r["0.3"]["gpipe"] = acc({0.92});  // gpipe's best, but one seed
  r["0.3"]["t1t2"] = acc({0.91});
  r["1.0"]["gpipe"] = acc({0.93, 0.93});  // best with two seeds, but no t1t2
  EXPECT_EQ(bestGpipeRate(r, "t1t2"), "0.1");
  r["0.3"]["gpipe"] = acc({0.92, 0.92});
  r["0.3"]["t1t2"] = acc({0.91, 0.90});
  EXPECT_EQ(bestGpipeRate(r, "t1t2"), "0.3");
  EXPECT_EQ(bestGpipeRate(r, "naive"), "");
  // gpipe diverged at a rate (no mean): not judged there.
  r["0.3"]["gpipe"].mean = NAN;
  EXPECT_EQ(bestGpipeRate(r, "t1t2"), "0.1");
}

TEST(QualityGaps, APlannerRatioIsReproducedWithinTwentyPercent) {
  EXPECT_TRUE(ratioReproduced(14.25, 14.3));
  EXPECT_TRUE(ratioReproduced(3.5, 4.3));   // 0.81
  EXPECT_FALSE(ratioReproduced(3.4, 4.3));  // 0.79
  EXPECT_FALSE(ratioReproduced(NAN, 4.3));
}

}  // namespace
}  // namespace pm
