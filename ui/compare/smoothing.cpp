#include "ui/compare/smoothing.h"

#include <algorithm>
#include <cmath>

namespace pm::ui {

std::vector<double> emaSmooth(const std::vector<double>& y, double alpha) {
  if (!(alpha > 0)) return y;
  alpha = std::min(alpha, 0.999);
  std::vector<double> out(y.size());
  bool started = false;
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    s = started ? alpha * s + (1 - alpha) * y[i] : y[i];
    started = true;
    out[i] = s;
  }
  return out;
}

bool smoothingApplies(const std::vector<double>& y, double alpha) {
  if (!(alpha > 0)) return false;
  const auto finite = std::count_if(y.begin(), y.end(), [](double v) { return std::isfinite(v); });
  return static_cast<size_t>(finite) >= kMinPointsToSmooth;
}

}  // namespace pm::ui
