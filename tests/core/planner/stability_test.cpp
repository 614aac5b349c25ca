// The stability predictor on exact cases: the edge of delayed (heavy-ball) gradient descent against
// the closed form and the spec's reference values, power iteration on quadratics of known spectrum,
// and a delayed-gradient simulation (PyTorch's SGD update) that diverges just above the predicted
// edge and converges just below it.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/planner/curvature.h"
#include "core/planner/stability.h"
#include "tests/support/tiny_experiment.h"

using namespace pm;

namespace {

// A symmetric matrix with the given eigenvalues: Q diag(eig) Q^T for a random orthogonal Q.
torch::Tensor matrixWithEigenvalues(const std::vector<double>& eig, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t n = static_cast<int64_t>(eig.size());
  const auto q = std::get<0>(at::linalg_qr(torch::randn({n, n}, torch::kDouble)));
  return q.matmul(torch::diag(torch::tensor(eig, torch::kDouble))).matmul(q.t());
}

// 0.5 x^T A x over one parameter vector (double precision) and its top Hessian eigenvalue.
double topEigenvalueOfQuadratic(const torch::Tensor& a, uint64_t seed) {
  auto x = torch::randn({a.size(0)}, torch::kDouble).requires_grad_(true);
  const auto loss = 0.5 * x.dot(a.mv(x));
  PowerIterationOptions o;
  o.iterations = 200;
  o.tolerance = 1e-10;
  o.seed = seed;
  return blockTopHessianEigenvalues(loss, {{x}}, o).at(0);
}

enum class Outcome { Converged, Diverged, Undecided };

// Delayed heavy-ball on f(x) = 0.5 x^T A x as PyTorch's SGD steps it (dampening 0): the gradient of
// step t is A x_{t-tau}; v = beta v + g; x -= lr v. Starts from x_0 with x_{-k} = x_0.
Outcome simulateDelayed(const std::vector<double>& eig, double lr, double beta, int64_t tau) {
  const torch::Tensor a = matrixWithEigenvalues(eig, 7);
  const size_t n = eig.size();
  std::vector<double> am(a.data_ptr<double>(), a.data_ptr<double>() + n * n);
  std::vector<double> x(n, 1.0), v(n, 0.0);
  std::deque<std::vector<double>> history(static_cast<size_t>(tau) + 1, x);  // x_{t-tau} .. x_t
  auto norm = [](const std::vector<double>& y) {
    double s = 0;
    for (double e : y) s += e * e;
    return std::sqrt(s);
  };
  const double start = norm(x);
  for (int64_t t = 0; t < 2000000; ++t) {
    const std::vector<double>& old = history.front();
    for (size_t i = 0; i < n; ++i) {
      double g = 0;
      for (size_t j = 0; j < n; ++j) g += am[i * n + j] * old[j];
      v[i] = beta * v[i] + g;
    }
    for (size_t i = 0; i < n; ++i) x[i] -= lr * v[i];
    history.pop_front();
    history.push_back(x);
    const double r = norm(x) / start;
    if (!(r < 1e8)) return Outcome::Diverged;
    if (r < 1e-8) return Outcome::Converged;
  }
  return Outcome::Undecided;
}

const char* name(Outcome o) { return o == Outcome::Converged ? "converged" : o == Outcome::Diverged ? "diverged" : "undecided"; }

}  // namespace

TEST(StabilityEdge, MatchesTheClosedFormWithoutMomentum) {
  for (int64_t tau : {0, 1, 2, 3, 4, 5, 8, 10, 16, 40}) {
    EXPECT_NEAR(closedFormEdge(tau), 2.0 * std::sin(M_PI / (2.0 * (2.0 * tau + 1.0))), 1e-15);
    // The bisection on the companion matrix's spectral radius, not the closed form: the radius is
    // below 1 just under the closed-form edge and above just over it.
    const double edge = closedFormEdge(tau);
    EXPECT_LT(delayedSpectralRadius(tau, 0.0, edge * (1 - 1e-6)), 1.0) << tau;
    EXPECT_GT(delayedSpectralRadius(tau, 0.0, edge * (1 + 1e-6)), 1.0) << tau;
    // A momentum so small that the bisection runs gives the closed form in the limit.
    EXPECT_NEAR(stabilityEdge(tau, 1e-9), edge, 1e-6 * edge) << tau;
  }
  // The spec's table: tau = 1, 2, 4, 8, 16.
  const std::vector<double> spec{1.000, 0.618, 0.347, 0.185, 0.095};
  const std::vector<int64_t> taus{1, 2, 4, 8, 16};
  for (size_t i = 0; i < taus.size(); ++i) EXPECT_NEAR(stabilityEdge(taus[i], 0.0), spec[i], 5e-4) << taus[i];
}

TEST(StabilityEdge, WithMomentumReproducesTheSpecsReferenceEdges) {
  EXPECT_NEAR(stabilityEdge(0, 0.9), 3.8, 1e-12);
  EXPECT_NEAR(stabilityEdge(0, 0.5), 3.0, 1e-12);
  // tau = 1: z^2 - (1+beta) z + beta + a is stable iff beta + a < 1.
  EXPECT_NEAR(stabilityEdge(1, 0.9), 0.1, 1e-8);
  EXPECT_NEAR(stabilityEdge(1, 0.3), 0.7, 1e-8);
  // beta = 0.9, tau = 2, 4, 8, 16 (docs/pipemare.md section 6).
  EXPECT_NEAR(stabilityEdge(2, 0.9), 0.0512, 5e-4);
  EXPECT_NEAR(stabilityEdge(4, 0.9), 0.0265, 5e-4);
  EXPECT_NEAR(stabilityEdge(8, 0.9), 0.0139, 5e-4);
  EXPECT_NEAR(stabilityEdge(16, 0.9), 0.0075, 5e-4);
  EXPECT_THROW(stabilityEdge(-1, 0.0), std::invalid_argument);
  EXPECT_THROW(stabilityEdge(2, 1.0), std::invalid_argument);
}

TEST(StabilityCurvature, PowerIterationFindsTheTopEigenvalueOfAQuadratic) {
  const std::vector<std::vector<double>> spectra{{10.0, 5.0, 2.0, 1.0, 0.5}, {3.0, 2.9, 1.0, 0.1, 0.01, 0.001}, {0.02, 0.01, 0.005}};
  uint64_t seed = 1;
  for (const auto& eig : spectra) {
    const double top = topEigenvalueOfQuadratic(matrixWithEigenvalues(eig, seed), seed);
    EXPECT_NEAR(top, eig.front(), 0.01 * eig.front()) << "spectrum starting " << eig.front();
    ++seed;
  }
  // A dominant negative eigenvalue: the largest (algebraic) one is still found.
  const double top = topEigenvalueOfQuadratic(matrixWithEigenvalues({-8.0, 2.0, 1.0, -0.5}, 4), 4);
  EXPECT_NEAR(top, 2.0, 0.02);
}

TEST(StabilityCurvature, BlocksUseTheirOwnSecondDerivatives) {
  // Two blocks of one quadratic with coupling: each block's estimate is the top of its own
  // diagonal block of A, not of A.
  const torch::Tensor a1 = matrixWithEigenvalues({6.0, 1.0, 0.5}, 11), a2 = matrixWithEigenvalues({0.25, 0.1}, 12);
  auto x = torch::randn({3}, torch::kDouble).requires_grad_(true);
  auto y = torch::randn({2}, torch::kDouble).requires_grad_(true);
  const auto coupling = torch::full({3, 2}, 0.3, torch::kDouble);
  const auto loss = 0.5 * x.dot(a1.mv(x)) + 0.5 * y.dot(a2.mv(y)) + x.dot(coupling.mv(y));
  PowerIterationOptions o;
  o.iterations = 200;
  o.tolerance = 1e-10;
  const auto tops = blockTopHessianEigenvalues(loss, {{x}, {y}, {}}, o);
  ASSERT_EQ(tops.size(), 3u);
  EXPECT_NEAR(tops[0], 6.0, 0.06);
  EXPECT_NEAR(tops[1], 0.25, 0.0025);
  EXPECT_EQ(tops[2], 0.0);
}

// The predicted largest rate lr* = edge(tau, beta) / lambda_max, with lambda_max estimated by power
// iteration: the delayed simulation diverges at 1.05 lr* and converges at 0.95 lr*.
TEST(StabilityEdge, DelayedSimulationDivergesJustAboveThePredictedEdge) {
  const std::vector<double> eig{4.0, 2.5, 1.0, 0.5};
  const double lambda = topEigenvalueOfQuadratic(matrixWithEigenvalues(eig, 7), 3);
  ASSERT_NEAR(lambda, 4.0, 0.04);
  for (double beta : {0.0, 0.9}) {
    for (int64_t tau : {0, 1, 2, 5, 10}) {
      const double lr = stabilityEdge(tau, beta) / lambda;
      EXPECT_EQ(simulateDelayed(eig, 1.05 * lr, beta, tau), Outcome::Diverged)
          << "tau " << tau << " beta " << beta << ": " << name(simulateDelayed(eig, 1.05 * lr, beta, tau));
      EXPECT_EQ(simulateDelayed(eig, 0.95 * lr, beta, tau), Outcome::Converged)
          << "tau " << tau << " beta " << beta << ": " << name(simulateDelayed(eig, 0.95 * lr, beta, tau));
    }
  }
}

namespace {
const pm::RowStability& rowNamed(const std::vector<pm::RowStability>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.method.name() == name) return r;
  throw std::runtime_error("no row " + name);
}
}  // namespace

TEST(StabilityPrediction, EveryRowTakesItsDelaysFromThePlannerAndTheSmallestStageBreaks) {
  StabilityInputs in;
  in.spec.timing = PipelineTiming::Software1F1B;
  in.spec.microbatches = 1;  // an update per microbatch: tau_s = P-1-s for pipedream and pipemare
  in.curvature = {1.0, 4.0, 2.0, 8.0};
  in.momentum = 0.0;
  const auto rows = predictStability(in);
  ASSERT_EQ(rows.size(), stabilityMethods().size());
  const auto row = [&](const std::string& name) -> const RowStability& { return rowNamed(rows, name); };
  for (const auto& r : rows) {
    ASSERT_EQ(r.stages.size(), 4u);
    double least = std::numeric_limits<double>::infinity();
    for (const auto& s : r.stages) least = std::min(least, s.maxLr);
    EXPECT_EQ(r.maxLr, least) << r.method.name();
    EXPECT_EQ(r.stages[static_cast<size_t>(r.breakingStage)].maxLr, r.maxLr);
  }
  // Synchronous: tau 0 everywhere, edge 2, the sharpest stage (lambda 8) breaks at 2/8.
  EXPECT_EQ(rows[0].method.name(), "gpipe");
  EXPECT_NEAR(rows[0].maxLr, 0.25, 1e-12);
  EXPECT_EQ(rows[0].breakingStage, 3);
  // zb-h1 is synchronous like 1f1b (it trains bit-identically): the same edge.
  EXPECT_EQ(row("zb-h1").maxLr, row("1f1b").maxLr);
  EXPECT_EQ(row("zb-h1").breakingStage, 3);
  // pipedream / pipemare: taus 3, 2, 1, 0. Stage 1: edge(2)/4 = 0.1545 < stage 0's edge(3)/1.
  const auto& pm = row("pipemare");
  EXPECT_EQ(pm.stages[0].tau, 3);
  EXPECT_EQ(pm.stages[3].tau, 0);
  EXPECT_NEAR(pm.maxLr, closedFormEdge(2) / 4.0, 1e-9);
  EXPECT_EQ(pm.breakingStage, 1);
  // T1 at its start scales stage s's rate by 1/tau_s (tau > 1): stage 0 allows 3 edge(3)/1, stage 1
  // 2 edge(2)/4 = 0.31, stage 2 (tau 1, unscaled) edge(1)/2 = 0.5, stage 3 (tau 0) 2/8 = 0.25: it breaks.
  const auto& t1 = row("pipemare+T1");
  EXPECT_NEAR(t1.stages[1].lrFactor, 0.5, 1e-15);
  EXPECT_NEAR(t1.stages[1].maxLr, 2.0 * closedFormEdge(2) / 4.0, 1e-9);
  EXPECT_NEAR(t1.maxLr, 0.25, 1e-12);
  EXPECT_EQ(t1.breakingStage, 3);
  // pipedream-2bw: tau 1 except the last stage.
  EXPECT_EQ(row("pipedream-2bw").stages[0].tau, 1);
  EXPECT_EQ(row("pipedream-2bw").stages[3].tau, 0);

  // Weight decay adds to the curvature; delay-scaled momentum lowers beta on asynchronous rows only.
  in.weightDecay = 1.0;
  in.momentum = 0.9;
  in.delayScaledMomentum = true;
  const auto wd = predictStability(in);
  EXPECT_NEAR(wd[0].stages[3].curvature, 9.0, 1e-12);
  EXPECT_NEAR(wd[0].stages[0].momentum, 0.9, 1e-15);
  EXPECT_NEAR(rowNamed(wd, "pipemare").stages[0].momentum, 0.9 - 0.75, 1e-12);
  EXPECT_NEAR(wd[0].maxLr, 3.8 / 9.0, 1e-12);

  in.curvature.clear();
  EXPECT_THROW(predictStability(in), std::invalid_argument);
}

// The estimate on a zoo model through the engine's partition: one finite, positive value per stage,
// and a second snapshot after a pipemare warm-up.
TEST(StabilityCurvature, EstimatesEveryStageOfAZooModel) {
  Experiment e = test::tinyExperiment("mlp");
  e.pipeline.stages = 3;
  e.pipeline.microbatches = 2;
  e.pipeline.schedule = ScheduleKind::PipeMare;
  e.pipemare.warmup_epochs = 0.25;  // 256 samples, batch 32: 2 of 8 minibatches
  CurvatureOptions o;
  o.microbatches = 2;
  o.power.iterations = 15;
  std::vector<CurvatureProgress> said;
  o.progress = [&](const CurvatureProgress& p) { said.push_back(p); };
  const CurvatureReport r = estimateStageCurvature(e, o);
  ASSERT_EQ(r.partition.stages(), 3);
  ASSERT_EQ(r.init.stages.size(), 3u);
  for (const auto& s : r.init.stages) {
    ASSERT_EQ(s.samples.size(), 2u);
    EXPECT_GT(s.min, 0.0);
    EXPECT_TRUE(std::isfinite(s.max));
    EXPECT_LE(s.min, s.mean);
    EXPECT_LE(s.mean, s.max);
  }
  EXPECT_TRUE(r.hasWarmup);
  EXPECT_EQ(r.warmupSteps, 2);
  EXPECT_EQ(r.afterWarmup.steps, 2);
  EXPECT_EQ(r.afterWarmup.stages.size(), 3u);
  // Its progress as data, phase by phase: each microbatch and warm-up step counted against its
  // phase's total (the 0.5 s reports inside a microbatch may come between them).
  std::vector<std::string> counted;
  for (const auto& p : said) {
    EXPECT_FALSE(p.message.empty());
    EXPECT_LE(p.done, p.total);
    if (p.total == 0 || (p.phase != "warm-up" && p.message.find("Hessian-vector products over") == std::string::npos)) {
      if (p.total == 0) counted.push_back(p.phase);
      continue;
    }
    counted.push_back(p.phase + " " + std::to_string(p.done) + "/" + std::to_string(p.total));
  }
  EXPECT_EQ(counted, (std::vector<std::string>{"data", "model", "curvature at init 1/2", "curvature at init 2/2", "warm-up 2/2",
                                               "curvature after warm-up 1/2", "curvature after warm-up 2/2"}));
}
