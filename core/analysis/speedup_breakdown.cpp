#include "core/analysis/speedup_breakdown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace pm {

namespace {
double medianOf(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

std::vector<double> computePerMinibatch(const std::vector<StageMetricPoint>& computeS, int stages) {
  std::map<int, std::vector<StageMetricPoint>> byStage;
  for (const auto& p : computeS) byStage[p.stage].push_back(p);
  std::vector<double> out(static_cast<size_t>(std::max(0, stages)), NAN);
  for (auto& [stage, pts] : byStage) {
    if (stage < 0 || stage >= stages) continue;
    std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
    std::vector<double> perMinibatch;
    int64_t prev = 0;
    for (size_t i = 0; i < pts.size(); ++i) {
      const int64_t n = pts[i].step - prev;
      prev = pts[i].step;
      if (n <= 0 || !std::isfinite(pts[i].value)) continue;
      if (i == 0 && pts.size() > 1) continue;  // start-up window
      perMinibatch.push_back(pts[i].value / static_cast<double>(n));
    }
    out[static_cast<size_t>(stage)] = medianOf(perMinibatch);
  }
  return out;
}

SpeedupBreakdown breakdownSpeedup(const std::vector<double>& stageCompute, double baselineCompute, bool flushes,
                                  int microbatches, double measuredRatio) {
  SpeedupBreakdown b;
  const int P = static_cast<int>(stageCompute.size());
  double sum = 0, mx = 0;
  bool ok = P > 0;
  for (double c : stageCompute) {
    if (!std::isfinite(c) || c <= 0) ok = false;
    sum += c;
    mx = std::max(mx, c);
  }
  b.balanceBound = ok ? sum / mx : NAN;
  b.fill = flushes ? (microbatches > 0 && P > 0 ? static_cast<double>(microbatches) / (microbatches + P - 1) : NAN) : 1.0;
  b.computeInflation = ok && std::isfinite(baselineCompute) && baselineCompute > 0 ? sum / baselineCompute : NAN;
  b.expected = b.balanceBound * b.fill / b.computeInflation;
  b.measured = measuredRatio;
  b.efficiency = std::isfinite(b.expected) && b.expected > 0 && std::isfinite(measuredRatio) ? measuredRatio / b.expected : NAN;
  return b;
}

std::vector<double> sideBySideRates(const std::vector<std::vector<std::pair<double, double>>>& progress) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  for (const auto& p : progress) {
    if (p.empty()) return std::vector<double>(progress.size(), nan);
    lo = std::max(lo, p.front().first);
    hi = std::min(hi, p.back().first);
  }
  std::vector<double> rates;
  for (const auto& p : progress) {
    const std::pair<double, double>* first = nullptr;
    const std::pair<double, double>* last = nullptr;
    for (const auto& pt : p)
      if (pt.first >= lo && pt.first <= hi) {
        if (!first) first = &pt;
        last = &pt;
      }
    if (!first || first == last || last->first <= first->first) return std::vector<double>(progress.size(), nan);
    rates.push_back((last->second - first->second) / (last->first - first->first));
  }
  return rates;
}

}  // namespace pm
