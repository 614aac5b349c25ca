#include "core/analysis/quality_gaps.h"

#include <algorithm>
#include <utility>

namespace pm {

Gap gapOf(const RegimeResults& r, const std::string& lr, const std::string& variant) {
  Gap g;
  const auto l = r.find(lr);
  if (l == r.end() || !l->second.count("gpipe") || !l->second.count(variant)) return g;
  const FinalAccuracy& ref = l->second.at("gpipe");
  const FinalAccuracy& v = l->second.at(variant);
  g.points = (v.mean - ref.mean) * 100;
  g.seeds = std::min(ref.seeds.size(), v.seeds.size());
  if (g.seeds >= 2) g.spread = std::max(ref.hi - ref.lo, v.hi - v.lo) * 100;
  return g;
}

double delayOf(const RegimeResults& r, const std::string& lr, const std::string& variant) {
  const auto l = r.find(lr);
  if (l == r.end()) return NAN;
  const auto v = l->second.find(variant);
  return v == l->second.end() ? NAN : v->second.delay;
}

bool missesTarget(const Gap& g) {
  return std::isfinite(g.points) && g.points < -kTargetPoints && !(std::isfinite(g.spread) && g.points + g.spread >= -kTargetPoints);
}

GapVerdict judgeGap(const Gap& g) {
  if (!std::isfinite(g.points)) return GapVerdict::NoFigure;
  if (missesTarget(g)) return GapVerdict::NotReproduced;
  if (g.points < -kTargetPoints) return GapVerdict::WithinNoise;
  return std::isfinite(g.spread) && g.spread >= kTargetPoints ? GapVerdict::ReproducedWithinNoise : GapVerdict::Reproduced;
}

std::string bestGpipeRate(const RegimeResults& r, const std::string& variant) {
  std::string best;
  std::pair<size_t, double> key{0, -1.0};  // (seeds, gpipe's accuracy)
  for (const auto& [lr, v] : r) {
    if (!v.count("gpipe") || !v.count(variant) || !std::isfinite(v.at("gpipe").mean)) continue;
    const std::pair<size_t, double> k{std::min(v.at("gpipe").seeds.size(), v.at(variant).seeds.size()), v.at("gpipe").mean};
    if (k > key) {
      key = k;
      best = lr;
    }
  }
  return best;
}

bool ratioReproduced(double ratio, double paper) { return std::isfinite(ratio) && std::abs(ratio / paper - 1) <= 0.2; }

}  // namespace pm
