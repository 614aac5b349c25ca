#pragma once
// The study's stability judgments as numbers (reports/study.md, section 4): where training breaks
// along a column of the measured map (one schedule over a grid of learning rates, seeds per
// point), and whether a predicted edge held against it or by how much it missed. Qt-free; the
// report in ui/report only words these.
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

#include "core/store/run_store.h"

namespace pm {

// A run "trains" when it finished every step with a final test accuracy at least kTrainsAccuracy
// (chance is 0.1 on Fashion-MNIST) and within kWithinBest of the best point of its column (its
// seeds' mean): a rate that costs more than that has broken training, diverged or not. A point
// trains when every seed does.
inline constexpr double kTrainsAccuracy = 0.5;
inline constexpr double kWithinBest = 0.05;
// A rate that passes or misses that rule by less than this many points is a near call.
inline constexpr double kBorderlinePoints = 0.5;

// One point of the map, a schedule at one rate: its runs by seed.
struct MapPoint {
  std::map<int64_t, const RunRecord*> bySeed;
  int diverged() const;
  bool allFinished() const;
  // The mean and the spread (highest - lowest) of the finished seeds' final accuracies; NaN when
  // none finished (spread: fewer than two).
  double mean() const;
  double spread() const;
  // The lowest seed's final accuracy; NaN when a seed did not finish.
  double lowest() const;
};

// A column: learning rate -> its point.
using MapColumn = std::map<double, MapPoint>;

// The measured edge of one column: the largest rate that trains and the smallest larger one that
// does not (NaN when there is none); the best point is the highest mean among the points whose
// every seed finished. trainMargin and breakMargin: how far, in points, the lowest seed of the
// rate that trains passes the rule and that of the rate that breaks misses it (NaN where there is
// no such rate, or a seed of it did not finish: no near call).
struct MeasuredEdge {
  double trainsUpTo = NAN, breaksAt = NAN, bestLr = NAN, bestAccuracy = NAN, bestSpread = NAN;
  double trainMargin = NAN, breakMargin = NAN;
  bool nearTrainCall() const { return trainMargin < kBorderlinePoints; }
  bool nearBreakCall() const { return breakMargin < kBorderlinePoints; }
};
MeasuredEdge measureEdge(const MapColumn& column);

// Where a predicted edge falls against the measured bracket. The true edge lies between the
// largest rate that trains and the smallest that breaks, so a miss is a range of factors:
// conservative by trainsUpTo / predicted to breaksAt / predicted (high NaN when nothing in the
// grid breaks), optimistic by predicted / breaksAt to predicted / trainsUpTo.
enum class EdgeVerdict { NoPrediction, NothingTrains, Conservative, Optimistic, Untested, Held };
struct EdgeJudgment {
  EdgeVerdict verdict = EdgeVerdict::NoPrediction;
  double lowFactor = NAN, highFactor = NAN;
  // A verdict the grid decides (held, conservative or optimistic).
  bool decided() const { return verdict == EdgeVerdict::Held || verdict == EdgeVerdict::Conservative || verdict == EdgeVerdict::Optimistic; }
};
EdgeJudgment judgeEdge(double predictedMaxLr, const MeasuredEdge& m);

// Is a predicted value within `factor` of a measured one that the grid places in [low, high]
// (high +inf or NaN: no upper bound)? Within when every value the bracket allows is
// (max(high / predicted, predicted / low) <= factor), Outside when none is, Undecided between:
// the grid is too coarse there to tell. NoVerdict without a prediction or a lower bound.
enum class FactorVerdict { NoVerdict, Within, Undecided, Outside };
FactorVerdict judgeFactor(double predicted, double low, double high, double factor);
// The edge: the bracket [trainsUpTo, breaksAt].
FactorVerdict judgeFactor(double predictedMaxLr, const MeasuredEdge& m, double factor);
// The delay's effect: a schedule's edge over the synchronous one's, measured within
// [row.trainsUpTo / sync.breaksAt, row.breaksAt / sync.trainsUpTo].
FactorVerdict judgeRatio(double predictedRatio, const MeasuredEdge& row, const MeasuredEdge& sync, double factor);
// The range of that measured ratio (low, high; high NaN when either bracket is open).
std::pair<double, double> measuredRatio(const MeasuredEdge& row, const MeasuredEdge& sync);

}  // namespace pm
