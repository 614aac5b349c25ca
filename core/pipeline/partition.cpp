#include "core/pipeline/partition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace pm {

std::string Partition::describe() const {
  std::string out;
  for (size_t s = 0; s < begin.size(); ++s) {
    if (s) out += ' ';
    out += "[" + std::to_string(begin[s]) + "," + std::to_string(end[s]) + ")";
  }
  return out;
}

// Exact DP over prefix sums.
//  1. best[k][j] = the smallest possible largest part when units [0, j) form k non-empty parts;
//     best[P][U] is the optimum V (O(P * U^2)).
//  2. Tie-break: among all partitions whose largest part is <= V (within a relative 1e-12 of the total,
//     so that mathematically equal sums that round differently still count as ties) take the one with
//     the lexicographically smallest boundary vector: stage by stage, end the stage at the earliest
//     unit for which the rest can still be split into the remaining stages within V (feasible[k][i]:
//     units [i, U) split into k non-empty parts each <= V).
Partition balancedPartition(const std::vector<double>& costs, int stages) {
  const int units = static_cast<int>(costs.size());
  if (stages < 1) throw std::invalid_argument("balancedPartition: stages must be >= 1, got " + std::to_string(stages));
  if (stages > units)
    throw std::invalid_argument("balancedPartition: " + std::to_string(stages) + " stages but only " +
                                std::to_string(units) + " units (every stage needs at least one unit)");
  std::vector<double> prefix(static_cast<size_t>(units) + 1, 0.0);
  for (int u = 0; u < units; ++u) {
    const double c = costs[static_cast<size_t>(u)];
    if (!(c >= 0.0) || !std::isfinite(c))
      throw std::invalid_argument("balancedPartition: unit " + std::to_string(u) + " has cost " + std::to_string(c) +
                                  " (costs must be finite and >= 0)");
    prefix[static_cast<size_t>(u) + 1] = prefix[static_cast<size_t>(u)] + c;
  }
  auto sum = [&](int i, int j) { return prefix[static_cast<size_t>(j)] - prefix[static_cast<size_t>(i)]; };
  const double inf = std::numeric_limits<double>::infinity();
  const size_t P = static_cast<size_t>(stages), U = static_cast<size_t>(units);

  std::vector<std::vector<double>> best(P + 1, std::vector<double>(U + 1, inf));
  best[0][0] = 0.0;
  for (int k = 1; k <= stages; ++k)
    for (int j = k; j <= units; ++j) {
      double v = inf;
      for (int i = k - 1; i < j; ++i) v = std::min(v, std::max(best[static_cast<size_t>(k) - 1][static_cast<size_t>(i)], sum(i, j)));
      best[static_cast<size_t>(k)][static_cast<size_t>(j)] = v;
    }
  const double limit = best[P][U] + 1e-12 * prefix[U];

  // feasible[k][i]: units [i, U) can form k non-empty parts, each <= limit.
  std::vector<std::vector<char>> feasible(P + 1, std::vector<char>(U + 1, 0));
  feasible[0][U] = 1;
  for (int k = 1; k <= stages; ++k)
    for (int i = units - k; i >= 0; --i)
      for (int j = i + 1; j <= units - (k - 1); ++j)
        if (sum(i, j) <= limit && feasible[static_cast<size_t>(k) - 1][static_cast<size_t>(j)]) {
          feasible[static_cast<size_t>(k)][static_cast<size_t>(i)] = 1;
          break;
        }

  Partition p;
  int start = 0;
  for (int s = 0; s < stages; ++s) {
    const int remaining = stages - s - 1;
    int stop = -1;
    for (int j = start + 1; j <= units - remaining; ++j)
      if (sum(start, j) <= limit && feasible[static_cast<size_t>(remaining)][static_cast<size_t>(j)]) {
        stop = j;
        break;
      }
    if (stop < 0) throw std::logic_error("balancedPartition: internal error, no feasible boundary");
    p.begin.push_back(start);
    p.end.push_back(stop);
    start = stop;
  }
  return p;
}

Partition explicitPartition(const std::vector<int>& boundaries, int units) {
  if (units < 1) throw std::invalid_argument("explicitPartition: units must be >= 1, got " + std::to_string(units));
  Partition p;
  int start = 0;
  for (size_t i = 0; i < boundaries.size(); ++i) {
    const int b = boundaries[i];
    if (b < 1 || b > units - 1)
      throw std::invalid_argument("explicitPartition: boundary " + std::to_string(b) + " (index " + std::to_string(i) +
                                  ") outside 1.." + std::to_string(units - 1) + " for " + std::to_string(units) +
                                  " units");
    if (b <= start)
      throw std::invalid_argument("explicitPartition: boundary " + std::to_string(b) + " (index " + std::to_string(i) +
                                  ") is not greater than the previous boundary " + std::to_string(start) +
                                  "; boundaries must be strictly increasing");
    p.begin.push_back(start);
    p.end.push_back(b);
    start = b;
  }
  p.begin.push_back(start);
  p.end.push_back(units);
  return p;
}

Partition explicitPartition(const std::vector<int>& boundaries, int units, int stages) {
  if (stages < 1) throw std::invalid_argument("explicitPartition: stages must be >= 1, got " + std::to_string(stages));
  if (boundaries.size() != static_cast<size_t>(stages) - 1)
    throw std::invalid_argument("explicitPartition: " + std::to_string(stages) + " stages need exactly " +
                                std::to_string(stages - 1) + " boundaries, got " + std::to_string(boundaries.size()));
  return explicitPartition(boundaries, units);
}

double imbalance(const Partition& p, const std::vector<double>& costs) {
  if (p.stages() < 1 || p.end.size() != p.begin.size())
    throw std::invalid_argument("imbalance: empty or malformed partition");
  double total = 0.0, largest = 0.0;
  for (int s = 0; s < p.stages(); ++s) {
    const int b = p.begin[static_cast<size_t>(s)], e = p.end[static_cast<size_t>(s)];
    if (b < 0 || e < b || static_cast<size_t>(e) > costs.size())
      throw std::invalid_argument("imbalance: stage " + std::to_string(s) + " [" + std::to_string(b) + "," +
                                  std::to_string(e) + ") does not fit " + std::to_string(costs.size()) + " units");
    double c = 0.0;
    for (int u = b; u < e; ++u) c += costs[static_cast<size_t>(u)];
    total += c;
    largest = std::max(largest, c);
  }
  const double mean = total / p.stages();
  return mean > 0.0 ? largest / mean : 1.0;
}

}  // namespace pm
