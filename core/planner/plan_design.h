#pragma once
// An experiment as the planner sees it: the planner's inputs that describe the experiment's design
// (model, P, N, minibatch, optimizer, timing model, the plan row of its schedule, update interval
// or m, the share of a pipemare warm-up, partition, context). The one place that maps an
// Experiment to the planner: `pipemare plan --experiment FILE`, `pipemare plan --against RUN` and,
// through the command, the workbench's Design and Timeline tabs. Arithmetic on the configuration
// (the warm-up's share counts minibatches as the engine's TrainingPlan does); no LibTorch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/planner/planner_types.h"

namespace pm {

struct PlanSpec;  // core/planner/analytic_planner.h

// How the units are split into stages, as pipeline.partition says: balanced by parameters (the
// engine's default), by forward FLOPs (the planner's stand-in for "time", which the engine
// measures as it runs), or at explicit boundaries.
enum class PlanPartition { Parameters, Flops, Explicit };
std::string planPartitionName(PlanPartition p);  // "parameters" | "flops" | "explicit"

struct PlanDesign {
  std::string model = "mlp";
  int stages = 1;        // P
  int microbatches = 1;  // N
  int batch = 1;         // samples per minibatch
  int context = 128;     // a token model's sequence length (data.context)
  OptimizerKind optimizer = OptimizerKind::Sgd;
  PipelineTiming timing = PipelineTiming::Software1F1B;  // pipeline.timing
  // The design's own row of the plan: pipeline.schedule, gpipe+recompute with pipeline.recompute,
  // pipemare+T2 with pipemare.t2.
  TrainingMethod method;  // the design's planner row (planMethodOf)
  int updateInterval = 0;     // pipedream: pipeline.update_interval (0 = N, the planner's default)
  int m = 0;                  // pipedream-2bw: pipeline.update_interval (0 = max(N, P))
  double warmupFraction = 0;  // pipemare: the share of the run's minibatches its warm-up takes
  PlanPartition partition = PlanPartition::Parameters;
  std::vector<int> boundaries;  // Explicit: the first unit of stages 1..P-1

  // The samples of the largest microbatch (a minibatch splits as tensor_split splits it: the
  // first batch % N microbatches one sample larger).
  int samplesPerMicrobatch() const;
  // The planner's spec of the design: timing, optimizer, N, update interval, m, warm-up share
  // (callers include core/planner/analytic_planner.h).
  PlanSpec spec() const;
};

// Samples per microbatch of a minibatch of `batch` split into `microbatches`: the largest one's.
int samplesPerMicrobatch(int batch, int microbatches);

// The training split's size where it is known without reading the data: Fashion-MNIST's published
// training split, data.synthetic_samples, each cut to data.train_limit; none for a text corpus
// (its size is the corpus's).
std::optional<int64_t> knownTrainSamples(const Experiment& e);

// The share of a pipemare run's minibatches that its synchronous warm-up (pipemare.warmup_epochs)
// takes, counted as the engine counts: whole minibatches per epoch and the run's total from
// TrainingPlan, the warm-up rounded to whole minibatches and at most the run. Without the split's
// size: warmup_epochs over training.epochs, or 0 when training.steps sets the run's length. 0 for
// other schedules and without a warm-up. Throws ConfigError when the split is smaller than N (as
// the run would).
double warmupFraction(const Experiment& e, std::optional<int64_t> trainSamples);

// The planner's inputs of a validated experiment; `trainSamples` as for warmupFraction.
PlanDesign planDesign(const Experiment& e, std::optional<int64_t> trainSamples);

}  // namespace pm
