// Asynchronous schedules: measured delays, stash and delta accounting, T1 learning rates, T2
// correction, delayed gradient descent through the engine's delay machinery, warm-up.
#include <gtest/gtest.h>

#include <cmath>

#include "core/engine/lr_schedule.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/weight_versions.h"
#include "core/models/model_zoo.h"
#include "core/pipeline/schedule.h"
#include "tests/support/test_support.h"

using namespace pm;

namespace {

Experiment asyncExperiment(const std::string& schedule, int P, int N) {
  Experiment e;
  e.model.name = "resnet20";
  e.data.dataset = DatasetKind::Synthetic;
  e.data.synthetic_samples = 64;
  e.data.batch_size = 16;
  e.data.eval_limit = 8;
  e.pipeline.stages = P;
  e.pipeline.microbatches = N;
  e.pipeline.schedule = scheduleFromName(schedule);
  e.pipeline.update_interval = e.pipeline.schedule == ScheduleKind::PipeDream2BW ? P : 1;
  e.optimizer.lr = 0.01;
  e.optimizer.momentum = 0.9;
  e.training.steps = 8;
  e.training.log_interval = 1;
  e.training.trace_steps = 0;
  e.training.seed = 5;
  return e;
}

int64_t paramBytesOfStage(const Experiment& e, int s) {
  auto part = resolvePartition(e);
  auto units = buildModel(e.model.name, e.training.seed);
  int64_t n = 0;
  for (const auto& p : makeStage(units, part.begin[s], part.end[s])->parameters()) n += p.numel() * 4;
  return n;
}

// Per stage: max tau, max versions, max stash, max delta, over the steady-state stage events.
struct StageStats {
  int64_t tau = 0, versions = 0, stash = 0, delta = 0;
  std::map<int64_t, double> lrByStep;
};
std::map<int, StageStats> stageStats(const MemorySink& sink) {
  std::map<int, StageStats> out;
  for (const auto& e : sink.ofType(ev::kStage)) {
    auto& s = out[e["stage"].get<int>()];
    s.tau = std::max<int64_t>(s.tau, e.value("tau", int64_t{0}));
    s.versions = std::max<int64_t>(s.versions, e.value("versions", int64_t{0}));
    s.stash = std::max<int64_t>(s.stash, e["memory"]["stash"].get<int64_t>());
    s.delta = std::max<int64_t>(s.delta, e["memory"]["delta"].get<int64_t>());
    s.lrByStep[e["step"].get<int64_t>()] = e["lr"].get<double>();
  }
  return out;
}

}  // namespace

// Observed tau_s equals the software-1F1B formula ceil((P-1-s)/u); pipedream's stash holds at most
// tau+1 versions, and exactly the bytes of the extra versions; 2bw holds at most 2.
TEST(AsyncSchedules, ObservedDelaysVersionsAndStashBytes) {
  struct Case {
    std::string schedule;
    int P, N;
    int u;  // update interval in microbatches
    bool paper = false;  // pipeline.timing = paper: 2(P-1-s) forwards ahead
  };
  for (const Case& c : {Case{"pipedream", 4, 2, 1}, Case{"pipedream-2bw", 4, 2, 4}, Case{"pipemare", 4, 1, 1},
                        Case{"pipemare", 5, 2, 2}, Case{"pipemare", 4, 2, 2, true}, Case{"pipedream", 3, 2, 1, true}}) {
    SCOPED_TRACE(c.schedule + " P=" + std::to_string(c.P) + " N=" + std::to_string(c.N) + (c.paper ? " paper timing" : ""));
    Experiment e = asyncExperiment(c.schedule, c.P, c.N);
    if (c.paper) e.pipeline.timing = PipelineTiming::Paper;
    MemorySink sink;
    ASSERT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished);
    auto stats = stageStats(sink);
    ASSERT_EQ(static_cast<int>(stats.size()), c.P);
    for (int s = 0; s < c.P; ++s) {
      const int depth = (c.paper ? 2 : 1) * (c.P - 1 - s);
      const int64_t expected = (depth + c.u - 1) / c.u;  // ceil((P-1-s)/u), paper ceil(2(P-1-s)/u)
      EXPECT_EQ(stats[s].tau, expected) << "stage " << s;
      if (c.schedule == "pipedream") {
        EXPECT_LE(stats[s].versions, expected + 1) << "stage " << s;
        EXPECT_EQ(stats[s].versions, expected + 1) << "stage " << s;  // reached in steady state
        EXPECT_EQ(stats[s].stash, (stats[s].versions - 1) * paramBytesOfStage(e, s)) << "stage " << s;
      } else if (c.schedule == "pipedream-2bw") {
        EXPECT_LE(stats[s].versions, 2) << "stage " << s;
      } else {
        EXPECT_EQ(stats[s].stash, 0) << "stage " << s;
      }
    }
  }
}

TEST(AsyncSchedules, T2DeltaBytesEqualTheStageWeights) {
  Experiment e = asyncExperiment("pipemare", 3, 1);
  e.pipemare.t2 = true;
  MemorySink sink;
  ASSERT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished);
  auto stats = stageStats(sink);
  EXPECT_EQ(stats[0].delta, paramBytesOfStage(e, 0));
  EXPECT_EQ(stats[1].delta, paramBytesOfStage(e, 1));
  EXPECT_EQ(stats[2].delta, 0);  // the last stage has no delay: no correction needed
}

// T1: each stage's learning rate at step k is lr * tau_s^-(1 - min(k/K, 1)).
TEST(AsyncSchedules, T1LearningRatesPerStageAndStep) {
  Experiment e = asyncExperiment("pipemare", 4, 1);
  e.pipemare.t1 = true;
  e.pipemare.anneal_steps = 5;
  e.training.steps = 8;
  MemorySink sink;
  ASSERT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished);
  auto stats = stageStats(sink);
  for (int s = 0; s < 4; ++s) {
    const double tau = 3 - s;
    for (int64_t k = 0; k < 8; ++k) {
      ASSERT_TRUE(stats[s].lrByStep.count(k + 1)) << "stage " << s << " step " << k;
      const double p = 1.0 - std::min(static_cast<double>(k) / 5.0, 1.0);
      const double expected = tau > 1 ? 0.01 * std::pow(tau, -p) : 0.01;
      EXPECT_NEAR(stats[s].lrByStep[k + 1], expected, 1e-12) << "stage " << s << " step " << k;
    }
  }
  EXPECT_NEAR(stats[0].lrByStep[1], 0.01 / 3.0, 1e-12);  // starts at lr / tau
  EXPECT_NEAR(stats[0].lrByStep[8], 0.01, 1e-12);        // after K: back to lr
}

// T2 on a linearly moving weight: delta follows (1 - gamma^k) v, and once it has converged the
// corrected weights w - lag * delta equal the weights `lag` steps ago.
TEST(AsyncSchedules, T2RecoversTheForwardWeightsOnALinearTrajectory) {
  DiscrepancyCorrector t2(0.1, 2.0);
  EXPECT_NEAR(t2.gamma(), std::sqrt(0.1), 1e-12);
  const auto v = torch::tensor({0.5, -1.25, 2.0}, torch::kDouble);
  const auto w0 = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble);
  auto w = [&](int64_t t) { return w0 + static_cast<double>(t) * v; };
  for (int64_t t = 0; t < 200; ++t) {
    t2.update({w(t)}, {w(t + 1)});
    if (t == 0) {
      EXPECT_TRUE(torch::allclose(t2.delta()[0], (1 - t2.gamma()) * v));
    }
  }
  for (int64_t lag : {1, 2, 5}) {
    auto hat = t2.estimate({w(200)}, lag);
    EXPECT_TRUE(torch::allclose(hat[0], w(200 - lag), 0, 1e-12)) << "lag " << lag;
  }
}

// Delayed gradient descent on f(w) = lambda w^2 / 2, through the engine's delay machinery (the
// pipedream action list of stage 0 with P = tau + 1, and WeightVersions): the backward of each
// microbatch sees the weights tau steps old. Stable iff alpha*lambda < 2 sin(pi / (2 (2 tau + 1))).
TEST(AsyncSchedules, DelayedGradientDescentStabilityBoundary) {
  for (int tau : {1, 2, 4}) {
    const double bound = 2.0 * std::sin(M_PI / (2.0 * (2.0 * tau + 1.0)));
    for (double factor : {0.97, 1.03}) {
      ScheduleParams p;
      p.kind = ScheduleKind::PipeDream;
      p.stages = tau + 1;
      p.microbatches = 1;
      p.minibatches = 4000;
      p.update_interval = 1;
      const auto actions = stageActions(p, 0);
      ASSERT_EQ(maxObservedDelay(actions), tau);
      const double alphaLambda = factor * bound;
      std::vector<torch::Tensor> w{torch::ones({1}, torch::kDouble)};
      WeightVersions versions;
      double grad = 0;
      int64_t observedTau = 0;
      for (const auto& a : actions) {
        if (a.kind == ActionKind::Forward) versions.onForward(a.mb);
        if (a.kind == ActionKind::Backward) {
          const auto* stale = versions.weightsFor(a.mb);
          observedTau = std::max(observedTau, versions.delayOf(a.mb));
          grad += (stale ? (*stale)[0] : w[0]).item<double>();  // lambda * w_fwd with lambda = 1
          versions.onBackwardDone(a.mb);
        }
        if (a.kind == ActionKind::Step) {
          versions.beforeStep(w);
          w[0] -= alphaLambda * grad;
          grad = 0;
          versions.afterStep();
        }
      }
      EXPECT_EQ(observedTau, tau);
      const double final = std::abs(w[0].item<double>());
      if (factor < 1) {
        EXPECT_LT(final, 0.5) << "tau " << tau << " just below the bound should converge";
      } else {
        EXPECT_GT(final, 2.0) << "tau " << tau << " just above the bound should diverge";
      }
    }
  }
}

// Warm-up: the first minibatches run synchronously (delay 0), then pipemare (delay > 0), in the
// same processes.
TEST(AsyncSchedules, WarmupRunsSynchronouslyThenSwitches) {
  Experiment e = asyncExperiment("pipemare", 4, 1);
  e.data.synthetic_samples = 64;  // 4 minibatches per epoch
  e.pipemare.warmup_epochs = 1;
  e.training.steps = 10;
  MemorySink sink;
  ASSERT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished);
  for (const auto& ev : sink.ofType(ev::kStage)) {
    if (ev["stage"] != 0) continue;
    const int64_t step = ev["step"].get<int64_t>();
    if (step <= 4) {
      EXPECT_EQ(ev["tau"].get<int64_t>(), 0) << "warm-up step " << step;
    }
    if (step >= 8) {  // the pipeline has refilled: steady-state delay
      EXPECT_EQ(ev["tau"].get<int64_t>(), 3) << "pipemare step " << step;
    }
  }
}

// The engine executes every asynchronous list to the end (the full P <= 16, N <= 64 grid is
// checked on the pure lists in tests/core/pipeline/schedule_test.cpp).
TEST(AsyncSchedules, NoDeadlockForSmallPipelines) {
  for (const char* schedule : {"pipedream", "pipedream-2bw", "pipemare"})
    for (int P : {2, 5, 8})
      for (int N : {1, 3, 16}) {
        Experiment e = asyncExperiment(schedule, P, N);
        e.training.steps = 3;
        e.training.log_interval = 3;
        e.pipemare.t1 = std::string(schedule) == "pipemare";
        e.pipemare.t2 = e.pipemare.t1;
        MemorySink sink;
        RunOutcome out = runSingleProcess(e, sink, nullptr);
        EXPECT_EQ(out.status, pm::RunStatus::Finished) << schedule << " P=" << P << " N=" << N << ": " << out.message;
      }
}

// Keeping graphs (recompute = false: pipemare for microbatches whose weights did not change,
// pipedream and 2bw for all, through shadow modules for the stale ones) gives the same weights and
// BatchNorm statistics, bit for bit, as recomputing every microbatch (recompute = true); the stage
// events count the recomputes.
TEST(AsyncSchedules, KeptGraphsEqualRecomputeBitForBit) {
  const pm::test::TempDir tmp;  // removed at the end
  for (const char* schedule : {"pipedream", "pipedream-2bw", "pipemare"}) {
    std::vector<std::vector<torch::Tensor>> states[2];
    for (int r = 0; r < 2; ++r) {
      Experiment e = asyncExperiment(schedule, 3, 4);
      e.model.name = "cnn";
      e.pipeline.recompute = r == 1;
      e.pipeline.update_interval = std::string(schedule) == "pipedream-2bw" ? 3 : (std::string(schedule) == "pipedream" ? 2 : 1);
      e.pipemare.t2 = std::string(schedule) == "pipemare";
      const std::string dir = tmp.file("kept_" + std::string(schedule) + std::to_string(r));
      EngineOptions opts;
      opts.saveStateDir = dir;
      MemorySink sink;
      ASSERT_EQ(runSingleProcess(e, sink, nullptr, opts).status, pm::RunStatus::Finished);
      std::map<int, int64_t> recomputed;
      for (const auto& ev : sink.ofType(ev::kStage)) recomputed[ev["stage"].get<int>()] += ev["recomputed"].get<int64_t>();
      // Without recompute: pipedream and 2bw keep every graph (shadow modules); pipemare
      // recomputes its stale microbatches on the stages before the last. With recompute, every
      // backward recomputes its forward.
      for (int s = 0; s < 3; ++s) {
        const bool kept = r == 0 && (std::string(schedule) != "pipemare" || s == 2);
        if (kept) EXPECT_EQ(recomputed[s], 0) << schedule << " stage " << s;
        else EXPECT_GT(recomputed[s], 0) << schedule << " stage " << s << (r == 1 ? " (recompute)" : "");
      }
      for (int s = 0; s < 3; ++s) {
        std::vector<torch::Tensor> t;
        torch::load(t, dir + "/stage" + std::to_string(s) + ".pt");
        states[r].push_back(t);
      }
    }
    for (int s = 0; s < 3; ++s)
      for (size_t i = 0; i < states[0][s].size(); ++i)
        EXPECT_TRUE(torch::equal(states[0][s][i], states[1][s][i])) << schedule << " stage " << s << " tensor " << i;
  }
}

// pipemare's recompute run ahead of a stale microbatch's gradient (real mode, before the stage
// waits; forced here in a single-process run) gives the same weights bit for bit as the recompute
// at the backward, with and without T2 (whose estimate stays in the weights until the backward),
// the same sampled weight gaps (measured against the live weights, not the estimate), and the trace
// shows each R right before its microbatch's B. So does gpipe with pipeline.recompute (every
// backward recomputes, with the weights of the forward), and pipemare with it.
TEST(AsyncSchedules, RecomputeAheadEqualsRecomputeAtTheBackwardBitForBit) {
  struct Case {
    const char* schedule;
    bool t2, recompute;
  };
  const pm::test::TempDir tmp;  // removed at the end
  for (const Case c : {Case{"pipemare", false, false}, Case{"pipemare", true, false}, Case{"gpipe", false, true},
                       Case{"pipemare", true, true}}) {
    const bool t2 = c.t2;
    std::vector<std::vector<torch::Tensor>> states[2];
    std::vector<double> gaps[2];
    size_t ahead = 0;
    for (int r = 0; r < 2; ++r) {
      Experiment e = asyncExperiment(c.schedule, 3, 2);
      e.model.name = "cnn";
      e.pipeline.recompute = c.recompute;
      e.pipemare.t1 = true;
      e.pipemare.t2 = t2;
      e.training.trace_steps = -1;
      e.training.log_interval = 1;  // weight-gap samples on every minibatch (they read the live weights)
      const std::string dir = tmp.file("ahead_" + std::string(c.schedule) + std::to_string(t2) + std::to_string(c.recompute) + std::to_string(r));
      EngineOptions opts;
      opts.saveStateDir = dir;
      MemorySink sink;
      if (r == 1) setenv("PIPEMARE_RECOMPUTE_AHEAD", "always", 1);
      const auto outcome = runSingleProcess(e, sink, nullptr, opts);
      unsetenv("PIPEMARE_RECOMPUTE_AHEAD");
      ASSERT_EQ(outcome.status, pm::RunStatus::Finished);
      for (const auto& ev : sink.ofType(ev::kStage))
        for (const char* k : {"weight_gap", "weight_gap_t2"})
          if (ev.contains(k) && ev[k].is_number()) gaps[r].push_back(ev[k].get<double>());
      std::map<int, std::vector<std::pair<std::string, int64_t>>> order;  // stage -> its F/B/R/S in order
      for (const auto& ev : sink.ofType(ev::kTrace)) {
        const std::string a = ev["action"];
        if (a == "F" || a == "B" || a == "R" || a == "S") order[ev["stage"].get<int>()].emplace_back(a, ev["mb"].get<int64_t>());
      }
      for (const auto& [stage, acts] : order)
        for (size_t i = 0; i < acts.size(); ++i)
          if (acts[i].first == "R") {
            ++ahead;
            ASSERT_LT(i + 1, acts.size());
            EXPECT_EQ(acts[i + 1], std::make_pair(std::string("B"), acts[i].second)) << "stage " << stage;
          }
      for (int s = 0; s < 3; ++s) {
        std::vector<torch::Tensor> t;
        torch::load(t, dir + "/stage" + std::to_string(s) + ".pt");
        states[r].push_back(t);
      }
      if (r == 0) {
        EXPECT_EQ(ahead, 0u) << "single mode runs a receive only once its message is there";
      } else {
        EXPECT_GT(ahead, 0u);
      }
    }
    for (int s = 0; s < 3; ++s)
      for (size_t i = 0; i < states[0][s].size(); ++i)
        EXPECT_TRUE(torch::equal(states[0][s][i], states[1][s][i]))
            << c.schedule << " t2 " << t2 << " recompute " << c.recompute << " stage " << s << " tensor " << i;
    if (std::string(c.schedule) == "pipemare") {
      EXPECT_FALSE(gaps[0].empty());
    }
    EXPECT_EQ(gaps[0], gaps[1]) << c.schedule << " t2 " << t2;
  }
}

// The synchronous warm-up is gpipe exactly, whatever PipeMare's options (T1, T2 and delay-scaled
// momentum act only from the first asynchronous step): the warm-up minibatches' losses equal
// gpipe's bit for bit, and later ones differ (the options do act then).
TEST(AsyncSchedules, WarmupIsGpipeBitForBitWithEveryPipeMareOption) {
  auto losses = [](const Experiment& e) {
    MemorySink sink;
    RunOutcome out = runSingleProcess(e, sink, nullptr);
    EXPECT_EQ(out.status, pm::RunStatus::Finished) << out.message;
    std::map<int64_t, double> byStep;
    for (const auto& ev : sink.ofType(ev::kStep)) byStep[ev["step"].get<int64_t>()] = ev["loss"].get<double>();
    return byStep;
  };
  Experiment g = asyncExperiment("gpipe", 3, 2);
  g.model.name = "cnn";
  g.data.synthetic_samples = 64;  // 4 minibatches per epoch: the warm-up
  g.training.steps = 8;
  Experiment m = g;
  m.pipeline.schedule = ScheduleKind::PipeMare;
  m.pipemare.warmup_epochs = 1;
  m.pipemare.t1 = true;
  m.pipemare.t2 = true;
  m.pipemare.momentum_mode = MomentumMode::DelayScaled;
  const auto a = losses(g), b = losses(m);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (int64_t k = 1; k <= 5; ++k)  // minibatch 5 goes forward on the weights the warm-up left
    EXPECT_EQ(a.at(k), b.at(k)) << "step " << k << " is part of the synchronous warm-up";
  bool differs = false;
  for (int64_t k = 6; k <= 8; ++k) differs = differs || a.at(k) != b.at(k);
  EXPECT_TRUE(differs) << "after the warm-up the asynchronous steps must differ from gpipe";
}
