#pragma once
// Exponential moving average used by the Compare view. Pure function, any thread.
#include <cstddef>
#include <vector>

namespace pm::ui {

// Smooths `y` (in step order) with an exponential moving average of weight `alpha` in [0, 1):
// s_0 = y_0, s_i = alpha * s_{i-1} + (1 - alpha) * y_i. alpha <= 0 returns y unchanged; alpha is
// clamped to 0.999. Non-finite values are passed through unchanged and do not enter the average.
// The result has the same length as `y`; the input is never modified.
std::vector<double> emaSmooth(const std::vector<double>& y, double alpha);

// Series with fewer finite values than this are drawn unsmoothed whatever the weight: an EMA over
// a handful of points (a run's few evaluations) pulls each towards the first ones and misstates
// the values read off the plot.
inline constexpr size_t kMinPointsToSmooth = 10;
// Whether a series `y` is smoothed at weight `alpha`: alpha > 0 and at least kMinPointsToSmooth
// finite values.
bool smoothingApplies(const std::vector<double>& y, double alpha);

}  // namespace pm::ui
