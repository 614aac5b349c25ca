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
