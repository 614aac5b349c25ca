#pragma once
// Per-stage delay tau_i, weight versions and microbatches in flight of each schedule, in the two
// timing models (docs/planner.md section 2), and the same figures measured on the engine's own
// action lists (stageActions), which the software model must match. Stages are 0-based here
// (s = i - 1 in the 1-based formulas of docs/pipemare.md). No LibTorch.
#include <cstdint>
#include <vector>

#include "core/pipeline/schedule.h"
#include "core/planner/planner_types.h"

namespace pm {

struct DelayParams {
  TrainingMethod method = TrainingMethod{ScheduleKind::PipeMare};
  PipelineTiming timing = PipelineTiming::Paper;
  int stages = 1;          // P >= 1
  int microbatches = 1;    // N >= 1
  int updateInterval = 0;  // pipedream: microbatches per optimizer step (0 = N)
  int m = 0;               // pipedream-2bw: microbatches per step (0 = max(N, P)); must be >= P
};

struct StageTiming {
  int64_t tau = 0;       // optimizer steps of the stage between a microbatch's forward and backward
  int64_t versions = 1;  // weight versions the stage holds (current + stashed)
  int64_t inFlight = 0;  // microbatches forwarded but not yet backwarded at the stage (maximum)
};

// Microbatches per optimizer step of the schedule: gpipe/1f1b N (one step per minibatch),
// pipedream updateInterval (0 = N), pipedream-2bw m (0 = max(N, P)), pipemare N.
int updateIntervalOf(const DelayParams& p);

// Steps apart of a microbatch's forward and backward at stage s, counted in microbatches:
// paper 2(P-1-s)+1 (one F and one B per time step), software 1F1B P-1-s backwards.
int64_t forwardBackwardDistance(PipelineTiming t, int stages, int stage);

// Per stage s = 0..P-1, from the schedule's declared traits (throws std::invalid_argument on bad
// parameters):
//  in flight: synchronous schedules what their own one-minibatch list holds (gpipe N, 1f1b
//         min(N, P-s), zb-h1 its graphs from F to W; the timing model does not apply to them);
//         asynchronous F_s: paper 2(P-1-s)+1, software P-s.
//  tau_s: synchronous 0; stashed (pipedream) and predicted (pipemare) weights ceil(D_s / u) with
//         D_s the distance above and u the update interval; two versions (pipedream-2bw)
//         min(1, D_s) (1 by construction with m >= P).
//  versions: stashed and two-version families tau_s + 1 (FIFO stash; 2 for 2bw except a last
//            stage with tau 0 in the software model); all others 1 (pipemare's delta is not a version).
std::vector<StageTiming> stageTimings(const DelayParams& p);

// The same figures measured on the engine's action lists stageActions(kind, P, N, minibatches, u):
// tau = maxObservedDelay, versions = the most distinct weight versions referenced by in-flight
// microbatches plus the current one (what a copy-on-write stash holds), inFlight = the most
// forwarded-but-not-backwarded microbatches. `minibatches` should cover the steady state
// (stageTimingsFromEngine picks enough when 0).
std::vector<StageTiming> measuredStageTimings(const ScheduleParams& sp);
// For a DelayParams in the software model: builds the engine's ScheduleParams (with enough
// minibatches for the steady state) and measures them.
ScheduleParams engineScheduleParams(const DelayParams& p, int64_t minibatches = 0);

// Measured on one stage's action list.
StageTiming measureActions(const std::vector<Action>& actions);

}  // namespace pm
