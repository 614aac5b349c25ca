#include "core/planner/analytic_planner.h"

#include "core/planner/timeline_sim.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace pm {

namespace {

// ZB-H1 has no closed form once stage costs differ (and none where T_W > T_F): its lists are run
// in the discrete-event timeline, one minibatch, each stage's cost split T_F = T_B = T_W (the
// zero-bubble paper's assumption, and costsFromStages' split of a backward twice the forward;
// the profile gives forward + backward only).
double zbH1Utilization(int P, int N, const std::vector<double>& stageCosts) {
  SimCosts c;
  for (int s = 0; s < P; ++s) {
    const double cost = stageCosts.empty() ? 1.0 : stageCosts[static_cast<size_t>(s)];
    c.forward.push_back(cost / 3);
    c.backward.push_back(2 * cost / 3);
    c.weight.push_back(cost / 3);
  }
  ScheduleParams sp;
  sp.kind = ScheduleKind::ZBH1;
  sp.stages = P;
  sp.microbatches = N;
  const SimResult r = simulateTimeline(sp, c);
  return r.meanUtilization;
}

}  // namespace

DelayParams delayParams(PlanSchedule schedule, int stages, const PlanSpec& spec) {
  DelayParams dp;
  dp.schedule = schedule;
  dp.timing = spec.timing;
  dp.stages = stages;
  dp.microbatches = spec.microbatches;
  dp.updateInterval = spec.updateInterval;
  dp.m = spec.m;
  return dp;
}

SchedulePlan planSchedule(PlanSchedule schedule, const std::vector<StageProfile>& stages, const PlanSpec& spec) {
  const int P = static_cast<int>(stages.size());
  if (P < 1) throw std::invalid_argument("no stages to plan");
  const DelayParams dp = delayParams(schedule, P, spec);
  const auto timings = stageTimings(dp);  // validates N, u, m

  SchedulePlan plan;
  plan.schedule = schedule;
  plan.stages = P;
  plan.microbatches = spec.microbatches;
  plan.updateInterval = updateIntervalOf(dp);
  const int m2bw = spec.m > 0 ? spec.m : std::max(spec.microbatches, P);
  for (int s = 0; s < P; ++s) {
    StagePrediction sp;
    sp.timing = timings[static_cast<size_t>(s)];
    sp.memory = stageMemory(schedule, spec.optimizer, stages[static_cast<size_t>(s)], sp.timing, spec.microbatches, m2bw);
    plan.maxTau = std::max(plan.maxTau, sp.timing.tau);
    plan.maxVersions = std::max(plan.maxVersions, sp.timing.versions);
    plan.maxInFlight = std::max(plan.maxInFlight, sp.timing.inFlight);
    plan.total += sp.memory;
    plan.perStageMax = elementwiseMax(plan.perStageMax, sp.memory);
    plan.maxStageTotal = std::max(plan.maxStageTotal, sp.memory.total());
    plan.perStage.push_back(sp);
  }
  plan.utilization = isAsynchronous(schedule)          ? asynchronousUtilization(P, spec.totalMicrobatches, spec.stageCosts)
                     : schedule == PlanSchedule::ZbH1 ? zbH1Utilization(P, spec.microbatches, spec.stageCosts)
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

const SchedulePlan& PlanComparison::plan(PlanSchedule s) const {
  for (const auto& p : plans)
    if (p.schedule == s) return p;
  throw std::invalid_argument("no plan for schedule " + planScheduleName(s));
}

double PlanComparison::utilizationRatio() const {
  return plan(PlanSchedule::PipeMare).utilization / plan(PlanSchedule::GPipe).utilization;
}

double PlanComparison::warmupUtilization() const {
  return hybridUtilization(spec.warmupFraction, plan(PlanSchedule::GPipe).utilization, plan(PlanSchedule::PipeMare).utilization);
}

double PlanComparison::memoryRatio() const {
  return static_cast<double>(plan(PlanSchedule::PipeDream).total.weightAndOptimizer()) /
         static_cast<double>(plan(PlanSchedule::PipeMareT2).total.weightAndOptimizer());
}

double PlanComparison::memoryRatioNoDelta() const {
  return static_cast<double>(plan(PlanSchedule::PipeDream).total.weightAndOptimizer()) /
         static_cast<double>(plan(PlanSchedule::PipeMare).total.weightAndOptimizer());
}

PlanComparison planAll(const std::vector<StageProfile>& stages, const PlanSpec& spec) {
  PlanComparison c;
  c.spec = spec;
  for (auto s : allPlanSchedules()) c.plans.push_back(planSchedule(s, stages, spec));
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
  if (spec.timing == TimingModel::Paper) {
    t += "timing model: paper (fine-grained pipeline, one forward and one backward per stage per time step): "
         "microbatches in flight at stage i F_i = 2(P-i)+1, delay tau_i = ceil((2(P-i)+1)/u) with u microbatches per "
         "update (pipemare u = N";
  } else {
    t += "timing model: software 1F1B (one forward or one backward at a time, as the engine's schedules): "
         "in flight F_i = P-i+1, delay tau_i = ceil((P-i)/u) with u microbatches per update, equal to "
         "maxObservedDelay on stageActions (pipemare u = N";
  }
  t += ", pipedream u = " + (spec.updateInterval > 0 ? std::to_string(spec.updateInterval) : std::string("N")) +
       ", pipedream-2bw tau = 1 by construction); gpipe/1f1b tau = 0. ";
  t += "Memory per stage: W = parameter bytes (fp32; BatchNorm running statistics excluded), G = W, S = " +
       std::string(spec.optimizer == OptimizerKind::Sgd           ? "0 (sgd)"
                   : spec.optimizer == OptimizerKind::SgdMomentum ? "W (sgd momentum)"
                                                                  : "2W (adam moments)") +
       ", A = activations kept per microbatch, X = stage input per microbatch; gpipe N*A (recompute N*X + A), "
       "1f1b min(N, F_i)*A, pipedream tau_i+1 weight versions (stash tau_i*W) + F_i*A, 2bw 2 versions + "
       "min(m, F_i)*A, pipemare F_i*X + A (+ W delta with T2). ";
  t += "Utilization: gpipe/1f1b N/(N+P-1), asynchronous " +
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
