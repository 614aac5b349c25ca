#include "core/analysis/frontier.h"

#include <algorithm>
#include <stdexcept>

#include "core/util/stats.h"

namespace pm {

const char* advantageName(Advantage a) {
  switch (a) {
    case Advantage::Survives:
      return "survives";
    case Advantage::Even:
      return "even";
    case Advantage::Lost:
      return "lost";
    case Advantage::Unknown:
      break;
  }
  return "-";
}

namespace {

// The synchronous point with the highest value among those `fits` admits (ties: less memory).
const FrontierPoint* best(const std::vector<FrontierPoint>& points, bool (*fits)(const FrontierPoint&, double), double budget) {
  const FrontierPoint* b = nullptr;
  for (const auto& p : points) {
    if (!p.synchronous || !std::isfinite(p.value) || !fits(p, budget)) continue;
    if (!b || p.value > b->value || (p.value == b->value && p.memoryBytes < b->memoryBytes)) b = &p;
  }
  return b;
}

}  // namespace

FrontierComparison compareWithFrontier(const std::vector<FrontierPoint>& points, const std::string& subject) {
  const auto s = std::find_if(points.begin(), points.end(), [&](const FrontierPoint& p) { return p.method == subject; });
  if (s == points.end()) throw std::invalid_argument("frontier: no figures for " + subject);
  FrontierComparison c;
  c.subject = subject;
  if (const FrontierPoint* any = best(points, [](const FrontierPoint&, double) { return true; }, 0)) {
    c.bestOverall = any->method;
    c.ratioOverall = s->value / any->value;
  }
  // Within the subject's memory (a relative 1e-9 for figures that agree but for rounding).
  const FrontierPoint* fit = best(
      points, [](const FrontierPoint& p, double budget) { return std::isfinite(p.memoryBytes) && p.memoryBytes <= budget * (1 + 1e-9); },
      s->memoryBytes);
  if (!fit) {
    c.advantage = std::isfinite(s->memoryBytes) && std::isfinite(s->value) ? Advantage::Survives : Advantage::Unknown;
    return c;
  }
  c.bestAtMemory = fit->method;
  c.ratioAtMemory = s->value / fit->value;
  if (!s->rounds.empty() && !fit->rounds.empty()) {
    for (size_t k = 0; k < std::min(s->rounds.size(), fit->rounds.size()); ++k)
      if (std::isfinite(s->rounds[k]) && std::isfinite(fit->rounds[k]) && fit->rounds[k] > 0)
        c.ratioRounds.push_back(s->rounds[k] / fit->rounds[k]);
  }
  if (!c.ratioRounds.empty()) {
    const auto [lo, hi] = std::minmax_element(c.ratioRounds.begin(), c.ratioRounds.end());
    c.advantage = *lo > 1 ? Advantage::Survives : *hi < 1 ? Advantage::Lost : Advantage::Even;
  } else if (std::isfinite(c.ratioAtMemory)) {
    c.advantage = c.ratioAtMemory > 1 + kFrontierMargin   ? Advantage::Survives
                  : c.ratioAtMemory < 1 - kFrontierMargin ? Advantage::Lost
                                                          : Advantage::Even;
  }
  return c;
}

}  // namespace pm
