#pragma once
// Partitioning a model's ordered units into P contiguous stages. Pure functions, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace pm {

struct Partition {
  // begin[s], end[s]: stage s holds units [begin[s], end[s]).
  std::vector<int> begin, end;
  int stages() const { return static_cast<int>(begin.size()); }
  std::string describe() const;  // "[0,2) [2,5) [5,6)"
};

// Contiguous partition of `costs` (one per unit, >= 0) into `stages` non-empty parts minimising
// the largest part's sum (exact, by dynamic programming; ties broken towards earlier boundaries:
// among the optimal partitions the lexicographically smallest boundary vector, sums compared
// within 1e-12 of the total cost).
// Costs must be finite and >= 0 (std::invalid_argument otherwise).
// Throws std::invalid_argument when stages < 1 or stages > costs.size().
Partition balancedPartition(const std::vector<double>& costs, int stages);

// From explicit boundaries (first unit of stages 1..P-1); validated against the unit count.
// Throws std::invalid_argument unless units >= 1 and the boundaries are strictly increasing
// values within 1..units-1.
Partition explicitPartition(const std::vector<int>& boundaries, int units);
// As above, and also requires exactly stages-1 boundaries.
Partition explicitPartition(const std::vector<int>& boundaries, int units, int stages);

// The largest stage cost divided by the mean stage cost (1.0 = perfectly balanced).
double imbalance(const Partition& p, const std::vector<double>& costs);

}  // namespace pm
