#include "core/pipeline/utilization.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace pm {

namespace {

void checkCosts(int P, const std::vector<double>& costs) {
  if (P < 1) throw std::invalid_argument("stages must be >= 1");
  if (!costs.empty() && static_cast<int>(costs.size()) != P)
    throw std::invalid_argument("stage costs: expected " + std::to_string(P) + " values, got " +
                                std::to_string(costs.size()));
  for (double c : costs)
    if (!(c > 0)) throw std::invalid_argument("stage costs must be > 0");
}

}  // namespace

double synchronousUtilization(int P, int N, const std::vector<double>& costs) {
  checkCosts(P, costs);
  if (N < 1) throw std::invalid_argument("microbatches must be >= 1");
  if (costs.empty()) return static_cast<double>(N) / static_cast<double>(N + P - 1);
  const double sum = std::accumulate(costs.begin(), costs.end(), 0.0);
  const double mx = *std::max_element(costs.begin(), costs.end());
  return static_cast<double>(N) * sum / (static_cast<double>(P) * (static_cast<double>(N - 1) * mx + sum));
}

double asynchronousUtilization(int P, int64_t T, const std::vector<double>& costs) {
  checkCosts(P, costs);
  if (T < 0) throw std::invalid_argument("total microbatches must be >= 0");
  if (costs.empty()) return T == 0 ? 1.0 : static_cast<double>(T) / static_cast<double>(T + P - 1);
  const double sum = std::accumulate(costs.begin(), costs.end(), 0.0);
  const double mx = *std::max_element(costs.begin(), costs.end());
  if (T == 0) return sum / (static_cast<double>(P) * mx);
  return static_cast<double>(T) * sum / (static_cast<double>(P) * (static_cast<double>(T - 1) * mx + sum));
}

double hybridUtilization(double f, double uFirst, double uRest) {
  if (!(f >= 0 && f <= 1)) throw std::invalid_argument("warm-up fraction must be in [0, 1]");
  if (!(uFirst > 0 && uFirst <= 1) || !(uRest > 0 && uRest <= 1)) throw std::invalid_argument("utilization must be in (0, 1]");
  return 1.0 / (f / uFirst + (1.0 - f) / uRest);
}

}  // namespace pm
