#include "core/planner/memory_model.h"

#include <algorithm>

namespace pm {

MemoryBreakdown& MemoryBreakdown::operator+=(const MemoryBreakdown& o) {
  weights += o.weights;
  gradients += o.gradients;
  optimizer += o.optimizer;
  stash += o.stash;
  delta += o.delta;
  activations += o.activations;
  return *this;
}

MemoryBreakdown elementwiseMax(const MemoryBreakdown& a, const MemoryBreakdown& b) {
  MemoryBreakdown r;
  r.weights = std::max(a.weights, b.weights);
  r.gradients = std::max(a.gradients, b.gradients);
  r.optimizer = std::max(a.optimizer, b.optimizer);
  r.stash = std::max(a.stash, b.stash);
  r.delta = std::max(a.delta, b.delta);
  r.activations = std::max(a.activations, b.activations);
  return r;
}

MemoryBreakdown stageMemory(PlanSchedule schedule, OptimizerKind optimizer, const StageProfile& st,
                            const StageTiming& t, int microbatches, int m) {
  const int64_t W = st.weightBytes, X = st.inputBytes, A = st.activationBytes;
  const int64_t N = microbatches;
  MemoryBreakdown mem;
  mem.weights = W;
  mem.gradients = W;
  mem.optimizer = optimizerStateMultiple(optimizer) * W;
  switch (schedule) {
    case PlanSchedule::GPipe: mem.activations = N * A; break;
    case PlanSchedule::GPipeRecompute: mem.activations = N * X + A; break;
    case PlanSchedule::OneFOneB:
    case PlanSchedule::ZbH1: mem.activations = std::min(N, t.inFlight) * A; break;
    case PlanSchedule::PipeDream:
      mem.stash = (t.versions - 1) * W;
      mem.activations = t.inFlight * A;
      break;
    case PlanSchedule::PipeDream2BW:
      mem.stash = (t.versions - 1) * W;
      mem.activations = std::min<int64_t>(m, t.inFlight) * A;
      break;
    case PlanSchedule::PipeMare: mem.activations = t.inFlight * X + A; break;
    case PlanSchedule::PipeMareT2:
      mem.delta = t.tau > 0 ? W : 0;  // a stage without delay (the last, software timing) needs no correction
      mem.activations = t.inFlight * X + A;
      break;
  }
  return mem;
}

}  // namespace pm
