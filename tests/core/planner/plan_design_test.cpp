// plan_design: experiments in, the planner's inputs out.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/data/datasets.h"
#include "core/planner/analytic_planner.h"
#include "core/planner/plan_design.h"
#include "core/util/errors.h"

using namespace pm;

namespace {
TrainingMethod method(const char* name) { return trainingMethodFromName(name); }
}  // namespace

namespace {

// cnn, P = 2, N = 4, 32 samples per minibatch, gpipe, plain SGD, the engine's defaults otherwise.
Experiment base() {
  Experiment e;
  e.model.name = "cnn";
  e.data.batch_size = 32;
  e.pipeline.stages = 2;
  e.pipeline.microbatches = 4;
  e.pipeline.schedule = ScheduleKind::GPipe;
  return e;
}

struct DesignCase {
  const char* what;
  std::function<void(Experiment&)> edit;
  TrainingMethod schedule;
  OptimizerKind optimizer;
  PipelineTiming timing;
  int updateInterval, m;
  PlanPartition partition;
  std::vector<int> boundaries;
};

}  // namespace

TEST(PlanDesign, MapsTheScheduleOptimizerTimingAndPartition) {
  using O = OptimizerKind;
  using T = PipelineTiming;
  using Part = PlanPartition;
  const std::vector<DesignCase> cases = {
      {"gpipe", [](Experiment&) {}, method("gpipe"), O::Sgd, T::Software1F1B, 0, 0, Part::Parameters, {}},
      {"gpipe with recompute", [](Experiment& e) { e.pipeline.recompute = true; }, method("gpipe+recompute"), O::Sgd,
       T::Software1F1B, 0, 0, Part::Parameters, {}},
      {"1f1b", [](Experiment& e) { e.pipeline.schedule = ScheduleKind::OneFOneB; }, method("1f1b"), O::Sgd, T::Software1F1B, 0, 0,
       Part::Parameters, {}},
      {"1f1b with recompute: the 1f1b row (only gpipe has a recompute row)",
       [](Experiment& e) {
         e.pipeline.schedule = ScheduleKind::OneFOneB;
         e.pipeline.recompute = true;
       },
       method("1f1b"), O::Sgd, T::Software1F1B, 0, 0, Part::Parameters, {}},
      {"zb-h1", [](Experiment& e) { e.pipeline.schedule = ScheduleKind::ZBH1; }, method("zb-h1"), O::Sgd, T::Software1F1B, 0, 0,
       Part::Parameters, {}},
      {"pipedream, paper timing",
       [](Experiment& e) {
         e.pipeline.schedule = ScheduleKind::PipeDream;
         e.pipeline.update_interval = 3;
         e.pipeline.timing = PipelineTiming::Paper;
       },
       method("pipedream"), O::Sgd, T::Paper, 3, 0, Part::Parameters, {}},
      {"pipedream-2bw: update_interval is m",
       [](Experiment& e) {
         e.pipeline.schedule = ScheduleKind::PipeDream2BW;
         e.pipeline.update_interval = 4;
       },
       method("pipedream-2bw"), O::Sgd, T::Software1F1B, 0, 4, Part::Parameters, {}},
      {"pipemare", [](Experiment& e) { e.pipeline.schedule = ScheduleKind::PipeMare; }, method("pipemare"), O::Sgd, T::Software1F1B, 0, 0,
       Part::Parameters, {}},
      {"pipemare with T2",
       [](Experiment& e) {
         e.pipeline.schedule = ScheduleKind::PipeMare;
         e.pipemare.t2 = true;
       },
       method("pipemare+T2"), O::Sgd, T::Software1F1B, 0, 0, Part::Parameters, {}},
      {"T2 is pipemare's only", [](Experiment& e) { e.pipemare.t2 = true; }, method("gpipe"), O::Sgd, T::Software1F1B, 0, 0,
       Part::Parameters, {}},
      {"sgd with momentum", [](Experiment& e) { e.optimizer.momentum = 0.9; }, method("gpipe"), O::SgdMomentum, T::Software1F1B,
       0, 0, Part::Parameters, {}},
      {"adam", [](Experiment& e) { e.optimizer.name = OptimizerType::Adam; }, method("gpipe"), O::Adam, T::Software1F1B, 0, 0,
       Part::Parameters, {}},
      {"adamw", [](Experiment& e) { e.optimizer.name = OptimizerType::AdamW; }, method("gpipe"), O::Adam, T::Software1F1B, 0, 0,
       Part::Parameters, {}},
      {"time partition: FLOPs stand in", [](Experiment& e) { e.pipeline.partition.method = PartitionMethod::Time; }, method("gpipe"), O::Sgd,
       T::Software1F1B, 0, 0, Part::Flops, {}},
      {"explicit partition",
       [](Experiment& e) {
         e.pipeline.partition.method = PartitionMethod::Explicit;
         e.pipeline.partition.boundaries = {3};
       },
       method("gpipe"), O::Sgd, T::Software1F1B, 0, 0, Part::Explicit, {3}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    Experiment e = base();
    c.edit(e);
    const PlanDesign d = planDesign(e, knownTrainSamples(e));
    EXPECT_EQ(d.method.name(), c.schedule.name());
    EXPECT_EQ(optimizerName(d.optimizer), optimizerName(c.optimizer));
    EXPECT_EQ(timingName(d.timing), timingName(c.timing));
    EXPECT_EQ(d.updateInterval, c.updateInterval);
    EXPECT_EQ(d.m, c.m);
    EXPECT_EQ(planPartitionName(d.partition), planPartitionName(c.partition));
    EXPECT_EQ(d.boundaries, c.boundaries);
    EXPECT_EQ(d.model, "cnn");
    EXPECT_EQ(d.stages, 2);
    EXPECT_EQ(d.microbatches, 4);
    EXPECT_EQ(d.batch, 32);
    EXPECT_EQ(d.warmupFraction, 0.0);
  }
}

TEST(PlanDesign, CopiesTheSizesAndGivesThePlannersSpec) {
  Experiment e = base();
  e.model.name = "charlm";
  e.data.dataset = DatasetKind::Text;
  e.data.context = 64;
  e.data.batch_size = 10;
  e.pipeline.stages = 3;
  e.pipeline.microbatches = 4;
  e.pipeline.schedule = ScheduleKind::PipeDream;
  e.pipeline.update_interval = 2;
  e.pipeline.timing = PipelineTiming::Paper;
  e.optimizer.name = OptimizerType::Adam;
  const PlanDesign d = planDesign(e, std::nullopt);
  EXPECT_EQ(d.model, "charlm");
  EXPECT_EQ(d.stages, 3);
  EXPECT_EQ(d.microbatches, 4);
  EXPECT_EQ(d.batch, 10);
  EXPECT_EQ(d.context, 64);
  EXPECT_EQ(d.samplesPerMicrobatch(), 3);  // 10 samples in 4 microbatches: 3, 3, 2, 2
  const PlanSpec s = d.spec();
  EXPECT_EQ(s.timing, PipelineTiming::Paper);
  EXPECT_EQ(s.optimizer, OptimizerKind::Adam);
  EXPECT_EQ(s.microbatches, 4);
  EXPECT_EQ(s.updateInterval, 2);
  EXPECT_EQ(s.m, 0);
  EXPECT_EQ(s.warmupFraction, 0.0);
}

TEST(PlanDesign, SamplesPerMicrobatchIsTheLargestMicrobatch) {
  struct Case {
    int batch, n, expected;
  };
  for (const Case& c : std::vector<Case>{{128, 8, 16}, {10, 4, 3}, {4, 4, 1}, {9, 2, 5}, {1, 1, 1}})
    EXPECT_EQ(samplesPerMicrobatch(c.batch, c.n), c.expected) << c.batch << " / " << c.n;
}

// The split's size without reading the data: Fashion-MNIST's published training split, the
// synthetic count, each cut to train_limit; a text corpus is unknown until read.
TEST(PlanDesign, KnownTrainSamples) {
  struct Case {
    DatasetKind dataset;
    int64_t trainLimit;
    std::optional<int64_t> expected;
  };
  using D = DatasetKind;
  const std::vector<Case> cases = {{D::FashionMnist, 0, kFashionMnistTrainSamples},
                                   {D::FashionMnist, 6000, 6000},
                                   {D::FashionMnist, 100000, kFashionMnistTrainSamples},
                                   {D::Synthetic, 0, 2048},
                                   {D::Synthetic, 100, 100},
                                   {D::Text, 0, std::nullopt},
                                   {D::Text, 500, std::nullopt}};
  EXPECT_EQ(kFashionMnistTrainSamples, 60000);
  for (const auto& c : cases) {
    Experiment e = base();
    e.data.dataset = c.dataset;
    e.data.train_limit = c.trainLimit;
    EXPECT_EQ(knownTrainSamples(e), c.expected) << c.dataset << " limit " << c.trainLimit;
  }
}

// The warm-up's share of the run: from epochs or, when training.steps is set, from the steps;
// whole minibatches as the engine counts them (a last partial minibatch of at least N samples
// counts; the warm-up rounded to the nearest minibatch, at most the run).
TEST(PlanDesign, WarmupFractionCountsMinibatchesAsTheEngine) {
  struct Case {
    const char* what;
    std::function<void(Experiment&)> edit;
    std::optional<int64_t> samples;  // nullopt: knownTrainSamples
    bool useKnown;
    double expected;
  };
  const std::vector<Case> cases = {
      {"1 of 4 epochs of Fashion-MNIST", [](Experiment& e) { e.training.epochs = 4; }, std::nullopt, true, 0.25},
      {"1 epoch of 6,000 images in minibatches of 100 = 60 of 240 steps",
       [](Experiment& e) {
         e.training.steps = 240;
         e.data.train_limit = 6000;
         e.data.batch_size = 100;
       },
       std::nullopt, true, 0.25},
      {"synthetic: 10 of 240 steps",
       [](Experiment& e) {
         e.training.steps = 240;
         e.data.dataset = DatasetKind::Synthetic;
         e.data.synthetic_samples = 1000;
         e.data.batch_size = 100;
       },
       std::nullopt, true, 10.0 / 240},
      {"0.3 x (20 whole minibatches + a partial one of 48 >= N = 4 samples) = 6.3 -> 6 of 240",
       [](Experiment& e) {
         e.pipemare.warmup_epochs = 0.3;
         e.training.steps = 240;
         e.data.dataset = DatasetKind::Synthetic;
         e.data.synthetic_samples = 2048;
         e.data.batch_size = 100;
       },
       std::nullopt, true, 6.0 / 240},
      {"a last partial minibatch smaller than N is dropped: 0.5 x 20 = 10 of 240",
       [](Experiment& e) {
         e.pipemare.warmup_epochs = 0.5;
         e.training.steps = 240;
         e.data.dataset = DatasetKind::Synthetic;
         e.data.synthetic_samples = 2002;
         e.data.batch_size = 100;
       },
       std::nullopt, true, 10.0 / 240},
      {"2.5 epochs of 10 minibatches: 25 steps, 10 of them warm-up",
       [](Experiment& e) {
         e.training.epochs = 2.5;
         e.data.dataset = DatasetKind::Synthetic;
         e.data.synthetic_samples = 1000;
         e.data.batch_size = 100;
       },
       std::nullopt, true, 0.4},
      {"a warm-up longer than the run is the run",
       [](Experiment& e) {
         e.pipemare.warmup_epochs = 5;
         e.training.epochs = 2;
       },
       std::nullopt, true, 1.0},
      {"a size given for a text corpus: 20 of 100 steps",
       [](Experiment& e) {
         e.pipemare.warmup_epochs = 2;
         e.training.steps = 100;
         e.data.dataset = DatasetKind::Text;
         e.data.batch_size = 50;
       },
       int64_t{500}, false, 0.2},
      {"text, size unknown, a length in epochs: the epochs' share",
       [](Experiment& e) {
         e.training.epochs = 4;
         e.data.dataset = DatasetKind::Text;
       },
       std::nullopt, true, 0.25},
      {"text, size unknown, a length in steps: unknown, 0",
       [](Experiment& e) {
         e.training.steps = 240;
         e.data.dataset = DatasetKind::Text;
       },
       std::nullopt, true, 0.0},
      {"no warm-up", [](Experiment& e) { e.pipemare.warmup_epochs = 0; }, std::nullopt, true, 0.0},
      {"not pipemare", [](Experiment& e) { e.pipeline.schedule = ScheduleKind::GPipe; }, std::nullopt, true, 0.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    Experiment e = base();
    e.pipeline.schedule = ScheduleKind::PipeMare;
    e.pipemare.warmup_epochs = 1;
    c.edit(e);
    const std::optional<int64_t> samples = c.useKnown ? knownTrainSamples(e) : c.samples;
    EXPECT_DOUBLE_EQ(warmupFraction(e, samples), c.expected);
    EXPECT_DOUBLE_EQ(planDesign(e, samples).warmupFraction, c.expected);
  }
}

// A training split smaller than N: the run would refuse it, and so does the warm-up's count.
TEST(PlanDesign, WarmupOfASplitSmallerThanNIsAConfigError) {
  Experiment e = base();
  e.pipeline.schedule = ScheduleKind::PipeMare;
  e.pipemare.warmup_epochs = 1;
  e.data.dataset = DatasetKind::Synthetic;
  e.data.train_limit = 2;  // N = 4
  EXPECT_THROW(warmupFraction(e, knownTrainSamples(e)), ConfigError);
}
