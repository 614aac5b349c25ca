#include "core/planner/stability.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/planner/delay_model.h"

namespace pm {

namespace {

constexpr double kPi = 3.14159265358979323846;

void checkRecurrence(int64_t tau, double beta) {
  if (tau < 0) throw std::invalid_argument("delay tau must be >= 0, found " + std::to_string(tau));
  if (!(beta >= 0 && beta < 1)) throw std::invalid_argument("momentum must be in [0, 1), found " + std::to_string(beta));
}

}  // namespace

double closedFormEdge(int64_t tau) { return 2.0 * std::sin(kPi / (2.0 * (2.0 * static_cast<double>(tau) + 1.0))); }

double delayedSpectralRadius(int64_t tau, double beta, double a) {
  checkRecurrence(tau, beta);
  // w_{t+1} = sum_j c_j w_{t-j}: c_0 = 1 + beta, c_1 = -beta, c_tau -= a.
  const int64_t order = std::max<int64_t>(tau + 1, beta > 0 ? 2 : 1);
  std::vector<double> c(static_cast<size_t>(order), 0.0);
  c[0] += 1.0 + beta;
  if (order > 1) c[1] -= beta;
  c[static_cast<size_t>(tau)] -= a;
  if (order == 1) return std::abs(c[0]);
  if (order == 2) {
    // z^2 - c0 z - c1: the roots in closed form.
    const double disc = c[0] * c[0] + 4.0 * c[1];
    if (disc >= 0) {
      const double s = std::sqrt(disc);
      return std::max(std::abs((c[0] + s) / 2.0), std::abs((c[0] - s) / 2.0));
    }
    return std::sqrt(-c[1]);  // complex pair: |z|^2 = the product of the roots = -c1
  }
  // Companion matrix: first row c, ones below the diagonal.
  auto m = torch::zeros({order, order}, torch::kDouble);
  auto acc = m.accessor<double, 2>();
  for (int64_t j = 0; j < order; ++j) acc[0][j] = c[static_cast<size_t>(j)];
  for (int64_t i = 1; i < order; ++i) acc[i][i - 1] = 1.0;
  return at::linalg_eigvals(m).abs().max().item<double>();  // the ATen op: torch::linalg left torch/torch.h in 2.x
}

double stabilityEdge(int64_t tau, double beta) {
  checkRecurrence(tau, beta);
  if (tau == 0) return 2.0 * (1.0 + beta);
  if (beta == 0) return closedFormEdge(tau);
  // The stable steps are (0, edge): the root at z = 1 of a = 0 moves inside for a small step.
  // Bracket the edge from above, then bisect.
  double lo = 0, hi = 2.0 * (1.0 + beta);
  while (delayedSpectralRadius(tau, beta, hi) < 1.0) {
    lo = hi;
    hi *= 2;
    if (hi > 1e6) throw std::invalid_argument("no stability edge found below 1e6");
  }
  while (hi - lo > 1e-10 * hi) {
    const double mid = 0.5 * (lo + hi);
    (delayedSpectralRadius(tau, beta, mid) < 1.0 ? lo : hi) = mid;
  }
  return lo;
}

std::vector<RowStability> predictStability(const StabilityInputs& in) {
  if (in.curvature.empty()) throw std::invalid_argument("no stage curvature to predict from");
  for (double l : in.curvature)
    if (!std::isfinite(l)) throw std::invalid_argument("a stage's curvature is not finite");
  const int P = static_cast<int>(in.curvature.size());
  std::map<std::pair<int64_t, double>, double> edges;  // (tau, beta) -> edge, shared by the rows
  auto edgeOf = [&](int64_t tau, double beta) {
    auto it = edges.find({tau, beta});
    if (it == edges.end()) it = edges.emplace(std::make_pair(tau, beta), stabilityEdge(tau, beta)).first;
    return it->second;
  };
  std::vector<RowStability> out;
  for (const TrainingMethod& row : stabilityMethods()) {
    // T1 changes the rates, not the delays: the delays are the schedule's.
    const std::vector<StageTiming> timings = stageTimings(delayParams(TrainingMethod{row.schedule}, P, in.spec));
    RowStability r;
    r.method = row;
    r.maxLr = std::numeric_limits<double>::infinity();
    for (int s = 0; s < P; ++s) {
      StageStability st;
      st.tau = timings[static_cast<size_t>(s)].tau;
      st.momentum = in.momentum;
      // delay-scaled momentum (StagePlan): beta - tau/(1+tau), at least 0, on asynchronous schedules.
      if (in.delayScaledMomentum && isAsynchronous(row.schedule)) {
        const double t = static_cast<double>(st.tau);
        st.momentum = std::max(0.0, in.momentum - t / (1.0 + t));
      }
      // T1 at its first step: lr * tau^-1 for tau > 1 (lr_schedule.h t1LearningRate with p = 1).
      if (row.t1 && st.tau > 1) st.lrFactor = 1.0 / static_cast<double>(st.tau);
      st.curvature = in.curvature[static_cast<size_t>(s)] + in.weightDecay;
      st.edge = edgeOf(st.tau, st.momentum);
      st.maxLr = st.curvature > 0 ? st.edge / (st.curvature * st.lrFactor) : std::numeric_limits<double>::infinity();
      if (st.maxLr < r.maxLr) {
        r.maxLr = st.maxLr;
        r.breakingStage = s;
      }
      r.stages.push_back(st);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pm
