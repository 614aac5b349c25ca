#pragma once
// The curvature of each pipeline stage: the top eigenvalue of the Hessian of the training loss
// restricted to the stage's parameters (the stage's diagonal block), by power iteration on
// Hessian-vector products through LibTorch autograd (double backward). Feeds the stability
// predictor (core/planner/stability.h; docs/planner.md, "Stability").
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/pipeline/partition.h"

namespace pm {

struct PowerIterationOptions {
  int iterations = 30;      // at most this many Hessian-vector products per block
  double tolerance = 1e-4;  // stop when the Rayleigh quotient changes by less than this, relatively
  uint64_t seed = 1;        // the random start vectors
};

// The largest eigenvalue of each block of the Hessian of `loss`: blocks[b] lists parameter
// tensors (requires_grad), and the products are H_bb v_b (the block's own second derivatives).
// `loss` must still hold its graph. When the power iteration's dominant eigenvalue is negative,
// a Lanczos run of the same length finds the largest (algebraic) one. A block without parameters, or
// whose loss does not depend on them, gives 0. `onIteration(block, iteration)` reports progress.
std::vector<double> blockTopHessianEigenvalues(const torch::Tensor& loss,
                                               const std::vector<std::vector<torch::Tensor>>& blocks,
                                               const PowerIterationOptions& opts = {},
                                               const std::function<void(int, int)>& onIteration = {});

// One estimate per stage over several microbatches.
struct StageCurvature {
  double mean = 0, stddev = 0, min = 0, max = 0;  // over the microbatches (stddev: population)
  std::vector<double> samples;                    // one per microbatch
};

struct CurvatureSnapshot {
  std::string when;  // "init" or "after warm-up"
  int64_t steps = 0;  // synchronous steps trained before it
  std::vector<StageCurvature> stages;
};

// How far the estimate is: its phase ("data", "model", "curvature at init", "warm-up",
// "curvature after warm-up"), done of total in the phase's own unit (microbatches, steps; 0 of 0
// for a phase that does not count), and the same said for people.
struct CurvatureProgress {
  std::string phase;
  long long done = 0, total = 0;
  std::string message;
};

struct CurvatureOptions {
  int microbatches = 3;          // microbatches estimated on (the run's first ones: minibatch 0 split into N, then 1, ...)
  PowerIterationOptions power;
  int64_t maxWarmupSteps = 500;  // the warm-up trains at most this many steps before the second estimate
  // Told at each phase's start, after each microbatch and warm-up step, and at most every 0.5 s
  // inside a microbatch's power iterations.
  std::function<void(const CurvatureProgress&)> progress;
};

struct CurvatureReport {
  Partition partition;                   // the engine's partition of the experiment
  std::vector<std::string> stageUnits;   // "fc1..fc2" per stage
  CurvatureSnapshot init;                // the model as built (seed training.seed)
  bool hasWarmup = false;                // pipemare with pipemare.warmup_epochs > 0
  int64_t warmupSteps = 0;               // the engine's warm-up minibatches
  bool warmupCapped = false;             // trained maxWarmupSteps of them only
  CurvatureSnapshot afterWarmup;         // with hasWarmup: after the synchronous warm-up
};

// Builds the experiment's model (seed training.seed) and its stages as the engine partitions them,
// estimates every stage's curvature on the first microbatches of the training data, and, when the
// experiment has a synchronous warm-up, trains it in one process (gradient accumulation over the
// N microbatches, one optimizer step per minibatch with the base learning-rate schedule, as gpipe
// computes it) and estimates again on the microbatches that follow. The model is in training mode
// (BatchNorm uses batch statistics, as in training). Throws ConfigError / DataError as a run would.
CurvatureReport estimateStageCurvature(const Experiment& e, const CurvatureOptions& opts = {});

}  // namespace pm
