#pragma once
// The analytic planner: for each schedule, the per-stage delays, weight versions, microbatches in
// flight and memory by category, plus utilization and bubble, from the stage profiles alone
// (docs/planner.md). Pure arithmetic, no LibTorch.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/pipeline/utilization.h"
#include "core/planner/delay_model.h"
#include "core/planner/memory_model.h"
#include "core/planner/planner_types.h"
#include "core/planner/stage_profile.h"
#include "core/planner/timeline_sim.h"

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
  int chunks = 2;                   // interleaved-1f1b: model chunks per rank, v (zb-v always holds 2)
};

// The model split for a schedule with several chunks per rank: its v x P stages in model order
// (the engine's stages) and each stage's op costs (seconds per microbatch).
struct ChunkedStages {
  std::vector<StageProfile> stages;
  RankOpCosts costs;
};
// Splits the model into `modelStages` stages; throws std::invalid_argument naming why it cannot
// (more stages than the model has units).
using ChunkedStagesFn = std::function<ChunkedStages(int modelStages)>;

struct StagePrediction {
  StageTiming timing;
  MemoryBreakdown memory;
};

struct SchedulePlan {
  TrainingMethod method;
  // Model chunks per rank. With several, perStage holds one entry per rank (its chunks together:
  // their weights, gradients and optimizer state, and the peak of the activations its order keeps;
  // timing.inFlight then counts chunk activations, one chunk's of one microbatch each), `stages`
  // counts the ranks, and stageRanks places each of the v x P model stages on its rank.
  int chunks = 1;
  std::vector<int> stageRanks;
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

// Throws std::invalid_argument on bad parameters (no stages, N < 1, costs of the wrong size, m < P,
// a schedule with several chunks per rank: planChunked).
SchedulePlan planSchedule(const TrainingMethod& method, const std::vector<StageProfile>& stages, const PlanSpec& spec);

// A schedule with several chunks per rank over P ranks: the model split into v x P stages by
// `split`, each rank's list (rankComputeActions) run in the discrete-event simulation (one
// minibatch) for the utilization, and each rank's memory counted along its own order: F keeps a
// chunk's activations, B frees them, BI keeps them until W (autograd's graph and the units' output
// gradients stay alive for the pending W, as in the engine). Throws std::invalid_argument when the
// schedule does not apply (interleaved: N % P != 0) or the model cannot be split so.
SchedulePlan planChunked(const TrainingMethod& method, int ranks, const PlanSpec& spec, const ChunkedStagesFn& split);

struct PlanComparison {
  PlanSpec spec;
  std::vector<SchedulePlan> plans;  // in planMethods() order
  // Rows of planMethods() without a plan, and why (a chunked schedule that does not apply here).
  std::vector<std::pair<TrainingMethod, std::string>> notPlanned;
  const SchedulePlan& plan(const TrainingMethod& s) const;
  double utilizationRatio() const;    // pipemare / gpipe utilization
  // pipemare after its warm-up (spec.warmupFraction of the minibatches as gpipe): the hybrid's
  // utilization; pipemare's own without a warm-up.
  double warmupUtilization() const;
  double memoryRatio() const;         // weight+optimizer memory, pipedream / pipemare+T2 (sum over stages)
  double memoryRatioNoDelta() const;  // weight+optimizer memory, pipedream / pipemare without T2
};

// Every row of planMethods(): the one-stage-per-rank rows over `stages`, the chunked rows over
// `split`'s stages (without `split` they are left out, in notPlanned).
PlanComparison planAll(const std::vector<StageProfile>& stages, const PlanSpec& spec, const ChunkedStagesFn& split = {});

// Forward + backward time per stage of a simulation's costs: the stage times the analytic
// utilization uses (PlanSpec::stageCosts) so that it predicts the same stages as the timeline.
std::vector<double> stageCostsOf(const std::vector<double>& forward, const std::vector<double>& backward);

// One paragraph saying which accounting the figures use (timing model, delay and version
// formulas, what W, G, S, A, X are, what the memory ratio compares).
std::string accountingText(const PlanSpec& spec);

}  // namespace pm
