// A sweep's recorded definition and the grid points it implies.
#include <gtest/gtest.h>

#include <cmath>

#include "core/analysis/sweep_tags.h"
#include "core/util/errors.h"

using namespace pm;

namespace {
RunRecord run(int64_t id, std::vector<std::string> tags) {
  RunRecord r;
  r.id = id;
  r.status = RunStatus::Finished;
  r.sweep_id = "sw";
  r.tags = std::move(tags);
  return r;
}
}  // namespace

TEST(SweepDefinition, RoundTripsThroughJson) {
  SweepDefinition d;
  d.file = "experiments/x.json";
  d.experiment = {{"name", "x"}, {"model", {{"name", "mlp"}}}};
  d.overrides = {"training.steps=5"};
  d.grid = {{"optimizer.lr", {"0.1", "1e-2"}}, {"pipeline.stages", {"1", "2", "4"}}};
  d.tags = {"study"};
  d.name = "prefix";
  const SweepDefinition back = sweepDefinitionFromJson(sweepDefinitionToJson(d), "here");
  EXPECT_EQ(back.file, d.file);
  EXPECT_EQ(back.experiment, d.experiment);
  EXPECT_EQ(back.overrides, d.overrides);
  ASSERT_EQ(back.grid.size(), 2u);
  EXPECT_EQ(back.grid[1].key, "pipeline.stages");
  EXPECT_EQ(back.grid[1].values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(back.tags, d.tags);
  EXPECT_EQ(back.name, "prefix");
  const auto points = gridPoints(back.grid);
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0], (std::vector<std::string>{"optimizer.lr=0.1", "pipeline.stages=1"}));
  EXPECT_EQ(points[5], (std::vector<std::string>{"optimizer.lr=1e-2", "pipeline.stages=4"}));
}

TEST(SweepDefinition, DamagedDocumentsNameThePlace) {
  for (const char* bad : {"not json", "[]", R"({"version":2})",
                          R"({"version":1,"file":"f","experiment":{},"overrides":[],"tags":[],"name":"","grid":[]})",
                          R"({"version":1,"file":"f","experiment":3,"overrides":[],"tags":[],"name":"","grid":[{"key":"a","values":["1"]}]})",
                          R"({"version":1,"file":"f","experiment":{},"overrides":[],"tags":[],"name":""})"}) {
    try {
      sweepDefinitionFromJson(bad, "store.db (sweep s)");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("store.db (sweep s)"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged sweep definition"), std::string::npos) << e.what();
    }
  }
}

TEST(SweepDefinition, NotStartedPointsAreThoseNoRunLiesOn) {
  const std::vector<GridAxis> grid{{"lr", {"0.1", "1"}}, {"p", {"2", "4"}}};
  // Runs on (0.1, 2) and (1, 4), one with an unrelated tag; one run outside the grid.
  const std::vector<RunRecord> runs{run(1, {"lr=0.1", "p=2"}), run(2, {"study", "lr=1", "p=4"}), run(3, {"lr=5", "p=2"})};
  EXPECT_TRUE(runOnPoint(runs[1], {"lr=1", "p=4"}));
  EXPECT_FALSE(runOnPoint(runs[1], {"lr=1", "p=2"}));
  const auto missing = notStartedPoints(runs, grid);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].tags, (std::vector<std::string>{"lr=0.1", "p=4"}));
  EXPECT_EQ(missing[1].tags, (std::vector<std::string>{"lr=1", "p=2"}));
  for (const auto& m : missing) {
    EXPECT_EQ(m.id, 0);
    EXPECT_EQ(m.status, RunStatus::Created);
    EXPECT_EQ(sweepPointStatus(m), "not started");
    EXPECT_EQ(m.sweep_id, "sw");
    EXPECT_TRUE(std::isnan(m.final_accuracy));
  }
  EXPECT_EQ(sweepPointStatus(runs[0]), "finished");  // a stored run: its own status
  // With the stand-ins the swept keys are still the grid's.
  auto all = runs;
  all.pop_back();
  all.insert(all.end(), missing.begin(), missing.end());
  EXPECT_EQ(sweepKeys(all), (std::vector<std::string>{"lr", "p"}));
  EXPECT_TRUE(notStartedPoints(all, grid).empty());
}
