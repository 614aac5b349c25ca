#pragma once
// `pipemare plan --stability EXPERIMENT [--json]`: the top Hessian eigenvalue of each stage's
// parameters (at initialization, and after the experiment's synchronous warm-up when it has one),
// each stage's delay under every schedule (the planner's), and per schedule the largest stable base
// learning rate and the stage that breaks first, beside the design's own rate
// (docs/planner.md, "Stability"). Progress goes to `err`, or as data to o.progress (--events stdout).
#include <ostream>

#include "core/cli/plan.h"

namespace pm::cli {

// Reads o.stability (with o.overrides), o.timing ("" = the experiment's pipeline.timing), o.json,
// o.stabilityMicrobatches and o.stabilityIterations. Returns 0; 2 with
// "pipemare plan: <place>: <problem>" on `err` for bad input (a file that does not validate, data
// that cannot be read, counts below 1, --experiment beside it); 1 when the estimate fails.
int planStabilityCommand(const PlanOptions& o, std::ostream& out, std::ostream& err);

}  // namespace pm::cli
