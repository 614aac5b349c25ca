// The empirical stability probe (core/planner/stability_probe.h) on models whose edge is known:
// least squares on a fixed full batch is an exact quadratic, so plain gradient descent is stable
// exactly below 2 / lambda_max (heavy ball: 2 (1 + beta) / lambda_max), and a stage delayed by
// tau steps below stabilityEdge(tau, beta) / lambda_max (core/planner/stability.h). The probe
// knows none of this: it only trains and watches the loss.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <string>

#include "core/engine/lr_schedule.h"
#include "core/planner/stability.h"
#include "core/planner/stability_probe.h"
#include "core/util/errors.h"
#include "tests/support/script_models.h"
#include "tests/support/test_support.h"

using namespace pm;

namespace {

constexpr int64_t kSamples = 64, kFeatures = 8;

// A regression problem with a spread of curvatures (feature scales 0.5 .. 1.5) and a noise floor,
// a linear model (stage 0) and, with `delayed`, a second stage that holds a parameter no loss
// depends on (so that stage 0 is the delayed one and the loss stays the same quadratic).
struct Quadratic {
  test::TempDir tmp;
  Experiment e;
  torch::Tensor x;
  explicit Quadratic(bool delayed) {
    torch::manual_seed(11);
    const torch::Tensor scale = torch::linspace(0.5, 1.5, kFeatures);
    x = torch::randn({kSamples, kFeatures}) * scale;
    const torch::Tensor wStar = 2 * torch::randn({kFeatures});
    const torch::Tensor y = x.matmul(wStar) + 0.1 * torch::randn({kSamples});
    test::saveTensorFile(tmp.file("train.pt"), x, y);
    test::saveTensorFile(tmp.file("eval.pt"), x, y);
    torch::jit::Module lin = test::scriptLinear("Lin", kFeatures, 1, false, false);
    if (delayed) {
      torch::jit::Module idle = test::scriptModule("__torch__.Idle");
      idle.register_parameter("p", torch::zeros({1}).requires_grad_(), false);
      idle.define("def forward(self, x):\n    return x + 0.0 * self.p\n");
      test::scriptSequential({{"lin", lin}, {"idle", idle}}).save(tmp.file("model.pt"));
    } else {
      test::scriptSequential({{"lin", lin}}).save(tmp.file("model.pt"));
    }
    e.name = "quadratic";
    e.model.name = kTorchScriptModel;
    e.model.path = tmp.file("model.pt");
    e.model.task = ModelTask::Regression;
    e.data.dataset = DatasetKind::Tensors;
    e.data.path = tmp.file("train.pt");
    e.data.eval_path = tmp.file("eval.pt");
    e.data.batch_size = kSamples;  // the full batch: every step descends the same quadratic
    e.data.shuffle = false;
    e.pipeline.stages = delayed ? 2 : 1;
    e.pipeline.microbatches = 1;
    e.optimizer.lr = 0.1;
    e.optimizer.momentum = 0;
    e.training.steps = 1000;
    e.training.seed = 3;
  }
  // The largest eigenvalue of the Hessian of mean((x w + b - y)^2) in (w, b): 2/n [x 1]^T [x 1].
  double lambdaMax() const {
    const torch::Tensor a = torch::cat({x, torch::ones({kSamples, 1})}, 1).to(torch::kDouble);
    const torch::Tensor h = 2.0 / static_cast<double>(kSamples) * a.t().matmul(a);
    return torch::linalg::eigvalsh(h, "L").max().item<double>();
  }
};

ProbeOptions quick(std::vector<TrainingMethod> methods) {
  ProbeOptions o;
  o.steps = 60;
  o.threads = 1;
  o.methods = std::move(methods);
  return o;
}

// The bracket holds the true edge (to 10 %: a rate just past the edge grows its error so slowly
// that 60 steps cannot tell) and is as fine as asked.
void expectBrackets(const ProbeRow& row, double edge, double resolution) {
  ASSERT_TRUE(std::isfinite(row.trainsUpTo)) << row.method.name() << ": nothing trained";
  ASSERT_TRUE(std::isfinite(row.breaksAt)) << row.method.name() << ": nothing broke";
  EXPECT_LE(row.trainsUpTo, edge * 1.1) << row.method.name() << ": trains at " << row.trainsUpTo << ", edge " << edge;
  EXPECT_GE(row.breaksAt, edge / 1.1) << row.method.name() << ": breaks at " << row.breaksAt << ", edge " << edge;
  EXPECT_LE(row.breaksAt / row.trainsUpTo, resolution * (1 + 1e-9));
  EXPECT_NEAR(std::log(row.edge() / edge), 0.0, std::log(resolution)) << "probed " << row.edge() << ", edge " << edge;
}

}  // namespace

TEST(StabilityProbe, FindsTheEdgeOfGradientDescentOnAQuadratic) {
  Quadratic q(false);
  const double lambda = q.lambdaMax();
  ProbeReport r = probeStability(q.e, quick({TrainingMethod{ScheduleKind::GPipe}}));
  ASSERT_EQ(r.rows.size(), 1u);
  expectBrackets(r.rows[0], 2.0 / lambda, ProbeOptions{}.resolution);
  // Every trial above the edge either blew up or stayed far from the best.
  for (const auto& t : r.rows[0].trials) {
    if (t.lr > 2.0 / lambda * 1.1) {
      EXPECT_FALSE(t.trains) << "lr " << t.lr;
    }
  }
}

TEST(StabilityProbe, FindsTheHeavyBallEdge) {
  Quadratic q(false);
  q.e.optimizer.momentum = 0.5;
  const double lambda = q.lambdaMax();
  ProbeReport r = probeStability(q.e, quick({TrainingMethod{ScheduleKind::GPipe}}));
  ASSERT_EQ(r.rows.size(), 1u);
  expectBrackets(r.rows[0], 2.0 * 1.5 / lambda, ProbeOptions{}.resolution);
}

TEST(StabilityProbe, FindsTheEdgeOfADelayedStageAndRecordsItsDelay) {
  Quadratic q(true);
  const double lambda = q.lambdaMax();
  ProbeReport r = probeStability(q.e, quick({TrainingMethod{ScheduleKind::GPipe}, TrainingMethod{ScheduleKind::PipeMare}}));
  ASSERT_EQ(r.rows.size(), 2u);
  expectBrackets(r.rows[0], 2.0 / lambda, ProbeOptions{}.resolution);
  const ProbeRow& async = r.rows[1];
  ASSERT_EQ(async.delays.size(), 2u);
  const int64_t tau = async.delays[0];
  EXPECT_GE(tau, 1) << "stage 0 of pipemare at P = 2 steps on a stale gradient";
  EXPECT_EQ(async.delays[1], 0);
  expectBrackets(async, stabilityEdge(tau, 0.0) / lambda, ProbeOptions{}.resolution);
  EXPECT_LT(async.edge(), r.rows[0].edge()) << "the delay lowers the edge";
  EXPECT_FALSE(async.capped()) << "the delay, not the synchronous edge, decides it";
  EXPECT_NEAR(async.cap, r.rows[0].edge(), 1e-12);
  EXPECT_LT(async.trials.front().lr, r.rows[0].edge() * (1 + 1e-9)) << "it starts at the synchronous edge, not above";
}

TEST(StabilityProbe, AFinerResolutionBisectsFurther) {
  Quadratic q(false);
  ProbeOptions o = quick({TrainingMethod{ScheduleKind::GPipe}});
  o.resolution = 1.1;
  o.maxTrials = 12;
  ProbeReport r = probeStability(q.e, o);
  expectBrackets(r.rows[0], 2.0 / q.lambdaMax(), 1.1);
}

TEST(StabilityProbe, JudgesATrialByItsScheduleBestAndTheBracketAboveIt) {
  ProbeRow row;
  auto trial = [](double lr, double score, bool blew = false) {
    ProbeTrial t;
    t.lr = lr;
    t.firstLoss = 2.3;
    t.score = blew ? NAN : score;
    t.blewUp = blew;
    return t;
  };
  // Slow at 0.01, best at 0.04, within 25 % at 0.08, worse at 0.16, blown up at 0.32.
  row.trials = {trial(0.08, 0.9), trial(0.04, 0.8), trial(0.16, 1.2), trial(0.32, 0, true), trial(0.01, 1.5)};
  ProbeOptions o;
  judgeProbeRow(row, o);
  EXPECT_DOUBLE_EQ(row.bestLr, 0.04);
  EXPECT_DOUBLE_EQ(row.trainsUpTo, 0.08);
  EXPECT_DOUBLE_EQ(row.breaksAt, 0.16);
  EXPECT_NEAR(row.edge(), std::sqrt(0.08 * 0.16), 1e-12);
  EXPECT_FALSE(row.trials[4].trains) << "slower than the best by more than the tolerance";
  EXPECT_FALSE(row.trials[3].trains);
  // Capped by the synchronous edge: the lower of the two.
  row.cap = 0.1;
  EXPECT_NEAR(row.edge(), 0.1, 1e-12);
  EXPECT_TRUE(row.capped());
  row.cap = 0.5;
  EXPECT_NEAR(row.edge(), std::sqrt(0.08 * 0.16), 1e-12);
  EXPECT_FALSE(row.capped());
  // A schedule whose best trial learned nothing has no edge.
  ProbeRow flat;
  flat.trials = {trial(0.1, 2.4), trial(0.2, 2.5)};
  judgeProbeRow(flat, o);
  EXPECT_TRUE(std::isnan(flat.edge()));
}

TEST(StabilityProbe, StopsWhenCancelled) {
  Quadratic q(false);
  std::atomic<bool> cancel{false};
  ProbeOptions o = quick({TrainingMethod{ScheduleKind::GPipe}, TrainingMethod{ScheduleKind::PipeMare}});
  int told = 0;
  o.progress = [&](const ProbeProgress& p) {
    ++told;
    EXPECT_LE(p.done, p.total);
    if (p.done >= 30) cancel.store(true);
  };
  o.cancel = &cancel;
  ProbeReport r = probeStability(q.e, o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_GT(told, 0);
  ASSERT_EQ(r.rows.size(), 1u) << "the second schedule never started";
  EXPECT_LE(r.rows[0].trials.size(), 2u);
}

// A run shorter than the trials asked for: each trial is the run, and the progress counts its steps
// (it said "step 20 of 60" and a total for 60-step trials).
TEST(StabilityProbe, ProgressCountsTheStepsOfARunShorterThanTheTrials) {
  Quadratic q(false);
  q.e.training.steps = 20;
  ProbeOptions o = quick({TrainingMethod{ScheduleKind::GPipe}});
  std::vector<ProbeProgress> told;
  o.progress = [&](const ProbeProgress& p) { told.push_back(p); };
  ProbeReport r = probeStability(q.e, o);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.steps, 20);
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told.front().total, static_cast<long long>(o.maxTrials) * 20);
  bool sawEnd = false;
  for (const auto& p : told) {
    EXPECT_NE(p.message.find(" of 20 (trial"), std::string::npos) << p.message;
    EXPECT_LE(p.done, p.total) << p.message;
    sawEnd = sawEnd || p.message.find("step 20 of 20") != std::string::npos;
  }
  EXPECT_TRUE(sawEnd);
}

TEST(StabilityProbe, RowsFollowTheDesignAndDropWhatTheScheduleDoesNotTake) {
  Experiment e;
  e.pipeline.schedule = ScheduleKind::PipeDream2BW;
  e.pipeline.stages = 2;
  const auto rows = probeMethodsFor(e);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows.back().name(), "pipedream-2bw");
  e.pipeline.schedule = ScheduleKind::ZBV;
  EXPECT_EQ(probeMethodsFor(e).size(), 5u) << "zb-v computes gpipe's update";
  EXPECT_EQ(probeMethodOf(TrainingMethod{ScheduleKind::Interleaved1F1B}).name(), "gpipe");
  EXPECT_EQ(probeMethodOf(TrainingMethod{ScheduleKind::GPipe, true}).name(), "gpipe");
  Experiment p;
  p.pipeline.schedule = ScheduleKind::PipeMare;
  p.pipemare.t1 = true;
  p.pipemare.warmup_epochs = 1;
  p.pipeline.update_interval = 1;
  const Experiment g = withMethod(p, TrainingMethod{ScheduleKind::GPipe});
  EXPECT_FALSE(g.pipemare.t1) << "gpipe does not take pipemare.*";
  EXPECT_NO_THROW(validateExperiment(g));
  const Experiment t = withMethod(p, TrainingMethod{ScheduleKind::PipeMare, false, true, true});
  EXPECT_TRUE(t.pipemare.t2);
  EXPECT_EQ(t.pipemare.warmup_epochs, 0) << "the probe measures the asynchronous update";
}

// A miniature of the run is the run's schedules compressed: the cosine decays over the trial's
// steps, its warm-up and T1's annealing shrink with it, and a trial ends at the run's last rates.
TEST(StabilityProbe, AMiniatureRunCompressesTheLearningRateScheduleAndT1) {
  Experiment e;
  e.data.dataset = DatasetKind::Synthetic;
  e.data.synthetic_samples = 1000;
  e.data.batch_size = 10;  // 100 steps an epoch
  e.training.epochs = 3;   // 300 steps
  e.pipeline.stages = 2;
  e.pipeline.schedule = ScheduleKind::PipeMare;
  e.pipemare.t1 = true;  // annealed over one epoch: 100 steps
  e.optimizer.schedule.name = LrScheduleType::Cosine;
  e.optimizer.schedule.warmup_steps = 30;
  const TrainingPlan run = runPlanOf(e);
  ASSERT_EQ(run.totalSteps(), 300);
  const Experiment m = miniatureRun(e, 50, run);
  EXPECT_NO_THROW(validateExperiment(m));
  EXPECT_EQ(m.training.steps, 50);
  EXPECT_EQ(m.optimizer.schedule.warmup_steps, 5);
  EXPECT_EQ(m.pipemare.anneal_steps, 17);
  // The rate at a share of the miniature is the run's at that share, to one miniature step: lr / 5
  // on the warm-up's ramp (5 steps), and after it the cosine's largest change in a step (pi/2 lr /
  // its 45 steps, 0.035 lr).
  for (double share : {0.04, 0.26, 0.5, 0.74, 0.98}) {
    const int64_t k = std::llround(share * 50);
    const double mini = baseLearningRate(m.optimizer, k, 50);
    const double full = baseLearningRate(e.optimizer, std::llround(share * 300), 300);
    EXPECT_NEAR(mini, full, (k < 5 ? 0.2 : 0.035) * e.optimizer.lr) << "at " << share << " of the run";
  }
  EXPECT_EQ(miniatureRun(e, 300, run).training.steps, 0) << "a trial as long as the run is the run";
}

// Judged by accuracy (the study map's rule), the best trial is the most accurate one, not the one
// of the lowest loss, and a trial trains within the points of it.
TEST(StabilityProbe, JudgedByAccuracyTheMostAccurateTrialIsTheBest) {
  ProbeRow row;
  auto trial = [](double lr, double score, double accuracy, bool blew = false) {
    ProbeTrial t;
    t.lr = lr;
    t.firstLoss = 2.3;
    t.score = blew ? NAN : score;
    t.accuracy = blew ? NAN : accuracy;
    t.blewUp = blew;
    return t;
  };
  // Lowest loss at 0.01, most accurate at 0.04; 0.08 within 5 points of it, 0.16 not, 0.32 blew up.
  row.trials = {trial(0.01, 0.5, 0.82), trial(0.04, 0.7, 0.86), trial(0.08, 0.9, 0.83), trial(0.16, 0.95, 0.79),
                trial(0.32, 0, 0, true)};
  ProbeOptions o;
  o.judge = ProbeJudge::Accuracy;
  judgeProbeRow(row, o);
  EXPECT_DOUBLE_EQ(row.bestLr, 0.04);
  EXPECT_DOUBLE_EQ(row.bestAccuracy, 0.86);
  EXPECT_DOUBLE_EQ(row.trainsUpTo, 0.08);
  EXPECT_DOUBLE_EQ(row.breaksAt, 0.16);
  EXPECT_TRUE(row.trials[0].trains) << "0.82 is within 5 points of 0.86";
  EXPECT_FALSE(row.trials[3].trains) << "0.79 is not";
  // The same trials judged by loss: the lowest loss is the best, and 0.04 is 40 % worse than it.
  o.judge = ProbeJudge::Loss;
  judgeProbeRow(row, o);
  EXPECT_DOUBLE_EQ(row.bestLr, 0.01);
  EXPECT_DOUBLE_EQ(row.trainsUpTo, 0.01);
  EXPECT_DOUBLE_EQ(row.breaksAt, 0.04);
}

// The probe judged by accuracy trains miniature runs that end as the run does and evaluate there:
// every trial that did not blow up has its held-out accuracy, and the row is judged by it.
TEST(StabilityProbe, MiniatureRunsJudgedByAccuracyEvaluateAtTheirEnd) {
  Experiment e;
  e.name = "mini";
  e.model.name = "mlp";
  e.data.dataset = DatasetKind::Synthetic;
  e.data.synthetic_samples = 512;
  e.data.batch_size = 32;  // 16 steps an epoch
  e.training.epochs = 3;   // 48 steps, compressed into 12
  e.training.seed = 4;
  e.pipeline.stages = 2;
  e.optimizer.lr = 0.05;
  e.optimizer.momentum = 0.9;
  e.optimizer.schedule.name = LrScheduleType::Cosine;
  ProbeOptions o = quick({TrainingMethod{ScheduleKind::GPipe}});
  o.steps = 12;
  o.horizon = ProbeHorizon::Run;
  o.judge = ProbeJudge::Accuracy;
  o.evalSamples = 64;
  o.maxTrials = 5;
  const ProbeReport r = probeStability(e, o);
  EXPECT_EQ(r.runSteps, 48);
  ASSERT_EQ(r.rows.size(), 1u);
  const ProbeRow& row = r.rows[0];
  ASSERT_TRUE(std::isfinite(row.bestAccuracy));
  int evaluated = 0;
  for (const auto& t : row.trials) {
    if (t.blewUp) continue;
    ++evaluated;
    EXPECT_EQ(t.steps, 12) << "a miniature trial trains the miniature's steps, at lr " << t.lr;
    ASSERT_TRUE(std::isfinite(t.accuracy)) << "no evaluation at the end of the trial at lr " << t.lr;
    EXPECT_GE(t.accuracy, 0.0);
    EXPECT_LE(t.accuracy, row.bestAccuracy);
    EXPECT_EQ(t.trains, t.accuracy >= row.bestAccuracy - o.accuracyPoints) << "at lr " << t.lr;
  }
  EXPECT_GE(evaluated, 2);
}

TEST(StabilityProbe, TheAccuracyJudgeNeedsTheRunHorizonAndAModelThatReportsAccuracy) {
  Quadratic q(false);
  ProbeOptions o = quick({TrainingMethod{ScheduleKind::GPipe}});
  o.judge = ProbeJudge::Accuracy;
  try {
    probeStability(q.e, o);
    FAIL() << "the accuracy judge ran on the run's first steps";
  } catch (const ConfigError& ex) {
    EXPECT_NE(std::string(ex.what()).find("run horizon"), std::string::npos) << ex.what();
  }
  o.horizon = ProbeHorizon::Run;
  try {
    probeStability(q.e, o);
    FAIL() << "a regression model was judged by accuracy";
  } catch (const ConfigError& ex) {
    EXPECT_NE(std::string(ex.what()).find("reports none"), std::string::npos) << ex.what();
  }
}
