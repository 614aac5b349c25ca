#pragma once
// The analytic planner: for each schedule, the per-stage delays, weight versions, microbatches in
// flight and memory by category, plus utilization and bubble, from the stage profiles alone
// (docs/planner.md). Pure arithmetic, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "core/planner/delay_model.h"
#include "core/planner/memory_model.h"
#include "core/planner/planner_types.h"
#include "core/planner/stage_profile.h"

namespace pm {

struct PlanSpec {
  TimingModel timing = TimingModel::Paper;
  OptimizerKind optimizer = OptimizerKind::SgdMomentum;
  int microbatches = 1;             // N
  int updateInterval = 0;           // pipedream: microbatches per step (0 = N, the paper's comparison)
  int m = 0;                        // pipedream-2bw: microbatches per step (0 = max(N, P)), >= P
  int64_t totalMicrobatches = 0;    // asynchronous utilization over T microbatches (0 = steady state)
  std::vector<double> stageCosts;   // forward+backward time per stage (empty = equal stages)
  double warmupFraction = 0;        // pipemare: share of the minibatches run first as gpipe (warm-up), 0..1
};

struct StagePlan {
  StageTiming timing;
  MemoryBreakdown memory;
};

struct SchedulePlan {
  PlanSchedule schedule = PlanSchedule::GPipe;
  int stages = 0;
  int microbatches = 0;
  int updateInterval = 0;  // microbatches per optimizer step
  std::vector<StagePlan> perStage;
  double utilization = 0;  // busy share of the stages' time
  double bubble = 0;       // 1 - utilization
  int64_t maxTau = 0, maxVersions = 1, maxInFlight = 0;
  MemoryBreakdown total;        // summed over stages
  MemoryBreakdown perStageMax;  // category-wise maximum over stages
  int64_t maxStageTotal = 0;    // the largest stage total (what one device must hold)
};

// Flushed schedules (gpipe, 1f1b), one minibatch of N microbatches, stage i taking c_i per
// microbatch (forward + backward): N*sum(c) / (P * ((N-1)*max(c) + sum(c))); with equal stages
// N/(N+P-1). Empty costs = equal stages.
double synchronousUtilization(int stages, int microbatches, const std::vector<double>& costs);
// Unflushed schedules: steady state (T = 0) sum(c) / (P*max(c)) (1 for equal stages); over T
// microbatches with one fill and drain T*sum(c) / (P * ((T-1)*max(c) + sum(c))), T/(T+P-1) equal.
double asynchronousUtilization(int stages, int64_t totalMicrobatches, const std::vector<double>& costs);

// A run whose first `fraction` of the minibatches go at utilization uFirst and the rest at uRest
// (pipemare after a synchronous warm-up): the time-weighted mix, 1 / (f/uFirst + (1-f)/uRest),
// since each minibatch is the same work. Throws std::invalid_argument for f outside [0, 1] or a
// utilization outside (0, 1].
double hybridUtilization(double fraction, double uFirst, double uRest);

// The delay-model parameters of `schedule` over `stages` stages under `spec`.
DelayParams delayParams(PlanSchedule schedule, int stages, const PlanSpec& spec);

// Throws std::invalid_argument on bad parameters (no stages, N < 1, costs of the wrong size, m < P).
SchedulePlan planSchedule(PlanSchedule schedule, const std::vector<StageProfile>& stages, const PlanSpec& spec);

struct PlanComparison {
  PlanSpec spec;
  std::vector<SchedulePlan> plans;  // in allPlanSchedules() order
  const SchedulePlan& plan(PlanSchedule s) const;
  double utilizationRatio() const;    // pipemare / gpipe utilization
  // pipemare after its warm-up (spec.warmupFraction of the minibatches as gpipe): the hybrid's
  // utilization; pipemare's own without a warm-up.
  double warmupUtilization() const;
  double memoryRatio() const;         // weight+optimizer memory, pipedream / pipemare+T2 (sum over stages)
  double memoryRatioNoDelta() const;  // weight+optimizer memory, pipedream / pipemare without T2
};

PlanComparison planAll(const std::vector<StageProfile>& stages, const PlanSpec& spec);

// One paragraph saying which accounting the figures use (timing model, delay and version
// formulas, what W, G, S, A, X are, what the memory ratio compares).
std::string accountingText(const PlanSpec& spec);

}  // namespace pm
