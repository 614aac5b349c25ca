#pragma once
// `pipemare plan --stages P --microbatches N --op-costs TF,TB,TW [--comm-cost T] [--json]`: the
// synchronous schedules (gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v) laid out on P ranks from per-op costs alone, for
// what-if studies and for checking against published tables (../shared/docs/schedules.md section
// 7). TF, TB, TW: a rank's forward, input-gradient backward and weight-gradient backward per
// microbatch, in any unit; a whole backward costs TB + TW. T is charged to every dependency that
// crosses ranks. The timeline is the discrete-event simulation of each schedule's own action lists
// (core/planner/timeline_sim.h: simulateOps), not a closed form. interleaved-1f1b (--chunks V, default
// 2) and zb-v place several chunks per rank. Per schedule it prints three figures, each with
// its definition: the makespan, 1 - utilization over the makespan, and the zero-bubble paper's
// bubble rate (eq. 3: the bubble as a share of the longest rank's span; its Table 5 is reproduced
// to 4 decimals with this definition, not with the bubble against the ideal time).
#include <ostream>

#include "core/cli/plan.h"

namespace pm::cli {

// Reads o.stages, o.microbatches, o.opCosts, o.commCost and o.json. Returns 0; 2 with
// "pipemare plan: <place>: <problem>" on `err` for bad input.
int planOpCostsCommand(const PlanOptions& o, std::ostream& out, std::ostream& err);

}  // namespace pm::cli
