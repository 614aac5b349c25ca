#pragma once
// The analytic planner: for each schedule, the per-stage delays, weight versions, microbatches in
// flight and memory by category, plus utilization and bubble, from the stage profiles alone
// (docs/planner.md). Pure arithmetic, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "core/pipeline/utilization.h"
#include "core/planner/delay_model.h"
#include "core/planner/memory_model.h"
#include "core/planner/planner_types.h"
#include "core/planner/stage_profile.h"

namespace pm {

struct PlanSpec {
  PipelineTiming timing = PipelineTiming::Paper;
  OptimizerKind optimizer = OptimizerKind::SgdMomentum;
  int microbatches = 1;             // N
  int updateInterval = 0;           // pipedream: microbatches per step (0 = N, the paper's comparison)
  int m = 0;                        // pipedream-2bw: microbatches per step (0 = max(N, P)), >= P
  int64_t totalMicrobatches = 0;    // asynchronous utilization over T microbatches (0 = steady state)
  std::vector<double> stageCosts;   // forward+backward time per stage (empty = equal stages)
  // A split backward's measured op costs per stage (plan --stage-costs measured): F, BI and W.
  // Empty: each stage's cost split T_F = T_B = T_W (the zero-bubble paper's assumption).
  std::vector<double> forwardCosts, inputCosts, weightCosts;
  double warmupFraction = 0;        // pipemare: share of the minibatches run first as gpipe (warm-up), 0..1
};

struct StagePrediction {
  StageTiming timing;
  MemoryBreakdown memory;
};

struct SchedulePlan {
  TrainingMethod method;
  int stages = 0;
  int microbatches = 0;
  int updateInterval = 0;  // microbatches per optimizer step
  std::vector<StagePrediction> perStage;
  double utilization = 0;  // busy share of the stages' time (steady state / per minibatch, spec.stageCosts)
  double bubble = 0;       // 1 - utilization
  // The slowest stage (largest spec.stageCosts entry; the first of equals) and its share of the
  // work of all stages, max(c) / sum(c): 1/P for equal stages (stage -1: no costs given). An
  // unflushed pipeline runs at the pace of this stage: its steady-state utilization is
  // 1 / (P * share).
  int bottleneckStage = -1;
  double bottleneckShare = 0;
  int64_t maxTau = 0, maxVersions = 1, maxInFlight = 0;
  MemoryBreakdown total;        // summed over stages
  MemoryBreakdown perStageMax;  // category-wise maximum over stages
  int64_t maxStageTotal = 0;    // the largest stage total (what one device must hold)
};

// The delay-model parameters of `method` over `stages` stages under `spec`.
DelayParams delayParams(const TrainingMethod& method, int stages, const PlanSpec& spec);

// Throws std::invalid_argument on bad parameters (no stages, N < 1, costs of the wrong size, m < P).
SchedulePlan planSchedule(const TrainingMethod& method, const std::vector<StageProfile>& stages, const PlanSpec& spec);

struct PlanComparison {
  PlanSpec spec;
  std::vector<SchedulePlan> plans;  // in planMethods() order
  const SchedulePlan& plan(const TrainingMethod& s) const;
  double utilizationRatio() const;    // pipemare / gpipe utilization
  // pipemare after its warm-up (spec.warmupFraction of the minibatches as gpipe): the hybrid's
  // utilization; pipemare's own without a warm-up.
  double warmupUtilization() const;
  double memoryRatio() const;         // weight+optimizer memory, pipedream / pipemare+T2 (sum over stages)
  double memoryRatioNoDelta() const;  // weight+optimizer memory, pipedream / pipemare without T2
};

PlanComparison planAll(const std::vector<StageProfile>& stages, const PlanSpec& spec);

// Forward + backward time per stage of a simulation's costs: the stage times the analytic
// utilization uses (PlanSpec::stageCosts) so that it predicts the same stages as the timeline.
std::vector<double> stageCostsOf(const std::vector<double>& forward, const std::vector<double>& backward);

// One paragraph saying which accounting the figures use (timing model, delay and version
// formulas, what W, G, S, A, X are, what the memory ratio compares).
std::string accountingText(const PlanSpec& spec);

}  // namespace pm
