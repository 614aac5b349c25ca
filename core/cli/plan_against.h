#pragma once
// `pipemare plan --against RUN`: holds a stored run against the planner's prediction for the same
// model, partition, schedule and optimizer (the run's experiment as plan_design maps it, with the
// partition the run recorded). Measured: per-stage utilization (median over logging
// windows), seconds per minibatch (median over logged steps), per-stage weights / optimizer /
// stash / delta bytes (max), per-stage forward / backward / step durations (trace means).
// Predicted: the analytic memory model, and a discrete-event simulation of the schedule fed with
// the run's own measured per-stage action costs.
#include <cstdint>
#include <string>

#include "core/events/event.h"
#include "core/planner/timeline_sim.h"
#include "core/store/run_store.h"

namespace pm::cli {

// The comparison as JSON: seconds_per_minibatch {measured, predicted, error_pct}, per_stage[]
// {forward_s, backward_s, step_s, utilization / weights / optimizer / stash / delta {measured,
// predicted[, error_pct]}}, plus run, run_name, schedule, model, stages, microbatches, partition.
// Throws ConfigError / StoreError when the run cannot be compared (no trace, no partition).
// With `traceMinibatches` > 0 and `simulated`, also the simulated timeline of that many minibatches
// with the run's measured costs (what the Timeline view draws under the measured one).
Json planAgainst(const RunStore& store, int64_t run, int traceMinibatches = 0, std::vector<SimTraceRecord>* simulated = nullptr);

// `traceFile` non-empty: writes that simulated timeline there as a Chrome trace. `events`: the
// result or the error as event lines on stdout (core/cli/plan_events.h), not the table or --json.
int planAgainstCommand(const std::string& db, int64_t run, bool json, const std::string& traceFile = "", int traceMinibatches = 2,
                       bool events = false);

}  // namespace pm::cli
