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

MemoryBreakdown stageMemory(const TrainingMethod& method, OptimizerKind optimizer, const StageProfile& st,
                            const StageTiming& t, int microbatches, int m) {
  const int64_t W = st.weightBytes, X = st.inputBytes, A = st.activationBytes;
  const int64_t N = microbatches;
  MemoryBreakdown mem;
  mem.weights = W;
  mem.gradients = W;
  mem.optimizer = optimizerStateMultiple(optimizer) * W;
  const ScheduleDecl& d = method.decl();
  // Microbatches whose activations a stage holds: what is in flight, at most the minibatch on a
  // flushed schedule and at most m between 2bw's steps.
  int64_t held = t.inFlight;
  if (d.synchronous) held = std::min(N, held);
  if (d.weights == WeightFamily::TwoVersions) held = std::min<int64_t>(m, held);
  // With recompute a stage keeps each held microbatch's input and one microbatch's activations
  // (the one being recomputed); pipemare always does (its backward re-runs the forward on the
  // weights it predicts).
  const bool keepsInputs = method.recompute || d.weights == WeightFamily::Predicted;
  mem.activations = keepsInputs ? held * X + A : held * A;
  if (d.weights == WeightFamily::Stash || d.weights == WeightFamily::TwoVersions) mem.stash = (t.versions - 1) * W;
  if (method.t2) mem.delta = t.tau > 0 ? W : 0;  // a stage without delay (the last, software timing) needs no correction
  return mem;
}

}  // namespace pm
