#pragma once
// Memory of one pipeline stage by category under each schedule (docs/pipemare.md section 5,
// docs/planner.md section 3). Bytes; no LibTorch. The categories are those of the engine's
// StageMemory (core/engine/memory_accounting.h), so planned and measured figures line up.
#include <cstdint>

#include "core/planner/delay_model.h"
#include "core/planner/planner_types.h"
#include "core/planner/stage_profile.h"

namespace pm {

struct MemoryBreakdown {
  int64_t weights = 0;      // W: the current weights
  int64_t gradients = 0;    // G = W: the gradient (accumulation) buffer
  int64_t optimizer = 0;    // S: sgd 0, momentum W, adam 2W
  int64_t stash = 0;        // (versions - 1) * W: stashed weight versions (pipedream, 2bw)
  int64_t delta = 0;        // W with PipeMare T2
  int64_t activations = 0;  // activations / stage inputs kept for the backward
  int64_t total() const { return weights + gradients + optimizer + stash + delta + activations; }
  // The "weight + optimizer memory" of the 2.7x comparison: weights + stash + optimizer + delta.
  int64_t weightAndOptimizer() const { return weights + stash + optimizer + delta; }
  MemoryBreakdown& operator+=(const MemoryBreakdown& o);
};

// Element-wise maximum (per-stage maxima).
MemoryBreakdown elementwiseMax(const MemoryBreakdown& a, const MemoryBreakdown& b);

// Stage memory from the method's declared traits, with F = timing.inFlight, N microbatches and m
// the 2bw interval (the rows as they come out for today's schedules):
//  gpipe           W + G + S + N*A
//  gpipe+recompute W + G + S + N*X + A
//  1f1b, zb-h1     W + G + S + min(N, F)*A        (F already capped at N by stageTimings)
//  pipedream       W + G + S + tau*W stash + F*A  (tau+1 versions)
//  pipedream-2bw   W + G + S + tau*W stash + min(m, F)*A
//  pipemare        W + G + S + F*X + A            (stage inputs kept, one recompute at a time)
//  pipemare+T2     as pipemare + W delta
MemoryBreakdown stageMemory(const TrainingMethod& method, OptimizerKind optimizer, const StageProfile& stage,
                            const StageTiming& timing, int microbatches, int m);

}  // namespace pm
