#pragma once
// The names a schedule trace gives its records, declared once: the engine's trace events, the
// planner's simulated traces, the Chrome trace, the Gantt's legend and the Timeline's counts read
// this table. No LibTorch.
#include <string_view>
#include <vector>

#include "core/pipeline/schedule.h"

namespace pm {

enum class TraceRole {
  Compute,        // a pass on the stage's compute: counts as busy time
  Recompute,      // compute that is not one of the schedule's actions (pipemare's recompute run ahead)
  Communication,  // a send or a receive
};

struct TraceActionInfo {
  const char* name;    // as trace records carry it: "F", "BI", "recv_act", ...
  TraceRole role;
  const char* legend;  // the words a legend or a tooltip shows
};

// Every name, in the order a legend lists them (compute first).
const std::vector<TraceActionInfo>& traceActions();
// The row of a name, or nullptr for a name no trace writes.
const TraceActionInfo* traceActionInfo(std::string_view name);
// Busy time on the stage's compute (F, B, BI, W, S, and R), as opposed to communication.
bool isComputeTraceAction(std::string_view name);

// The name pipemare's recompute of a stale microbatch, run ahead while its gradient is in flight,
// carries (the engine emits it; it is part of that microbatch's backward).
inline constexpr const char* kRecomputeTrace = "R";

}  // namespace pm
