// runLocally: a single-mode run recorded in the store, and a failing one recorded as failed.
#include "core/runner/local_run.h"

#include <gtest/gtest.h>

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
  EXPECT_FALSE(reader.loadMetric(r.runId, "eval/accuracy").empty());
  EXPECT_FALSE(reader.loadStageMetric(r.runId, "utilization").empty());
  EXPECT_FALSE(reader.loadStageMetric(r.runId, "mem/weights").empty());
  EXPECT_FALSE(reader.loadTrace(r.runId).empty());
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
