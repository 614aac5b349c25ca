#include "core/util/stats.h"

#include <algorithm>
#include <cmath>

namespace pm {

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

size_t medianIndex(const std::vector<double>& v) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i])) idx.push_back(i);
  if (idx.empty()) return 0;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  return idx[(idx.size() - 1) / 2];
}

double roundBaseline(const std::vector<double>& base, size_t k) { return k < base.size() && std::isfinite(base[k]) ? base[k] : median(base); }

std::vector<double> perRoundRatios(const std::vector<double>& values, const std::vector<double>& base) {
  std::vector<double> out;
  out.reserve(values.size());
  for (size_t k = 0; k < values.size(); ++k) out.push_back(values[k] / roundBaseline(base, k));
  return out;
}

}  // namespace pm
