#include "core/planner/analytic_planner.h"

#include "core/planner/timeline_sim.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace pm {

namespace {

// A split backward (ZB-H1) has no closed form once stage costs differ (and none where T_W > T_F):
// the schedule's own lists are run in the discrete-event timeline, one minibatch, with the
// measured F, BI and W where the spec has them, else each stage's cost split T_F = T_B = T_W (the
// zero-bubble paper's assumption, and costsFromStages' split of a backward twice the forward).
double simulatedSplitUtilization(ScheduleKind kind, int P, const PlanSpec& spec) {
  SimCosts c;
  const bool measured = !spec.forwardCosts.empty();
  for (int s = 0; s < P; ++s) {
    const size_t i = static_cast<size_t>(s);
    const double cost = spec.stageCosts.empty() ? 1.0 : spec.stageCosts[i];
    c.forward.push_back(measured ? spec.forwardCosts[i] : cost / 3);
    c.backward.push_back(measured ? spec.inputCosts[i] + spec.weightCosts[i] : 2 * cost / 3);
    c.weight.push_back(measured ? spec.weightCosts[i] : cost / 3);
  }
  ScheduleParams sp;
  sp.kind = kind;
  sp.stages = P;
  sp.microbatches = spec.microbatches;
  const SimResult r = simulateTimeline(sp, c);
  return r.meanUtilization;
}

}  // namespace

DelayParams delayParams(const TrainingMethod& method, int stages, const PlanSpec& spec) {
  DelayParams dp;
  dp.method = method;
  dp.timing = spec.timing;
  dp.stages = stages;
  dp.microbatches = spec.microbatches;
  dp.updateInterval = spec.updateInterval;
  dp.m = spec.m;
  return dp;
}

SchedulePlan planSchedule(const TrainingMethod& method, const std::vector<StageProfile>& stages, const PlanSpec& spec) {
  const int P = static_cast<int>(stages.size());
  if (P < 1) throw std::invalid_argument("no stages to plan");
  if (method.decl().chunks != 1)
    throw std::invalid_argument(method.name() + " holds several model chunks per rank: planned by planChunked");
  for (const auto* v : {&spec.forwardCosts, &spec.inputCosts, &spec.weightCosts})
    if (!spec.forwardCosts.empty() && v->size() != static_cast<size_t>(P))
      throw std::invalid_argument("measured op costs: " + std::to_string(v->size()) + " values for " + std::to_string(P) + " stages");
  const DelayParams dp = delayParams(method, P, spec);
  const auto timings = stageTimings(dp);  // validates N, u, m

  SchedulePlan plan;
  plan.method = method;
  plan.stages = P;
  plan.microbatches = spec.microbatches;
  plan.updateInterval = updateIntervalOf(dp);
  const int m2bw = spec.m > 0 ? spec.m : std::max(spec.microbatches, P);
  for (int s = 0; s < P; ++s) {
    StagePrediction sp;
    sp.timing = timings[static_cast<size_t>(s)];
    sp.memory = stageMemory(method, spec.optimizer, stages[static_cast<size_t>(s)], sp.timing, spec.microbatches, m2bw);
    plan.maxTau = std::max(plan.maxTau, sp.timing.tau);
    plan.maxVersions = std::max(plan.maxVersions, sp.timing.versions);
    plan.maxInFlight = std::max(plan.maxInFlight, sp.timing.inFlight);
    plan.total += sp.memory;
    plan.perStageMax = elementwiseMax(plan.perStageMax, sp.memory);
    plan.maxStageTotal = std::max(plan.maxStageTotal, sp.memory.total());
    plan.perStage.push_back(sp);
  }
  const ScheduleDecl& d = method.decl();
  plan.utilization = !d.synchronous    ? asynchronousUtilization(P, spec.totalMicrobatches, spec.stageCosts)
                     : d.splitBackward ? simulatedSplitUtilization(method.schedule, P, spec)
                                       : synchronousUtilization(P, spec.microbatches, spec.stageCosts);
  plan.bubble = 1.0 - plan.utilization;
  if (spec.stageCosts.empty()) {
    plan.bottleneckShare = 1.0 / P;
  } else {
    const auto slowest = std::max_element(spec.stageCosts.begin(), spec.stageCosts.end());
    plan.bottleneckStage = static_cast<int>(slowest - spec.stageCosts.begin());
    plan.bottleneckShare = *slowest / std::accumulate(spec.stageCosts.begin(), spec.stageCosts.end(), 0.0);
  }
  return plan;
}

SchedulePlan planChunked(const TrainingMethod& method, int ranks, const PlanSpec& spec, const ChunkedStagesFn& split) {
  const ScheduleDecl& d = method.decl();
  const int v = d.chunks == 0 ? spec.chunks : d.chunks;
  if (ranks < 1) throw std::invalid_argument("no ranks to plan");
  if (v < 2) throw std::invalid_argument(method.name() + " needs at least 2 chunks per rank, found " + std::to_string(v));
  if (spec.microbatches < 1) throw std::invalid_argument("microbatches must be >= 1, got " + std::to_string(spec.microbatches));
  ScheduleParams sp;
  sp.kind = method.schedule;
  sp.stages = v * ranks;
  sp.microbatches = spec.microbatches;
  sp.chunks = v;
  std::vector<std::vector<Action>> lists;
  for (int r = 0; r < ranks; ++r) lists.push_back(rankComputeActions(sp, r));  // invalid_argument: does not apply
  const ChunkedStages model = split(sp.stages);
  if (model.stages.size() != static_cast<size_t>(sp.stages))
    throw std::invalid_argument("the model split gave " + std::to_string(model.stages.size()) + " stages for " + std::to_string(sp.stages));
  // With equal stages (no stage costs, none measured: the planner's default for one stage per
  // weight layer) the one-chunk rows cost every stage alike, so every chunk costs alike here too
  // (T_F = T_BI = T_W): the rows then differ by their schedules, not by the split's FLOPs.
  RankOpCosts costs = model.costs;
  if (spec.stageCosts.empty() && spec.forwardCosts.empty()) {
    const size_t n = static_cast<size_t>(sp.stages);
    costs.forward.assign(n, 1.0);
    costs.backward.assign(n, 2.0);
    costs.backwardInput.assign(n, 1.0);
    costs.weight.assign(n, 1.0);
    costs.step.clear();
  }
  const SimResult sim = simulateRankOps(lists, v, [&](int r, int c) { return stageOfChunk(sp, r, c); }, costs);

  SchedulePlan plan;
  plan.method = method;
  plan.chunks = v;
  plan.stages = ranks;
  plan.microbatches = spec.microbatches;
  plan.updateInterval = spec.microbatches;
  for (int s = 0; s < sp.stages; ++s) plan.stageRanks.push_back(chunkPlace(sp, s).rank);
  for (int r = 0; r < ranks; ++r) {
    StagePrediction pr;
    int64_t W = 0;
    for (int c = 0; c < v; ++c) W += model.stages[static_cast<size_t>(stageOfChunk(sp, r, c))].weightBytes;
    pr.memory.weights = W;
    pr.memory.gradients = W;
    pr.memory.optimizer = optimizerStateMultiple(spec.optimizer) * W;
    // The rank's activations along its own order: what F keeps until its B, or its BI's W.
    int64_t held = 0, peak = 0, count = 0, peakCount = 0;
    for (const Action& a : lists[static_cast<size_t>(r)]) {
      const int64_t A = model.stages[static_cast<size_t>(stageOfChunk(sp, r, a.chunk))].activationBytes;
      if (a.kind == ActionKind::Forward) {
        held += A;
        ++count;
      } else if (a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardWeight) {
        held -= A;
        --count;
      }
      peak = std::max(peak, held);
      peakCount = std::max(peakCount, count);
    }
    pr.memory.activations = peak;
    pr.timing.inFlight = peakCount;
    plan.maxInFlight = std::max(plan.maxInFlight, peakCount);
    plan.total += pr.memory;
    plan.perStageMax = elementwiseMax(plan.perStageMax, pr.memory);
    plan.maxStageTotal = std::max(plan.maxStageTotal, pr.memory.total());
    plan.perStage.push_back(pr);
  }
  plan.utilization = sim.meanUtilization;
  plan.bubble = 1.0 - plan.utilization;
  // The busiest rank and its share of all ranks' work (its chunks' op costs).
  const auto busiest = std::max_element(sim.busy.begin(), sim.busy.end());
  const double work = std::accumulate(sim.busy.begin(), sim.busy.end(), 0.0);
  plan.bottleneckStage = static_cast<int>(busiest - sim.busy.begin());
  plan.bottleneckShare = work > 0 ? *busiest / work : 1.0 / ranks;
  return plan;
}

const SchedulePlan& PlanComparison::plan(const TrainingMethod& s) const {
  for (const auto& p : plans)
    if (p.method == s) return p;
  throw std::invalid_argument("no plan for schedule " + s.name());
}

double PlanComparison::utilizationRatio() const {
  return plan(TrainingMethod{ScheduleKind::PipeMare}).utilization / plan(TrainingMethod{ScheduleKind::GPipe}).utilization;
}

double PlanComparison::warmupUtilization() const {
  return hybridUtilization(spec.warmupFraction, plan(TrainingMethod{ScheduleKind::GPipe}).utilization, plan(TrainingMethod{ScheduleKind::PipeMare}).utilization);
}

double PlanComparison::memoryRatio() const {
  return static_cast<double>(plan(TrainingMethod{ScheduleKind::PipeDream}).total.weightAndOptimizer()) /
         static_cast<double>(plan(TrainingMethod{ScheduleKind::PipeMare, false, false, true}).total.weightAndOptimizer());
}

double PlanComparison::memoryRatioNoDelta() const {
  return static_cast<double>(plan(TrainingMethod{ScheduleKind::PipeDream}).total.weightAndOptimizer()) /
         static_cast<double>(plan(TrainingMethod{ScheduleKind::PipeMare}).total.weightAndOptimizer());
}

PlanComparison planAll(const std::vector<StageProfile>& stages, const PlanSpec& spec, const ChunkedStagesFn& split) {
  PlanComparison c;
  c.spec = spec;
  for (auto s : planMethods()) {
    if (s.decl().chunks == 1) {
      c.plans.push_back(planSchedule(s, stages, spec));
      continue;
    }
    if (!split) {
      c.notPlanned.push_back({s, "no model split into chunks was given"});
      continue;
    }
    try {
      c.plans.push_back(planChunked(s, static_cast<int>(stages.size()), spec, split));
    } catch (const std::invalid_argument& e) {
      c.notPlanned.push_back({s, e.what()});
    }
  }
  return c;
}

std::vector<double> stageCostsOf(const std::vector<double>& forward, const std::vector<double>& backward) {
  if (forward.size() != backward.size())
    throw std::invalid_argument("stage costs: " + std::to_string(forward.size()) + " forward and " +
                                std::to_string(backward.size()) + " backward times");
  std::vector<double> c;
  for (size_t s = 0; s < forward.size(); ++s) c.push_back(forward[s] + backward[s]);
  return c;
}

std::string accountingText(const PlanSpec& spec) {
  std::string t;
  if (spec.timing == PipelineTiming::Paper) {
    t += "timing model: paper (fine-grained pipeline, one forward and one backward per stage per time step): "
         "microbatches in flight at stage i F_i = 2(P-i)+1, delay tau_i = ceil((2(P-i)+1)/u) with u microbatches per "
         "update (pipemare u = N";
  } else {
    t += "timing model: software 1F1B (one forward or one backward at a time, as the engine's schedules): "
         "in flight F_i = P-i+1, delay tau_i = ceil((P-i)/u) with u microbatches per update, equal to "
         "maxObservedDelay on stageActions (pipemare u = N";
  }
  t += ", pipedream u = " + (spec.updateInterval > 0 ? std::to_string(spec.updateInterval) : std::string("N")) +
       ", pipedream-2bw tau = 1 by construction); synchronous schedules (gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v) tau = 0. ";
  t += "Memory per stage: W = parameter bytes (fp32; BatchNorm running statistics excluded), G = W, S = " +
       std::string(spec.optimizer == OptimizerKind::Sgd           ? "0 (sgd)"
                   : spec.optimizer == OptimizerKind::SgdMomentum ? "W (sgd momentum)"
                                                                  : "2W (adam moments)") +
       ", A = activations kept per microbatch, X = stage input per microbatch; gpipe N*A (recompute N*X + A), "
       "1f1b min(N, P-i+1)*A, zb-h1 its graphs from F to W (counted on its list)*A, pipedream tau_i+1 weight versions (stash tau_i*W) + F_i*A, 2bw 2 versions + "
       "min(m, F_i)*A, pipemare F_i*X + A (+ W delta with T2); interleaved-1f1b and zb-v per rank: its v chunks' W + G + S "
       "and the peak of the chunk activations its own order keeps (F to B, or F to W after BI). ";
  t += "Utilization: gpipe/1f1b N/(N+P-1), zb-h1 simulated on its own lists, interleaved-1f1b (v = " +
       std::to_string(spec.chunks) + ") and zb-v (v = 2) simulated on each rank's list over v x P stages, asynchronous " +
       std::string(spec.totalMicrobatches > 0 ? "T/(T+P-1) with T = " + std::to_string(spec.totalMicrobatches)
                                              : "1 (steady state)") +
       (spec.stageCosts.empty() ? " (equal stages)"
                                : " (bottleneck form with each stage's forward+backward time c_i: flushed "
                                  "N*sum(c)/(P*((N-1)*max(c)+sum(c))), asynchronous sum(c)/(P*max(c)) in the steady state)") +
       ". ";
  t += "Memory ratio: sum over stages of weights+stash+optimizer for pipedream, i.e. ((tau_i+1)*W_i + S_i), over "
       "weights+optimizer+delta for pipemare+T2, i.e. (W_i + S_i + W_i).";
  return t;
}

}  // namespace pm
