#pragma once
// Pipeline utilization (the busy share of the stages' time) of the schedules, from per-stage costs
// alone: the planner's formulas (docs/planner.md, section 4). Pure arithmetic.
#include <cstdint>
#include <vector>

namespace pm {

// Flushed schedules (gpipe, 1f1b), one minibatch of N microbatches, stage i taking c_i per
// microbatch (forward + backward): N*sum(c) / (P * ((N-1)*max(c) + sum(c))); with equal stages
// N/(N+P-1). Empty costs = equal stages.
double synchronousUtilization(int stages, int microbatches, const std::vector<double>& costs);
// Unflushed schedules: steady state (T = 0) sum(c) / (P*max(c)) (1 for equal stages); over T
// microbatches with one fill and drain T*sum(c) / (P * ((T-1)*max(c) + sum(c))), T/(T+P-1) equal.
double asynchronousUtilization(int stages, int64_t totalMicrobatches, const std::vector<double>& costs);

// A run whose first `fraction` of the minibatches go at utilization uFirst and the rest at uRest
// (pipemare after a synchronous warm-up): the time-weighted mix, 1 / (f/uFirst + (1-f)/uRest),
// since each minibatch is the same work. Throws std::invalid_argument for f outside [0, 1] or a
// utilization outside (0, 1].
double hybridUtilization(double fraction, double uFirst, double uRest);

}  // namespace pm
