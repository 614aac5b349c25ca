#include "core/planner/plan_design.h"

#include <algorithm>
#include <cmath>

#include "core/data/datasets.h"
#include "core/engine/training_plan.h"
#include "core/pipeline/schedule.h"
#include "core/planner/analytic_planner.h"

namespace pm {

std::string planPartitionName(PlanPartition p) {
  switch (p) {
    case PlanPartition::Parameters: return "parameters";
    case PlanPartition::Flops: return "flops";
    case PlanPartition::Explicit: return "explicit";
  }
  return "parameters";
}

int samplesPerMicrobatch(int batch, int microbatches) {
  const int n = std::max(1, microbatches);
  return std::max(1, (batch + n - 1) / n);
}

int PlanDesign::samplesPerMicrobatch() const { return pm::samplesPerMicrobatch(batch, microbatches); }

PlanSpec PlanDesign::spec() const {
  PlanSpec s;
  s.timing = timing;
  s.optimizer = optimizer;
  s.microbatches = microbatches;
  s.updateInterval = updateInterval;
  s.m = m;
  s.warmupFraction = warmupFraction;
  return s;
}

std::optional<int64_t> knownTrainSamples(const Experiment& e) {
  const DataConfig& d = e.data;
  int64_t samples = 0;
  if (d.dataset == DatasetKind::FashionMnist)
    samples = kFashionMnistTrainSamples;
  else if (d.dataset == DatasetKind::Synthetic)
    samples = d.synthetic_samples;
  else
    return std::nullopt;  // text: the corpus decides
  return d.train_limit > 0 ? std::min(samples, d.train_limit) : samples;
}

double warmupFraction(const Experiment& e, std::optional<int64_t> trainSamples) {
  const double warmupEpochs = e.pipemare.warmup_epochs;
  if (!scheduleDecl(e.pipeline.schedule).takesPipeMare || !(warmupEpochs > 0)) return 0;
  if (!trainSamples) {
    // Without the size of an epoch only a length in epochs compares with the warm-up's.
    if (e.training.steps > 0 || !(e.training.epochs > 0)) return 0;
    return std::min(1.0, warmupEpochs / e.training.epochs);
  }
  const TrainingPlan plan(e, *trainSamples);
  return static_cast<double>(plan.warmupMinibatches(warmupEpochs)) / static_cast<double>(plan.totalSteps());
}

PlanDesign planDesign(const Experiment& e, std::optional<int64_t> trainSamples) {
  PlanDesign d;
  d.model = e.model.name;
  d.stages = e.pipeline.stages;
  d.microbatches = e.pipeline.microbatches;
  d.batch = e.data.batch_size;
  d.context = e.data.context;
  // Optimizer state in units of the weights: plain SGD none, SGD with momentum one buffer,
  // Adam and AdamW two moments.
  d.optimizer = e.optimizer.name != OptimizerType::Sgd ? OptimizerKind::Adam
                : e.optimizer.momentum > 0              ? OptimizerKind::SgdMomentum
                                                        : OptimizerKind::Sgd;
  d.timing = e.pipeline.timing;
  const ScheduleKind kind = e.pipeline.schedule;
  d.method = planMethodOf(kind, e.pipeline.recompute, e.pipemare.t2);
  // The planner's u (steps every u microbatches) and 2bw's m are both pipeline.update_interval.
  if (scheduleDecl(kind).takesUpdateInterval) {
    if (scheduleDecl(kind).weights == WeightFamily::TwoVersions) d.m = e.pipeline.update_interval;
    else d.updateInterval = std::max(1, e.pipeline.update_interval);
  }
  d.warmupFraction = warmupFraction(e, trainSamples);
  const PartitionConfig& part = e.pipeline.partition;
  if (part.method == PartitionMethod::Explicit && !part.boundaries.empty()) {
    d.partition = PlanPartition::Explicit;
    d.boundaries = part.boundaries;
  } else if (part.method == PartitionMethod::Time) {
    d.partition = PlanPartition::Flops;
  }
  return d;
}

}  // namespace pm
