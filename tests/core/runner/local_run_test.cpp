// runLocally: a single-mode run recorded in the store, and a failing one recorded as failed.
#include "core/runner/local_run.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/store/run_store.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_experiment.h"

using namespace pm;

namespace {

using pm::test::tinyExperiment;

}  // namespace

TEST(LocalRun, RecordsTheRunAndItsMetricsInTheStore) {
  pm::test::TempDir tmp;
  RunStore store(tmp.file("runs.db"));
  LocalRunRequest req;
  req.experiment = tinyExperiment();
  req.runName = "slice \"quoted\" ✓";
  LocalRunResult r = runLocally(store, req, nullptr);
  EXPECT_EQ(r.outcome.status, pm::RunStatus::Finished);
  RunStore reader(tmp.file("runs.db"));
  auto rec = reader.getRun(r.runId);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->name, "slice \"quoted\" ✓");
  EXPECT_EQ(rec->status, pm::RunStatus::Finished);
  EXPECT_EQ(rec->model, "mlp");
  EXPECT_GT(rec->finished_at, 0);
  auto loss = reader.loadMetric(r.runId, "train/loss");
  ASSERT_EQ(loss.size(), 4u);
  EXPECT_EQ(loss.back().step, 16);
  // The evaluation at the end, an accuracy; every stage's utilization (a fraction) and weights
  // (the same bytes at every step: the model's size does not change); each stage's forwards and
  // backwards in the trace.
  const auto accuracy = reader.loadMetric(r.runId, "eval/accuracy");
  ASSERT_FALSE(accuracy.empty());
  EXPECT_EQ(accuracy.back().step, 16);
  for (const auto& p : accuracy) EXPECT_TRUE(p.value >= 0 && p.value <= 1) << p.value;
  const int stages = req.experiment.pipeline.stages;
  std::set<int> utilized;
  for (const auto& p : reader.loadStageMetric(r.runId, "utilization")) {
    EXPECT_TRUE(p.value >= 0 && p.value <= 1) << "stage " << p.stage << ": " << p.value;
    utilized.insert(p.stage);
  }
  EXPECT_EQ(static_cast<int>(utilized.size()), stages);
  std::map<int, std::set<double>> weights;
  for (const auto& p : reader.loadStageMetric(r.runId, "mem/weights")) weights[p.stage].insert(p.value);
  ASSERT_EQ(static_cast<int>(weights.size()), stages);
  for (const auto& [stage, sizes] : weights) {
    EXPECT_EQ(sizes.size(), 1u) << "stage " << stage;
    EXPECT_GT(*sizes.begin(), 0) << "stage " << stage;
  }
  std::map<int, std::set<std::string>> actions;
  for (const auto& t : reader.loadTrace(r.runId)) actions[t.stage].insert(t.action);
  ASSERT_EQ(static_cast<int>(actions.size()), stages);
  for (const auto& [stage, kinds] : actions) {
    EXPECT_TRUE(kinds.count("F")) << "stage " << stage;
    EXPECT_TRUE(kinds.count("B")) << "stage " << stage;
  }
}

TEST(LocalRun, AFailingRunIsRecordedAsFailedWithItsMessage) {
  pm::test::TempDir tmp;
  RunStore store(tmp.file("runs.db"));
  LocalRunRequest req;
  req.experiment = tinyExperiment();
  req.experiment.data.dataset = DatasetKind::FashionMnist;
  req.experiment.data.path = (tmp.dir / "no-such-dir").string();
  LocalRunResult r = runLocally(store, req, nullptr);
  EXPECT_EQ(r.outcome.status, pm::RunStatus::Failed);
  auto rec = store.getRun(r.runId);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, pm::RunStatus::Failed);
  EXPECT_NE(rec->status_message.find("no-such-dir"), std::string::npos) << rec->status_message;
}
