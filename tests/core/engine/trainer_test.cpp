#include <gtest/gtest.h>

#include <filesystem>

#include "core/engine/trainer.h"
#include "core/runner/local_run.h"
#include "core/store/run_store.h"

using namespace pm;
namespace fs = std::filesystem;

namespace {

Experiment tinyExperiment() {
  Experiment e;
  e.name = "tiny";
  e.model.name = "mlp";
  e.data.dataset = "synthetic";
  e.data.synthetic_samples = 256;
  e.data.batch_size = 32;
  e.pipeline.microbatches = 1;
  e.optimizer.lr = 0.05;
  e.optimizer.momentum = 0.9;
  e.training.steps = 16;
  e.training.log_interval = 4;
  e.training.seed = 3;
  return e;
}

struct TempDb {
  fs::path dir;
  TempDb() {
    dir = fs::temp_directory_path() / ("pm_trainer_" + std::to_string(::getpid()) + "_" +
                                       std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(dir);
  }
  ~TempDb() { fs::remove_all(dir); }
  std::string path() const { return (dir / "runs.db").string(); }
};

}  // namespace

TEST(Trainer, EmitsTheEventStreamAndLearns) {
  MemorySink sink;
  Experiment e = tinyExperiment();
  e.training.steps = 40;
  RunOutcome out = Trainer(e, sink).run();
  EXPECT_EQ(out.status, "finished");
  ASSERT_EQ(sink.ofType(ev::kRunStarted).size(), 1u);
  auto steps = sink.ofType(ev::kStep);
  ASSERT_EQ(steps.size(), 10u);  // every 4 of 40 steps
  EXPECT_EQ(steps.back()["step"], 40);
  EXPECT_LT(steps.back()["loss"].get<double>(), steps.front()["loss"].get<double>());
  auto evals = sink.ofType(ev::kEval);
  ASSERT_GE(evals.size(), 1u);
  EXPECT_GT(evals.back()["accuracy"].get<double>(), 0.3);  // 10 classes: chance is 0.1
  auto stages = sink.ofType(ev::kStage);
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.back()["memory"]["weights"].get<int64_t>(), 669706 * 4);
  EXPECT_EQ(stages.back()["memory"]["optimizer"].get<int64_t>(), 669706 * 4);  // momentum buffers
  EXPECT_GT(stages.back()["utilization"].get<double>(), 0.0);
  EXPECT_LE(stages.back()["utilization"].get<double>(), 1.0 + 1e-9);
}

// Gradient accumulation over N microbatches equals one full-batch step (mean loss).
TEST(Trainer, MicrobatchAccumulationMatchesFullBatch) {
  Experiment a = tinyExperiment();
  a.training.steps = 5;
  a.optimizer.momentum = 0;
  Experiment b = a;
  b.pipeline.microbatches = 4;
  MemorySink sa, sb;
  Trainer(a, sa).run();
  Trainer(b, sb).run();
  auto la = sa.ofType(ev::kStep).back()["loss"].get<double>();
  auto lb = sb.ofType(ev::kStep).back()["loss"].get<double>();
  EXPECT_NEAR(la, lb, 1e-5 * std::abs(la));
}

TEST(Trainer, DivergenceGuardStopsTheRun) {
  MemorySink sink;
  Experiment e = tinyExperiment();
  e.optimizer.lr = 50.0;
  e.training.divergence_guard.max_loss = 100;
  RunOutcome out = Trainer(e, sink).run();
  EXPECT_EQ(out.status, "diverged");
  EXPECT_NE(out.message.find("step"), std::string::npos);
  EXPECT_FALSE(sink.ofType(ev::kStep).empty());  // the curve up to the divergence is kept
}

TEST(Trainer, StopFlagStopsAtTheNextStep) {
  MemorySink sink;
  std::atomic<bool> stop{true};
  RunOutcome out = Trainer(tinyExperiment(), sink, &stop).run();
  EXPECT_EQ(out.status, "stopped");
  EXPECT_TRUE(sink.ofType(ev::kStep).empty());
}

TEST(LocalRun, RecordsTheRunAndItsMetricsInTheStore) {
  TempDb tmp;
  RunStore store(tmp.path());
  LocalRunRequest req;
  req.experiment = tinyExperiment();
  req.runName = "slice \"quoted\" ✓";
  LocalRunResult r = runLocally(store, req, nullptr);
  EXPECT_EQ(r.outcome.status, "finished");
  RunStore reader(tmp.path());
  auto rec = reader.getRun(r.runId);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->name, "slice \"quoted\" ✓");
  EXPECT_EQ(rec->status, "finished");
  EXPECT_EQ(rec->model, "mlp");
  EXPECT_GT(rec->finished_at, 0);
  auto loss = reader.loadMetric(r.runId, "train/loss");
  ASSERT_EQ(loss.size(), 4u);
  EXPECT_EQ(loss.back().step, 16);
  EXPECT_FALSE(reader.loadMetric(r.runId, "eval/accuracy").empty());
  EXPECT_FALSE(reader.loadStageMetric(r.runId, "utilization").empty());
  EXPECT_FALSE(reader.loadStageMetric(r.runId, "mem/weights").empty());
}

TEST(LocalRun, AFailingRunIsRecordedAsFailedWithItsMessage) {
  TempDb tmp;
  RunStore store(tmp.path());
  LocalRunRequest req;
  req.experiment = tinyExperiment();
  req.experiment.data.dataset = "fashion-mnist";
  req.experiment.data.path = (tmp.dir / "no-such-dir").string();
  LocalRunResult r = runLocally(store, req, nullptr);
  EXPECT_EQ(r.outcome.status, "failed");
  auto rec = store.getRun(r.runId);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, "failed");
  EXPECT_NE(rec->status_message.find("no-such-dir"), std::string::npos) << rec->status_message;
}
