#include "core/analysis/stability_edges.h"

#include <algorithm>

namespace pm {

int MapPoint::diverged() const {
  return static_cast<int>(std::count_if(bySeed.begin(), bySeed.end(), [](const auto& s) { return s.second->status == RunStatus::Diverged; }));
}

bool MapPoint::allFinished() const {
  return std::all_of(bySeed.begin(), bySeed.end(), [](const auto& s) { return s.second->status == RunStatus::Finished; });
}

double MapPoint::mean() const {
  double sum = 0;
  int n = 0;
  for (const auto& [seed, r] : bySeed)
    if (r->status == RunStatus::Finished) {
      sum += r->final_accuracy;
      ++n;
    }
  return n > 0 ? sum / n : NAN;
}

double MapPoint::spread() const {
  double lo = INFINITY, hi = -INFINITY;
  int n = 0;
  for (const auto& [seed, r] : bySeed)
    if (r->status == RunStatus::Finished) {
      lo = std::min(lo, r->final_accuracy);
      hi = std::max(hi, r->final_accuracy);
      ++n;
    }
  return n > 1 ? hi - lo : NAN;
}

double MapPoint::lowest() const {
  double lo = INFINITY;
  for (const auto& [seed, r] : bySeed) {
    if (r->status != RunStatus::Finished) return NAN;
    lo = std::min(lo, r->final_accuracy);
  }
  return lo;
}

MeasuredEdge measureEdge(const MapColumn& column) {
  MeasuredEdge m;
  for (const auto& [lr, p] : column)
    if (p.allFinished() && !(p.mean() <= m.bestAccuracy)) {
      m.bestAccuracy = p.mean();
      m.bestLr = lr;
      m.bestSpread = p.spread();
    }
  auto trains = [&](const MapPoint& p) {
    return std::all_of(p.bySeed.begin(), p.bySeed.end(), [&](const auto& s) {
      const RunRecord& r = *s.second;
      return r.status == RunStatus::Finished && r.final_accuracy >= kTrainsAccuracy && r.final_accuracy >= m.bestAccuracy - kWithinBest;
    });
  };
  for (const auto& [lr, p] : column)
    if (trains(p)) m.trainsUpTo = lr;
  for (const auto& [lr, p] : column)
    if (lr > m.trainsUpTo && !trains(p)) {
      m.breaksAt = lr;
      break;
    }
  const double rule = std::max(kTrainsAccuracy, m.bestAccuracy - kWithinBest);
  if (std::isfinite(m.trainsUpTo)) m.trainMargin = (column.at(m.trainsUpTo).lowest() - rule) * 100;
  if (std::isfinite(m.breaksAt)) m.breakMargin = (rule - column.at(m.breaksAt).lowest()) * 100;
  return m;
}

EdgeJudgment judgeEdge(double predicted, const MeasuredEdge& m) {
  EdgeJudgment j;
  if (!std::isfinite(predicted)) return j;
  if (!std::isfinite(m.trainsUpTo)) {
    j.verdict = EdgeVerdict::NothingTrains;
  } else if (predicted < m.trainsUpTo) {
    j.verdict = EdgeVerdict::Conservative;
    j.lowFactor = m.trainsUpTo / predicted;
    j.highFactor = std::isfinite(m.breaksAt) ? m.breaksAt / predicted : NAN;
  } else if (std::isfinite(m.breaksAt) && predicted > m.breaksAt) {
    j.verdict = EdgeVerdict::Optimistic;
    j.lowFactor = predicted / m.breaksAt;
    j.highFactor = predicted / m.trainsUpTo;
  } else if (!std::isfinite(m.breaksAt)) {
    j.verdict = EdgeVerdict::Untested;  // trains at every rate it ran, all of them below the edge
  } else {
    j.verdict = EdgeVerdict::Held;
  }
  return j;
}

FactorVerdict judgeFactor(double predicted, double low, double high, double factor) {
  if (!(predicted > 0) || !(low > 0)) return FactorVerdict::NoVerdict;
  const double top = std::isfinite(high) ? high : INFINITY;
  // The bracket's values farthest from and nearest to the prediction, as factors.
  const double farthest = std::max(top / predicted, predicted / low);
  const double nearest = predicted < low ? low / predicted : predicted > top ? predicted / top : 1.0;
  // A factor of exactly `factor` (a bisected edge on a grid of powers of two) is within it, whatever the rounding.
  const double f = factor * (1 + 1e-9);
  if (farthest <= f) return FactorVerdict::Within;
  if (nearest > f) return FactorVerdict::Outside;
  return FactorVerdict::Undecided;
}

FactorVerdict judgeFactor(double predicted, const MeasuredEdge& m, double factor) {
  return judgeFactor(predicted, m.trainsUpTo, m.breaksAt, factor);
}

std::pair<double, double> measuredRatio(const MeasuredEdge& row, const MeasuredEdge& sync) {
  const double low = row.trainsUpTo / sync.breaksAt;  // NaN when sync has no break: no lower bound
  const double high = row.breaksAt / sync.trainsUpTo;
  return {low, high};
}

FactorVerdict judgeRatio(double predicted, const MeasuredEdge& row, const MeasuredEdge& sync, double factor) {
  const auto [low, high] = measuredRatio(row, sync);
  return judgeFactor(predicted, low, high, factor);
}

}  // namespace pm
