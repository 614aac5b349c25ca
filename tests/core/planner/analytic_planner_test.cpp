#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/planner/analytic_planner.h"
#include "core/planner/model_profile.h"
#include "core/planner/timeline_sim.h"

using namespace pm;

namespace {
TrainingMethod method(const char* name) { return trainingMethodFromName(name); }
}  // namespace

namespace {

const std::vector<StageProfile>& resnet50Layers() {
  static const auto stages = layerStages(cachedModelProfile("resnet50"), 1);
  return stages;
}

PlanSpec spec(int N, PipelineTiming t = PipelineTiming::Paper, OptimizerKind o = OptimizerKind::SgdMomentum) {
  PlanSpec s;
  s.microbatches = N;
  s.timing = t;
  s.optimizer = o;
  return s;
}

std::vector<StageProfile> equalStages(int P, int64_t W = 1000, int64_t X = 10, int64_t A = 30) {
  std::vector<StageProfile> v(static_cast<size_t>(P));
  for (auto& s : v) {
    s.weightBytes = W;
    s.inputBytes = X;
    s.activationBytes = A;
    s.outputBytes = X;
    s.forwardFlops = 1;
  }
  return v;
}

}  // namespace

// docs/pipemare.md section 5: the abstract's numbers, one stage per weight layer of ResNet-50.
TEST(AnalyticPlanner, PaperUtilizationRatios) {
  const auto& stages = resnet50Layers();
  ASSERT_EQ(stages.size(), 107u);
  const auto n32 = planAll(stages, spec(32));
  EXPECT_NEAR(n32.plan(method("gpipe")).utilization, 32.0 / 138.0, 1e-12);
  EXPECT_NEAR(n32.plan(method("gpipe")).utilization, 0.232, 5e-4);
  EXPECT_DOUBLE_EQ(n32.plan(method("pipemare")).utilization, 1.0);
  EXPECT_NEAR(n32.utilizationRatio(), 4.31, 0.005);
  const auto n8 = planAll(stages, spec(8));
  EXPECT_NEAR(n8.plan(method("gpipe")).utilization, 8.0 / 114.0, 1e-12);
  EXPECT_NEAR(n8.plan(method("1f1b")).utilization, 8.0 / 114.0, 1e-12);
  EXPECT_NEAR(n8.utilizationRatio(), 14.25, 1e-9);
  EXPECT_NEAR(n8.plan(method("gpipe")).bubble, 1.0 - 8.0 / 114.0, 1e-12);
}

TEST(AnalyticPlanner, PaperMemoryRatioIsAbout2Point7) {
  const auto& stages = resnet50Layers();
  const auto c = planAll(stages, spec(8));
  EXPECT_NEAR(c.memoryRatio(), 2.72, 0.01);
  // The accounting of docs/planner.md, written out: sum ((tau_i+1) W_i + S_i) / sum (W_i + S_i + W_i),
  // tau_i = ceil((2(P-i)+1)/N), S_i = W_i (momentum).
  const int P = 107, N = 8;
  double num = 0, den = 0;
  for (int i = 1; i <= P; ++i) {
    const double W = static_cast<double>(stages[static_cast<size_t>(i - 1)].weightBytes);
    const double tau = std::ceil((2.0 * (P - i) + 1) / N);
    num += (tau + 1) * W + W;
    den += W + W + W;
  }
  EXPECT_NEAR(c.memoryRatio(), num / den, 1e-12);
  // Without T2's delta the ratio is larger; with N = 32 (fewer versions) smaller.
  EXPECT_GT(c.memoryRatioNoDelta(), c.memoryRatio());
  EXPECT_LT(planAll(stages, spec(32)).memoryRatio(), c.memoryRatio());
}

TEST(AnalyticPlanner, BubbleFormulaForEqualStages) {
  for (int P : {1, 2, 4, 16})
    for (int N : {1, 3, 8}) {
      const auto c = planAll(equalStages(P), spec(N));
      const double u = static_cast<double>(N) / (N + P - 1);
      EXPECT_NEAR(c.plan(method("gpipe")).utilization, u, 1e-12);
      EXPECT_NEAR(c.plan(method("gpipe+recompute")).utilization, u, 1e-12);
      EXPECT_NEAR(c.plan(method("1f1b")).bubble, 1.0 - u, 1e-12);
      EXPECT_DOUBLE_EQ(c.plan(method("pipedream")).utilization, 1.0);
      EXPECT_DOUBLE_EQ(c.plan(method("pipemare")).bubble, 0.0);
      // Equal explicit costs give the same; T microbatches give T/(T+P-1).
      auto s = spec(N);
      s.stageCosts.assign(static_cast<size_t>(P), 3.0);
      s.totalMicrobatches = 40;
      const auto e = planAll(equalStages(P), s);
      EXPECT_NEAR(e.plan(method("gpipe")).utilization, u, 1e-12);
      EXPECT_NEAR(e.plan(method("pipemare")).utilization, 40.0 / (40 + P - 1), 1e-12);
    }
  // An unbalanced pipeline is bound by its slowest stage.
  EXPECT_NEAR(asynchronousUtilization(4, 0, {1, 1, 2, 1}), 5.0 / 8.0, 1e-12);
  EXPECT_LT(synchronousUtilization(4, 8, {1, 1, 2, 1}), 8.0 / 11.0);
  EXPECT_THROW(synchronousUtilization(4, 8, {1, 1}), std::invalid_argument);
}

// An unbalanced partition, planned with the stage times its timeline runs with (stageCostsOf the
// simulation's costs): no schedule is fully busy, the slowest stage is named with its share of the
// work, and each figure is the simulated timeline's busy share: a flushed schedule's per
// minibatch, an unflushed one's in the steady state (two runs' difference: fill and drain cancel).
TEST(AnalyticPlanner, UnbalancedStagesPlanAsTheirTimelinesRun) {
  const int P = 4, N = 4;
  auto stages = equalStages(P);
  const double flops[] = {1.0, 1.0, 3.0, 0.5};
  for (int s = 0; s < P; ++s) stages[static_cast<size_t>(s)].forwardFlops = flops[s];
  const SimCosts costs = costsFromStages(stages, 1.0);  // forward = FLOPs, backward 2x
  auto sp = spec(N, PipelineTiming::Software1F1B);
  sp.stageCosts = stageCostsOf(costs.forward, costs.backward);
  ASSERT_EQ(sp.stageCosts, (std::vector<double>{3.0, 3.0, 9.0, 1.5}));
  const auto c = planAll(stages, sp);
  auto busy = [](const SimResult& r) { return std::accumulate(r.busy.begin(), r.busy.end(), 0.0); };
  for (const auto& plan : c.plans) {
    SCOPED_TRACE(plan.method.name());
    EXPECT_EQ(plan.bottleneckStage, 2);
    EXPECT_NEAR(plan.bottleneckShare, 9.0 / 16.5, 1e-12);
    EXPECT_LT(plan.utilization, 1.0);
    EXPECT_NEAR(plan.bubble, 1.0 - plan.utilization, 1e-12);
    const SimResult three = simulatePlanSchedule(plan.method, P, sp, costs, 3);
    if (!isAsynchronous(plan.method.schedule)) {
      EXPECT_LT(plan.utilization, static_cast<double>(N) / (N + P - 1));  // below the equal stages' figure
      if (plan.method.schedule == ScheduleKind::GPipe) {
        EXPECT_NEAR(plan.utilization, three.meanUtilization, 1e-12);
      }
      continue;
    }
    EXPECT_NEAR(plan.utilization, 1.0 / (P * plan.bottleneckShare), 1e-12);
    const SimResult ten = simulatePlanSchedule(plan.method, P, sp, costs, 10);
    EXPECT_NEAR(plan.utilization, (busy(ten) - busy(three)) / (P * (ten.makespan - three.makespan)), 1e-9);
    EXPECT_LT(three.meanUtilization, plan.utilization);  // three minibatches: fill and drain too
  }
  // Without costs: equal stages, no stage named.
  const auto e = planAll(stages, spec(N));
  EXPECT_EQ(e.plan(method("pipemare")).bottleneckStage, -1);
  EXPECT_NEAR(e.plan(method("pipemare")).bottleneckShare, 0.25, 1e-12);
  EXPECT_NE(accountingText(e.spec).find("(equal stages)"), std::string::npos);
  EXPECT_NE(accountingText(c.spec).find("bottleneck form"), std::string::npos);
  EXPECT_THROW(stageCostsOf({1.0}, {1.0, 2.0}), std::invalid_argument);
}

TEST(AnalyticPlanner, MemoryFormulasAndCategoriesSumToTotal) {
  const int P = 6, N = 4;
  const int64_t W = 1000, X = 10, A = 30;
  for (auto t : {PipelineTiming::Paper, PipelineTiming::Software1F1B})
    for (auto o : {OptimizerKind::Sgd, OptimizerKind::SgdMomentum, OptimizerKind::Adam}) {
      const auto c = planAll(equalStages(P, W, X, A), spec(N, t, o));
      ASSERT_EQ(c.plans.size(), 8u);
      for (const auto& p : c.plans) {
        MemoryBreakdown sum;
        int64_t maxTotal = 0;
        for (const auto& s : p.perStage) {
          const auto& m = s.memory;
          EXPECT_EQ(m.total(), m.weights + m.gradients + m.optimizer + m.stash + m.delta + m.activations);
          EXPECT_EQ(m.weights, W);
          EXPECT_EQ(m.gradients, W);
          EXPECT_EQ(m.optimizer, optimizerStateMultiple(o) * W);
          EXPECT_EQ(m.stash, (s.timing.versions - 1) * W);
          sum += m;
          maxTotal = std::max(maxTotal, m.total());
        }
        EXPECT_EQ(p.total.total(), sum.total());
        EXPECT_EQ(p.total.activations, sum.activations);
        EXPECT_EQ(p.maxStageTotal, maxTotal);
        EXPECT_LE(p.maxStageTotal, p.perStageMax.total());
      }
      const auto& st0 = [&](TrainingMethod s) -> const StagePrediction& { return c.plan(s).perStage[0]; };
      EXPECT_EQ(st0(method("gpipe")).memory.activations, N * A);
      EXPECT_EQ(st0(method("gpipe+recompute")).memory.activations, N * X + A);
      const int64_t F0 = t == PipelineTiming::Paper ? 2 * (P - 1) + 1 : P;
      EXPECT_EQ(st0(method("1f1b")).memory.activations, std::min<int64_t>(N, F0) * A);
      EXPECT_EQ(st0(method("pipedream")).memory.activations, F0 * A);
      // zb-h1 keeps a graph from its F to its W, `s` backwards after its BI: min(N, P) graphs on
      // every stage (1f1b's peak, on all stages), whatever the timing model.
      for (const auto& st : c.plan(method("zb-h1")).perStage) {
        EXPECT_EQ(st.timing.inFlight, std::min(N, P));
        EXPECT_EQ(st.memory.activations, std::min(N, P) * A);
        EXPECT_EQ(st.timing.tau, 0);
      }
      EXPECT_EQ(st0(method("pipemare")).memory.activations, F0 * X + A);
      EXPECT_EQ(st0(method("pipemare")).memory.delta, 0);
      EXPECT_EQ(st0(method("pipemare+T2")).memory.delta, W);
      // The last stage has a delay in the paper's timing (2*1+1 microbatches apart) but none in the
      // software one, where the engine keeps no delta.
      const auto& last = c.plan(method("pipemare+T2")).perStage.back();
      EXPECT_EQ(last.memory.delta, last.timing.tau > 0 ? W : 0);
      EXPECT_EQ(last.timing.tau > 0, t == PipelineTiming::Paper);
      EXPECT_EQ(st0(method("pipedream-2bw")).memory.stash, W);
      EXPECT_EQ(st0(method("pipedream")).timing.versions, st0(method("pipedream")).timing.tau + 1);
    }
}

// The planner's software-model delays and versions against the engine's lists.
TEST(AnalyticPlanner, SoftwareModelMatchesEngineLists) {
  const int P = 7, N = 3;
  auto s = spec(N, PipelineTiming::Software1F1B);
  s.updateInterval = 1;  // pipedream as the engine's default
  const auto c = planAll(equalStages(P), s);
  for (const auto& p : c.plans) {
    DelayParams dp;
    dp.method = p.method;
    dp.timing = PipelineTiming::Software1F1B;
    dp.stages = P;
    dp.microbatches = N;
    dp.updateInterval = 1;
    const auto measured = measuredStageTimings(engineScheduleParams(dp));
    for (int st = 0; st < P; ++st) {
      EXPECT_EQ(p.perStage[static_cast<size_t>(st)].timing.tau, measured[static_cast<size_t>(st)].tau)
          << p.method.name() << " stage " << st;
      EXPECT_EQ(p.perStage[static_cast<size_t>(st)].timing.inFlight, measured[static_cast<size_t>(st)].inFlight);
    }
  }
  EXPECT_EQ(c.plan(method("pipedream")).maxTau, P - 1);
  EXPECT_EQ(c.plan(method("pipedream")).maxVersions, P);
  EXPECT_EQ(c.plan(method("pipemare")).maxTau, 2);  // ceil(6/3)
  EXPECT_NE(accountingText(s).find("software 1F1B"), std::string::npos);
  EXPECT_NE(accountingText(spec(N)).find("paper"), std::string::npos);
}

// The hybrid of a warm-up is time-weighted: each minibatch is the same work, so the time of a
// phase is its share over its utilization.
TEST(AnalyticPlanner, HybridUtilizationIsTimeWeighted) {
  EXPECT_DOUBLE_EQ(hybridUtilization(0, 0.2, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(hybridUtilization(1, 0.2, 1.0), 0.2);
  EXPECT_DOUBLE_EQ(hybridUtilization(0.5, 0.25, 1.0), 0.4);  // times 2 and 0.5: 1 / 2.5
  EXPECT_DOUBLE_EQ(hybridUtilization(0.25, 0.5, 0.5), 0.5);
  EXPECT_THROW(hybridUtilization(-0.1, 0.5, 1.0), std::invalid_argument);
  EXPECT_THROW(hybridUtilization(0.5, 0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(hybridUtilization(0.5, 0.5, 1.5), std::invalid_argument);
}

TEST(AnalyticPlanner, RejectsBadInput) {
  EXPECT_THROW(planSchedule(method("gpipe"), {}, spec(4)), std::invalid_argument);
  EXPECT_THROW(planSchedule(method("gpipe"), equalStages(3), spec(0)), std::invalid_argument);
  auto s = spec(4);
  s.m = 2;
  EXPECT_THROW(planSchedule(method("pipedream-2bw"), equalStages(3), s), std::invalid_argument);
}

namespace {

// A model of v x P equal stages with unit op costs per rank (each chunk 1/v of T_F = T_B = T_W = 1).
ChunkedStagesFn equalChunks(int P, int64_t W = 1000, int64_t A = 30) {
  return [P, W, A](int modelStages) {
    ChunkedStages c;
    const double share = static_cast<double>(P) / modelStages;  // 1/v
    c.stages = equalStages(modelStages, W, 10, A);
    for (int s = 0; s < modelStages; ++s) {
      c.costs.forward.push_back(share);
      c.costs.backward.push_back(2 * share);
      c.costs.backwardInput.push_back(share);
      c.costs.weight.push_back(share);
    }
    return c;
  };
}

}  // namespace

// ../shared/docs/schedules.md section 7 from the chunked rows of planAll (unit costs, one
// minibatch): 1 - utilization 0.1579 / 0.0857 for interleaved (v = 2) and 0.0588 / 0.0303 for
// zb-v at P = 4, N = 8 / 16; beside them 1f1b's own row at equal stages (0.2727 / 0.1579).
TEST(ChunkedPlan, UnitCostBubblesAreSchedulesMdSectionSeven) {
  const struct {
    int N;
    double oneFOneB, interleaved, zbv;
  } rows[] = {{8, 0.2727, 0.1579, 0.0588}, {16, 0.1579, 0.0857, 0.0303}};
  for (const auto& row : rows) {
    const auto c = planAll(equalStages(4), spec(row.N), equalChunks(4));
    EXPECT_TRUE(c.notPlanned.empty());
    EXPECT_NEAR(c.plan(method("1f1b")).bubble, row.oneFOneB, 5e-5) << row.N;
    EXPECT_NEAR(c.plan(method("interleaved-1f1b")).bubble, row.interleaved, 5e-5) << row.N;
    EXPECT_NEAR(c.plan(method("zb-v")).bubble, row.zbv, 5e-5) << row.N;
    EXPECT_EQ(c.plan(method("interleaved-1f1b")).chunks, 2);
    EXPECT_EQ(c.plan(method("zb-v")).chunks, 2);
  }
}

// With equal stages (no stage costs given) every chunk costs alike, as the one-chunk rows' stages
// do, whatever FLOPs the split's stages would give: zb-v is then planned on the same footing as
// zb-h1 (unit costs), not limited by the split's slowest chunk.
TEST(ChunkedPlan, EqualStagesCostEveryChunkAlike) {
  const ChunkedStagesFn skewed = [](int modelStages) {
    ChunkedStages c = equalChunks(4)(modelStages);
    c.costs.forward[0] *= 5;  // one chunk five times the others
    c.costs.backward[0] *= 5;
    c.costs.backwardInput[0] *= 5;
    c.costs.weight[0] *= 5;
    return c;
  };
  const auto equal = planAll(equalStages(4), spec(8), equalChunks(4));
  const auto c = planAll(equalStages(4), spec(8), skewed);
  EXPECT_NEAR(c.plan(method("zb-v")).bubble, 0.0588, 5e-5);
  EXPECT_DOUBLE_EQ(c.plan(method("zb-v")).utilization, equal.plan(method("zb-v")).utilization);
  // With stage costs given (FLOPs or measured), the split's own costs count: the slow chunk shows.
  PlanSpec flops = spec(8);
  flops.stageCosts = {1, 1, 1, 1};
  EXPECT_LT(planAll(equalStages(4), flops, skewed).plan(method("zb-v")).utilization,
            planAll(equalStages(4), flops, equalChunks(4)).plan(method("zb-v")).utilization - 0.1);
}

// Per-rank memory in chunk activations (schedules.md sections 3 and 4): interleaved rank 0 holds
// min(vN, w_0 + 1) with w_0 = 2(P-1) + (v-1)P warm-up forwards, more than 1f1b's P microbatches of
// whole stages once divided by v; zb-v holds 2P on every rank. Each rank holds v chunks' weights.
TEST(ChunkedPlan, PerRankMemoryCountsChunkActivationsAlongEachRanksOrder) {
  const int64_t W = 1000, A = 30;
  for (int P : {2, 3, 4})
    for (int v : {2, 3}) {
      const int N = 4 * P;
      PlanSpec s = spec(N);
      s.chunks = v;
      const auto c = planAll(equalStages(P, W, 10, A), s, equalChunks(P, W, A));
      const auto& il = c.plan(method("interleaved-1f1b"));
      const std::string at = "P=" + std::to_string(P) + " v=" + std::to_string(v);
      ASSERT_EQ(il.perStage.size(), static_cast<size_t>(P)) << at;
      const int64_t w0 = std::min<int64_t>(int64_t{v} * N, 2 * (P - 1) + (v - 1) * P + 1);
      EXPECT_EQ(il.perStage[0].timing.inFlight, w0) << at;
      EXPECT_EQ(il.perStage[0].memory.activations, w0 * A) << at;
      EXPECT_EQ(il.perStage[0].memory.weights, v * W) << at;
      EXPECT_EQ(il.stageRanks.size(), static_cast<size_t>(v * P)) << at;
      for (int st = 0; st < v * P; ++st) EXPECT_EQ(il.stageRanks[static_cast<size_t>(st)], st % P) << at;  // the loop
      if (v != 2) continue;
      const auto& zbv = c.plan(method("zb-v"));
      for (int r = 0; r < P; ++r) {
        EXPECT_EQ(zbv.perStage[static_cast<size_t>(r)].timing.inFlight, 2 * P) << at << " rank " << r;
        EXPECT_EQ(zbv.stageRanks[static_cast<size_t>(r)], r) << at;
        EXPECT_EQ(zbv.stageRanks[static_cast<size_t>(2 * P - 1 - r)], r) << at;  // the V
      }
    }
}

// A chunked row that does not apply is left out with the reason, the others planned.
TEST(ChunkedPlan, InterleavedNeedsNAMultipleOfPAndSaysSo) {
  const auto c = planAll(equalStages(4), spec(6), equalChunks(4));
  ASSERT_EQ(c.notPlanned.size(), 1u);
  EXPECT_EQ(c.notPlanned[0].first, method("interleaved-1f1b"));
  EXPECT_NE(c.notPlanned[0].second.find("multiple"), std::string::npos) << c.notPlanned[0].second;
  EXPECT_NO_THROW(c.plan(method("zb-v")));
  const auto none = planAll(equalStages(4), spec(8));
  EXPECT_EQ(none.notPlanned.size(), 2u);  // no model split given
  EXPECT_THROW(planSchedule(method("zb-v"), equalStages(4), spec(8)), std::invalid_argument);
}
