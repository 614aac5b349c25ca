#pragma once
// `pipemare plan --against RUN`: holds a stored run against the planner's prediction for the same
// model, partition, schedule and optimizer. Measured: per-stage utilization (median over logging
// windows), seconds per minibatch (median over logged steps), per-stage weights / optimizer /
// stash / delta bytes (max), per-stage forward / backward / step durations (trace means).
// Predicted: the analytic memory model, and a discrete-event simulation of the schedule fed with
// the run's own measured per-stage action costs.
#include <cstdint>
#include <string>

namespace pm::cli {

int planAgainstCommand(const std::string& db, int64_t run, bool json);

}  // namespace pm::cli
