#pragma once
// The stability predictor's arithmetic (docs/planner.md, "Stability"): the edge of delayed
// gradient descent with heavy-ball momentum on a quadratic, and per schedule the largest stable
// base learning rate from each stage's curvature and delay. The delays are the planner's
// (stageTimings of delay_model.h); the curvatures come from core/planner/curvature.h. The
// spectral radius uses LibTorch's eigenvalue solver; nothing else here needs tensors.
#include <cstdint>
#include <string>
#include <vector>

#include "core/planner/analytic_planner.h"
#include "core/planner/planner_types.h"

namespace pm {

// 2 sin(pi / (2 (2 tau + 1))): the edge of plain delayed gradient descent, w_{t+1} = w_t - a w_{t-tau}.
double closedFormEdge(int64_t tau);

// The largest modulus of the roots of the delayed heavy-ball recurrence
//   w_{t+1} = w_t + beta (w_t - w_{t-1}) - a w_{t-tau},
// characteristic polynomial z^(tau+1) - (1+beta) z^tau + beta z^(tau-1) + a (tau >= 1;
// z^2 - (1+beta-a) z + beta at tau = 0), as the eigenvalues of its companion matrix.
// a = alpha * lambda (step times curvature). Throws std::invalid_argument for tau < 0 or beta
// outside [0, 1).
double delayedSpectralRadius(int64_t tau, double beta, double a);

// The largest a such that the recurrence is stable (spectral radius < 1) for every step in (0, a):
// bisection on delayedSpectralRadius to a relative 1e-10. beta = 0 gives closedFormEdge(tau),
// tau = 0 gives 2 (1 + beta).
double stabilityEdge(int64_t tau, double beta);

// The rows of the prediction: stabilityMethods() (core/pipeline/training_method.h).

struct StabilityInputs {
  PlanSpec spec;                  // timing, N, update interval, m (the planner's design)
  std::vector<double> curvature;  // lambda_s per stage: the top Hessian eigenvalue of its parameters
  double momentum = 0;            // SGD heavy-ball beta (optimizer.momentum)
  bool delayScaledMomentum = false;  // pipemare.momentum_mode = delay-scaled (asynchronous rows)
  double weightDecay = 0;         // SGD weight decay: adds to every curvature
};

struct StageStability {
  int64_t tau = 0;         // the stage's delay under the row's schedule (optimizer steps)
  double momentum = 0;     // beta the stage steps with
  double lrFactor = 1;     // the stage's rate over the base rate (T1 at its start: 1/tau)
  double curvature = 0;    // lambda + weight decay
  double edge = 0;         // the largest stable alpha*lambda at (tau, beta)
  double maxLr = 0;        // edge / (curvature * lrFactor); +inf for a stage without curvature
};

struct RowStability {
  TrainingMethod method;
  std::vector<StageStability> stages;
  double maxLr = 0;        // the smallest stage's maxLr
  int breakingStage = -1;  // the stage (0-based) that attains it; -1 when no stage has curvature
};

// Every row, in stabilityMethods() order. Throws std::invalid_argument when the curvature list is
// empty or has a non-finite value.
std::vector<RowStability> predictStability(const StabilityInputs& in);

}  // namespace pm
