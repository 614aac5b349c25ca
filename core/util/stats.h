#pragma once
// Small statistics shared by the planner's comparison, the study report and the benchmarks.
#include <cstddef>
#include <vector>

namespace pm {

// The median of the finite values (the mean of the two middle ones for an even count); NaN when
// there are none. NaN values are dropped before sorting (they would break std::sort's ordering).
double median(std::vector<double> v);

// The index of the median of v's finite values (the lower of the two middle ones for an even
// count: a value that was measured, not a mean); 0 when there are none.
size_t medianIndex(const std::vector<double>& v);

// Measurements taken in rounds (each round runs the baseline and every subject once, so that a
// slow spell of the machine falls on one round of all of them): round k's baseline is base[k],
// or the median of the others where round k has none (missing, or not finite).
double roundBaseline(const std::vector<double>& base, size_t k);
// Each round's value over its own round's baseline.
std::vector<double> perRoundRatios(const std::vector<double>& values, const std::vector<double>& base);

}  // namespace pm
