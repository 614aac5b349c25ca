#include "core/runner/store_recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/events/event.h"
#include "core/store/run_store.h"
#include "tests/support/test_support.h"

namespace {

// A stage's checkpoint makes the store write what it had buffered: a crash right after the
// checkpoint must not lose rows that a resume from it will not record again. Before it, rows wait
// for the flushing interval (here far longer than the test).
TEST(StoreRecorder, ACheckpointWritesTheBufferedRows) {
  pm::test::TempDir tmp;
  const std::string db = tmp.file("runs.db");
  pm::RunStore store(db);
  const int64_t run = store.createRun("recorded", "{}");
  pm::StoreRecorder recorder(store, run, /*flushInterval=*/3600.0);
  auto visibleSteps = [&] { return pm::RunStore(db, /*readOnly=*/true).loadMetric(run, "train/loss").size(); };
  for (int64_t step = 1; step <= 3; ++step) {
    pm::Json e = pm::makeEvent(pm::ev::kStep);
    e["step"] = step;
    e["loss"] = 1.0 / static_cast<double>(step);
    recorder.emit(e);
  }
  pm::Json plain = pm::makeEvent(pm::ev::kLog);
  plain["message"] = "an ordinary line";
  recorder.emit(plain);
  EXPECT_EQ(visibleSteps(), 0u) << "rows are buffered until the flushing interval";
  pm::Json checkpoint = pm::makeEvent(pm::ev::kLog);
  checkpoint["message"] = "stage 0: checkpoint at step 3 (...)";
  checkpoint["stage"] = 0;
  checkpoint["checkpoint_step"] = 3;
  recorder.emit(checkpoint);
  EXPECT_EQ(visibleSteps(), 3u);
  recorder.close();
}

// A stage event on a GPU carries the CUDA caching allocator's figures for the stage's device
// beside the accounted memory: both become stage metrics (mem/<category>, cuda/<figure>), with
// the stage and step they belong to.
TEST(StoreRecorder, CudaAllocatorFiguresBecomeStageMetrics) {
  pm::test::TempDir tmp;
  pm::RunStore store(tmp.file("runs.db"));
  const int64_t run = store.createRun("gpu", "{}");
  {
    pm::StoreRecorder recorder(store, run);
    pm::Json e = pm::makeEvent(pm::ev::kStage);
    e["stage"] = 1;
    e["step"] = 7;
    e["memory"] = {{"weights", 1024.0}, {"activations", 4096.0}};
    e["cuda"] = {{"allocated", 6000.0}, {"allocated_peak", 9000.0}, {"reserved", 16384.0}, {"note", "not a number"}};
    recorder.emit(e);
    recorder.close();
  }
  const auto keys = store.stageMetricKeys(run);
  for (const char* k : {"mem/weights", "mem/activations", "cuda/allocated", "cuda/allocated_peak", "cuda/reserved"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "cuda/note"), keys.end());
  const auto peak = store.loadStageMetric(run, "cuda/allocated_peak");
  ASSERT_EQ(peak.size(), 1u);
  EXPECT_EQ(peak[0].stage, 1);
  EXPECT_EQ(peak[0].step, 7);
  EXPECT_EQ(peak[0].value, 9000.0);
}

// The run's partition and halt step come from the events' structured fields, at once; a log line
// that reads like a partition is only a line.
TEST(StoreRecorder, StructuredFieldsBecomeFieldsOfTheRun) {
  pm::test::TempDir tmp;
  const std::string db = tmp.file("runs.db");
  pm::RunStore store(db);
  const int64_t run = store.createRun("recorded", "{}");
  pm::StoreRecorder recorder(store, run, /*flushInterval=*/3600.0);
  auto stored = [&] { return *pm::RunStore(db, /*readOnly=*/true).getRun(run); };
  using Units = std::vector<std::pair<int, int>>;

  pm::Json decided = pm::makeEvent(pm::ev::kLog);  // the launcher's partition (real mode)
  decided["message"] = "partition (parameters): [0,2) [2,6)";
  decided["partition"] = pm::Json::array({{{"stage", 0}, {"units", {0, 2}}}, {{"stage", 1}, {"units", {2, 6}}}});
  decided["partition_method"] = "parameters";
  recorder.emit(decided);
  EXPECT_EQ(stored().partition, (Units{{0, 2}, {2, 6}}));

  pm::Json prose = pm::makeEvent(pm::ev::kLog);
  prose["message"] = "partition: [0,1) [1,2) [2,6)";
  recorder.emit(prose);
  EXPECT_EQ(stored().partition, (Units{{0, 2}, {2, 6}}));

  pm::Json started = pm::makeEvent(pm::ev::kRunStarted);  // the stages' own report
  started["partition"] = pm::Json::array({{{"stage", 0}, {"units", {0, 3}}, {"unit_names", {"a", "b", "c"}}, {"parameters", 10}},
                                          {{"stage", 1}, {"units", {3, 6}}, {"unit_names", {"d", "e", "f"}}, {"parameters", 20}}});
  started["partition_text"] = "[0,3) [3,6)";
  recorder.emit(started);
  EXPECT_EQ(stored().partition, (Units{{0, 3}, {3, 6}}));
  EXPECT_EQ(stored().halt_step, 0);

  pm::Json finished = pm::makeEvent(pm::ev::kRunFinished);
  finished["status"] = pm::toString(pm::RunStatus::Stopped);
  finished["message"] = "stopped by request after step 12 (checkpoint written: resume with pipemare run --resume 1)";
  finished["summary"] = pm::Json::object();
  finished["halt_step"] = 12;
  recorder.emit(finished);
  EXPECT_EQ(stored().halt_step, 12);
  recorder.close();
}

}  // namespace
