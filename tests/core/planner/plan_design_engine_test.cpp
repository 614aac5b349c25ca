// plan_design's warm-up share against the engine's own count: the minibatches StagePlan runs
// synchronously over the run's TrainingPlan total.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/engine/stage_plan.h"
#include "core/planner/plan_design.h"

using namespace pm;

TEST(PlanDesign, WarmupFractionIsTheEnginesWarmupOverItsRun) {
  struct Case {
    double warmupEpochs, epochs;
    int64_t steps, samples;
    int batch, N;
  };
  const std::vector<Case> cases = {
      {1, 3, 0, 1000, 100, 2},   {0.3, 1, 40, 2048, 100, 4}, {0.5, 2.5, 0, 2002, 100, 4}, {0.25, 1, 0, 999, 64, 8},
      {2, 1, 0, 640, 64, 4},     {0.35, 3, 0, 700, 100, 5},  {1.5, 4, 30, 333, 32, 2},    {0.05, 2, 0, 4096, 128, 8},
  };
  for (const Case& c : cases) {
    Experiment e;
    e.model.name = "mlp";
    e.data.dataset = DatasetKind::Synthetic;
    e.data.batch_size = c.batch;
    e.pipeline.stages = 2;
    e.pipeline.microbatches = c.N;
    e.pipeline.schedule = ScheduleKind::PipeMare;
    e.pipemare.warmup_epochs = c.warmupEpochs;
    e.training.epochs = c.epochs;
    e.training.steps = c.steps;
    const StagePlan engine(e, 0, 2, c.samples, 0);
    ASSERT_GT(engine.warmupMinibatches(), 0) << c.warmupEpochs << " epochs of " << c.samples;
    const double expected =
        static_cast<double>(engine.warmupMinibatches()) / static_cast<double>(engine.training().totalSteps());
    EXPECT_DOUBLE_EQ(warmupFraction(e, c.samples), expected)
        << c.warmupEpochs << " of " << c.epochs << " epochs / " << c.steps << " steps, " << c.samples << " samples, batch "
        << c.batch << ", N " << c.N;
  }
}
