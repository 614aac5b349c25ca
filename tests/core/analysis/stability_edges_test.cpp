// The study's stability judgments as numbers: a column's measured edge (the largest rate that
// trains, the next that breaks, the near calls) and a predicted edge judged against it.
#include "core/analysis/stability_edges.h"

#include <gtest/gtest.h>

#include <cmath>

#include <deque>

namespace pm {
namespace {

// Runs kept at stable addresses for the points that point at them.
struct Runs {
  std::deque<RunRecord> all;
  const RunRecord* add(RunStatus status, double accuracy) {
    RunRecord r;
    r.status = status;
    r.final_accuracy = accuracy;
    all.push_back(r);
    return &all.back();
  }
};

MapPoint point(Runs& runs, std::initializer_list<std::pair<RunStatus, double>> seeds) {
  MapPoint p;
  int64_t seed = 1;
  for (const auto& [status, accuracy] : seeds) p.bySeed[seed++] = runs.add(status, accuracy);
  return p;
}

constexpr RunStatus F = RunStatus::Finished;
constexpr RunStatus D = RunStatus::Diverged;

TEST(StabilityEdges, TheEdgeIsTheLargestRateWhoseEverySeedTrains) {
  Runs runs;
  MapColumn c;
  c[0.01] = point(runs, {{F, 0.880}, {F, 0.884}});
  c[0.025] = point(runs, {{F, 0.900}, {F, 0.890}});  // the best point: mean 0.895
  c[0.063] = point(runs, {{F, 0.850}, {F, 0.849}});  // 0.849 passes 0.845 by 0.4 points: a near call
  c[0.16] = point(runs, {{F, 0.860}, {F, 0.700}});   // one seed breaks: the point does not train
  c[0.4] = point(runs, {{D, 0.1}, {D, 0.1}});
  const MeasuredEdge m = measureEdge(c);
  EXPECT_DOUBLE_EQ(m.bestLr, 0.025);
  EXPECT_NEAR(m.bestAccuracy, 0.895, 1e-12);
  EXPECT_NEAR(m.bestSpread, 0.010, 1e-12);
  EXPECT_DOUBLE_EQ(m.trainsUpTo, 0.063);
  EXPECT_DOUBLE_EQ(m.breaksAt, 0.16);
  EXPECT_NEAR(m.trainMargin, (0.849 - 0.845) * 100, 1e-9);
  EXPECT_NEAR(m.breakMargin, (0.845 - 0.700) * 100, 1e-9);
  EXPECT_TRUE(m.nearTrainCall());
  EXPECT_FALSE(m.nearBreakCall());
  EXPECT_EQ(c.at(0.4).diverged(), 2);
  EXPECT_TRUE(std::isnan(c.at(0.4).mean()));
}

TEST(StabilityEdges, NothingTrainsBelowHalfAccuracy) {
  Runs runs;
  MapColumn c;
  c[0.1] = point(runs, {{F, 0.45}});
  c[0.3] = point(runs, {{D, 0.1}});
  const MeasuredEdge m = measureEdge(c);
  EXPECT_TRUE(std::isnan(m.trainsUpTo));
  EXPECT_EQ(judgeEdge(0.2, m).verdict, EdgeVerdict::NothingTrains);
  EXPECT_FALSE(judgeEdge(0.2, m).decided());
}

TEST(StabilityEdges, APredictionHoldsInsideTheBracketAndMissesByARangeOfFactors) {
  MeasuredEdge m;
  m.trainsUpTo = 0.063;
  m.breaksAt = 0.16;
  EXPECT_EQ(judgeEdge(0.1, m).verdict, EdgeVerdict::Held);
  EXPECT_TRUE(judgeEdge(0.1, m).decided());
  const EdgeJudgment low = judgeEdge(0.0126, m);  // conservative: trains at 5x, breaks at 12.7x
  EXPECT_EQ(low.verdict, EdgeVerdict::Conservative);
  EXPECT_NEAR(low.lowFactor, 5.0, 1e-9);
  EXPECT_NEAR(low.highFactor, 0.16 / 0.0126, 1e-9);
  const EdgeJudgment high = judgeEdge(0.32, m);  // optimistic: breaks at half of it
  EXPECT_EQ(high.verdict, EdgeVerdict::Optimistic);
  EXPECT_NEAR(high.lowFactor, 2.0, 1e-9);
  EXPECT_NEAR(high.highFactor, 0.32 / 0.063, 1e-9);
  EXPECT_EQ(judgeEdge(NAN, m).verdict, EdgeVerdict::NoPrediction);
  m.breaksAt = NAN;  // nothing in the grid broke
  EXPECT_EQ(judgeEdge(0.1, m).verdict, EdgeVerdict::Untested);
  const EdgeJudgment atLeast = judgeEdge(0.01, m);
  EXPECT_EQ(atLeast.verdict, EdgeVerdict::Conservative);
  EXPECT_TRUE(std::isnan(atLeast.highFactor));
}

}  // namespace
}  // namespace pm

namespace pm {

TEST(StabilityEdges, WithinAFactorIsDecidedOnlyWhereTheWholeBracketIs) {
  MeasuredEdge m;
  m.trainsUpTo = 0.063;
  m.breaksAt = 0.16;
  // Between the bracket's ends and within 2x of both: within.
  EXPECT_EQ(judgeFactor(0.1, m, 2.0), FactorVerdict::Within);
  // Inside the bracket, but the bracket's far end is 2.5x away: undecided.
  EXPECT_EQ(judgeFactor(0.064, m, 2.0), FactorVerdict::Undecided);
  // Below the bracket: 1.6x to the edge's lowest value, 4x to its highest.
  EXPECT_EQ(judgeFactor(0.04, m, 2.0), FactorVerdict::Undecided);
  // Far below and far above: outside.
  EXPECT_EQ(judgeFactor(0.016, m, 2.0), FactorVerdict::Outside);
  EXPECT_EQ(judgeFactor(0.5, m, 2.0), FactorVerdict::Outside);
  // A wider factor takes in what 2x left undecided.
  EXPECT_EQ(judgeFactor(0.04, m, 4.5), FactorVerdict::Within);
  // A factor of exactly 2 up to rounding (a bisected 0.05 against a bracket ending at 0.1) is within 2x.
  MeasuredEdge twice;
  twice.trainsUpTo = 0.063;
  twice.breaksAt = 0.1;
  EXPECT_EQ(judgeFactor(std::sqrt(0.042044820762685725 * 0.05946035575013606), twice, 2.0), FactorVerdict::Within);
  EXPECT_EQ(judgeFactor(0.0499, twice, 2.0), FactorVerdict::Undecided);
  // No break in the grid: never within (the edge may be anywhere above), outside when far below.
  MeasuredEdge unbroken;
  unbroken.trainsUpTo = 0.1;
  EXPECT_EQ(judgeFactor(0.2, unbroken, 2.0), FactorVerdict::Undecided);
  EXPECT_EQ(judgeFactor(0.01, unbroken, 2.0), FactorVerdict::Outside);
  EXPECT_EQ(judgeFactor(NAN, m, 2.0), FactorVerdict::NoVerdict);
  EXPECT_EQ(judgeFactor(0.1, MeasuredEdge{}, 2.0), FactorVerdict::NoVerdict);
}

TEST(StabilityEdges, TheDelaysEffectIsARatioBetweenTwoBrackets) {
  MeasuredEdge synchronous, row;
  synchronous.trainsUpTo = 0.1;
  synchronous.breaksAt = 0.15;
  row.trainsUpTo = 0.05;
  row.breaksAt = 0.075;
  const auto [low, high] = measuredRatio(row, synchronous);
  EXPECT_NEAR(low, 0.05 / 0.15, 1e-12);
  EXPECT_NEAR(high, 0.075 / 0.1, 1e-12);
  // 0.5: within 2x of every ratio in [0.33, 0.75]; 0.13 (the analytic model's ResNet-20 figure): outside.
  EXPECT_EQ(judgeRatio(0.5, row, synchronous, 2.0), FactorVerdict::Within);
  EXPECT_EQ(judgeRatio(0.13, row, synchronous, 2.0), FactorVerdict::Outside);
}

}  // namespace pm
