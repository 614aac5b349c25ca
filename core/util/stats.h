#pragma once
// Small statistics shared by the planner's comparison, the study report and the benchmarks.
#include <vector>

namespace pm {

// The median of the finite values (the mean of the two middle ones for an even count); NaN when
// there are none. NaN values are dropped before sorting (they would break std::sort's ordering).
double median(std::vector<double> v);

}  // namespace pm
