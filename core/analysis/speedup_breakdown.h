#pragma once
// Where a pipeline's speedup over one stage goes: the measured throughput ratio of a P-stage run
// against a P = 1 run, split into the factors that bound it. No Qt; pure functions.
//
//   measured = balance bound x fill / compute inflation x pipeline efficiency
//
// - balance bound: sum of the stages' compute per minibatch / the largest one (P when the stages
//   are equal): the slowest stage sets the pace;
// - fill: N / (N + P - 1) for schedules that flush every minibatch (gpipe, 1f1b), 1 otherwise;
// - compute inflation: the stages' summed compute per minibatch against the P = 1 run's (cores
//   slowing each other through shared caches and memory, recompute of asynchronous schedules);
// - pipeline efficiency: the rest (messages, waits the schedule did not predict, start-up).
#include <cstdint>
#include <vector>

#include "core/store/run_store.h"

namespace pm {

// Compute seconds per minibatch of each stage: over the stage's windows (stage metric
// "compute_s", one point per window, `step` = minibatches completed at the stage), the median of
// compute_s / minibatches in the window, leaving out the first window (start-up). A stage with a
// single window uses it. The result has `stages` entries; NaN for a stage without points.
std::vector<double> computePerMinibatch(const std::vector<StageMetricPoint>& computeS, int stages);

struct SpeedupBreakdown {
  double balanceBound = 0;      // sum(c) / max(c)
  double fill = 1;              // N / (N + P - 1) for flushing schedules, else 1
  double computeInflation = 0;  // sum(c) / baseline compute per minibatch
  double expected = 0;          // balanceBound * fill / computeInflation
  double measured = 0;          // the throughput ratio given
  double efficiency = 0;        // measured / expected
};

// `stageCompute` from computePerMinibatch of the P-stage run, `baselineCompute` the P = 1 run's
// compute per minibatch; `flushes` for gpipe and 1f1b; `measuredRatio` its throughput / P = 1's.
// Factors that cannot be computed (no stages, a non-finite or zero input) are NaN.
SpeedupBreakdown breakdownSpeedup(const std::vector<double>& stageCompute, double baselineCompute, bool flushes,
                                  int microbatches, double measuredRatio);

// Runs side by side (the machine's 2-core ceiling): each run's throughput over the window in which
// all of them were training, so that neither start-up nor a run finishing first (the other then
// runs alone, faster) enters the figure. `progress[i]` is run i's (time, cumulative samples) in
// time order, from its first measured point on. The result has one samples/s per run; all NaN when
// the runs did not overlap over at least two points each.
std::vector<double> sideBySideRates(const std::vector<std::vector<std::pair<double, double>>>& progress);

}  // namespace pm
