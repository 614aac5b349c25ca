#include "core/pipeline/trace_actions.h"

namespace pm {

const std::vector<TraceActionInfo>& traceActions() {
  static const std::vector<TraceActionInfo> rows = {
      {traceActionName(ActionKind::Forward), TraceRole::Compute, "forward"},
      {traceActionName(ActionKind::Backward), TraceRole::Compute, "backward"},
      {traceActionName(ActionKind::BackwardInput), TraceRole::Compute, "input gradient"},
      {traceActionName(ActionKind::BackwardWeight), TraceRole::Compute, "weight gradients"},
      {traceActionName(ActionKind::Step), TraceRole::Compute, "optimizer step"},
      {kRecomputeTrace, TraceRole::Recompute, "recompute ahead of B"},
      {traceActionName(ActionKind::RecvAct), TraceRole::Communication, "communication"},
      {traceActionName(ActionKind::SendAct), TraceRole::Communication, "communication"},
      {traceActionName(ActionKind::RecvGrad), TraceRole::Communication, "communication"},
      {traceActionName(ActionKind::SendGrad), TraceRole::Communication, "communication"},
  };
  return rows;
}

const TraceActionInfo* traceActionInfo(std::string_view name) {
  for (const auto& r : traceActions())
    if (name == r.name) return &r;
  return nullptr;
}

bool isComputeTraceAction(std::string_view name) {
  const TraceActionInfo* r = traceActionInfo(name);
  return r && r->role != TraceRole::Communication;
}

}  // namespace pm
