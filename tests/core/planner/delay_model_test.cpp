#include <gtest/gtest.h>

#include "core/planner/delay_model.h"

using namespace pm;

namespace {
TrainingMethod method(const char* name) { return trainingMethodFromName(name); }
}  // namespace

namespace {

DelayParams params(TrainingMethod s, PipelineTiming t, int P, int N, int u = 0, int m = 0) {
  DelayParams d;
  d.method = s;
  d.timing = t;
  d.stages = P;
  d.microbatches = N;
  d.updateInterval = u;
  d.m = m;
  return d;
}

}  // namespace

// The software model's formulas against the engine's literal action lists.
TEST(DelayModel, SoftwareFormulasMatchTheEngineSchedules) {
  for (int P = 1; P <= 8; ++P)
    for (int N = 1; N <= 6; ++N)
      for (auto s : planMethods())
        for (int u : {0, 1, 3}) {
          if (s.decl().chunks != 1) continue;  // per-rank figures, counted on the rank lists (planChunked)
          if (u != 0 && s != method("pipedream")) continue;
          for (int m : {0, P + 1}) {
            if (m != 0 && s != method("pipedream-2bw")) continue;
            const auto dp = params(s, PipelineTiming::Software1F1B, P, N, u, m);
            const auto formula = stageTimings(dp);
            const auto sp = engineScheduleParams(dp);
            const auto measured = measuredStageTimings(sp);
            ASSERT_EQ(formula.size(), measured.size());
            for (int st = 0; st < P; ++st) {
              const auto& f = formula[static_cast<size_t>(st)];
              const auto& e = measured[static_cast<size_t>(st)];
              const std::string where = s.name() + " P=" + std::to_string(P) + " N=" + std::to_string(N) +
                                        " u=" + std::to_string(u) + " m=" + std::to_string(m) + " stage " + std::to_string(st);
              EXPECT_EQ(f.tau, e.tau) << where;
              EXPECT_EQ(f.inFlight, e.inFlight) << where;
              // pipemare keeps one version (its delta is not a version); a stash would need e.versions.
              if (s != method("pipemare") && s != method("pipemare+T2")) {
                EXPECT_EQ(f.versions, e.versions) << where;
              }
            }
          }
        }
}

TEST(DelayModel, SoftwareDelaysAreTheEnginesClosedForm) {
  // pipedream with an update per microbatch: tau = P-1-s, P-s versions (docs/pipemare.md).
  const auto pd = stageTimings(params(method("pipedream"), PipelineTiming::Software1F1B, 5, 4, 1));
  for (int s = 0; s < 5; ++s) {
    EXPECT_EQ(pd[static_cast<size_t>(s)].tau, 4 - s);
    EXPECT_EQ(pd[static_cast<size_t>(s)].versions, 5 - s);
  }
  // pipemare: ceil((P-1-s)/N).
  const auto mare = stageTimings(params(method("pipemare"), PipelineTiming::Software1F1B, 9, 3));
  const int64_t expect[9] = {3, 3, 2, 2, 2, 1, 1, 1, 0};
  for (int s = 0; s < 9; ++s) EXPECT_EQ(mare[static_cast<size_t>(s)].tau, expect[s]) << s;
  // 2bw: 1 except the last stage; 2 versions there.
  const auto bw = stageTimings(params(method("pipedream-2bw"), PipelineTiming::Software1F1B, 4, 8));
  EXPECT_EQ(bw[0].versions, 2);
  EXPECT_EQ(bw[3].tau, 0);
}

TEST(DelayModel, PaperModel) {
  // ResNet-50, one stage per weight layer: 2(P-i)+1 in flight, tau_i = ceil((2(P-i)+1)/N).
  const auto t = stageTimings(params(method("pipemare"), PipelineTiming::Paper, 107, 8));
  EXPECT_EQ(t[0].inFlight, 213);
  EXPECT_EQ(t[0].tau, 27);  // ceil(213/8)
  EXPECT_EQ(t[106].inFlight, 1);
  EXPECT_EQ(t[106].tau, 1);
  EXPECT_EQ(t[0].versions, 1);
  const auto pd = stageTimings(params(method("pipedream"), PipelineTiming::Paper, 107, 32));
  EXPECT_EQ(pd[0].tau, 7);  // ceil(213/32)
  EXPECT_EQ(pd[0].versions, 8);
  const auto bw = stageTimings(params(method("pipedream-2bw"), PipelineTiming::Paper, 107, 8));
  for (const auto& s : bw) EXPECT_EQ(s.versions, 2);
  const auto ofob = stageTimings(params(method("1f1b"), PipelineTiming::Paper, 10, 4));
  EXPECT_EQ(ofob[0].inFlight, 4);
  EXPECT_EQ(ofob[9].inFlight, 1);
  EXPECT_EQ(ofob[0].tau, 0);
  const auto gp = stageTimings(params(method("gpipe"), PipelineTiming::Paper, 10, 4));
  EXPECT_EQ(gp[9].inFlight, 4);
}

TEST(DelayModel, RejectsBadParameters) {
  EXPECT_THROW(stageTimings(params(method("gpipe"), PipelineTiming::Paper, 0, 4)), std::invalid_argument);
  EXPECT_THROW(stageTimings(params(method("gpipe"), PipelineTiming::Paper, 4, 0)), std::invalid_argument);
  EXPECT_THROW(stageTimings(params(method("pipedream-2bw"), PipelineTiming::Paper, 4, 4, 0, 3)), std::invalid_argument);
  EXPECT_THROW(planMethodFromName("pipemore"), std::invalid_argument);
  EXPECT_EQ(planMethodFromName("pipemare+T2"), method("pipemare+T2"));
  EXPECT_EQ(timingFromName("1f1b"), PipelineTiming::Software1F1B);
  EXPECT_THROW(optimizerFromName("rmsprop"), std::invalid_argument);
}

// The paper's timing model against the engine's lists run with the paper's timing: the same
// microbatches in flight (2(P-1-s)+1) for pipedream and pipemare; the delay of the lists is
// ceil(2(P-1-s) / u), one step less than the model's ceil((2(P-1-s)+1) / u) when 2(P-1-s) is a
// multiple of u (the model counts a step taken at the backward's own time step).
TEST(DelayModel, PaperTimingListsHaveThePaperModelsInFlightCounts) {
  for (int P = 1; P <= 8; ++P)
    for (int N = 1; N <= 6; ++N)
      for (auto s : {method("pipedream"), method("pipemare")}) {
        const auto dp = params(s, PipelineTiming::Paper, P, N, 0, 0);
        const auto sp = engineScheduleParams(dp);
        ASSERT_TRUE(sp.paper_timing);
        const auto formula = stageTimings(dp);
        const auto measured = measuredStageTimings(sp);
        for (int st = 0; st < P; ++st) {
          const std::string where = s.name() + " P=" + std::to_string(P) + " N=" + std::to_string(N) + " stage " + std::to_string(st);
          const int64_t u = updateIntervalOf(dp);
          EXPECT_EQ(formula[static_cast<size_t>(st)].inFlight, measured[static_cast<size_t>(st)].inFlight) << where;
          EXPECT_EQ(measured[static_cast<size_t>(st)].tau, (2 * (P - 1 - st) + u - 1) / u) << where;
        }
      }
}
