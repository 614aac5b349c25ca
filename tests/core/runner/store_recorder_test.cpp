#include "core/runner/store_recorder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/events/event.h"
#include "core/store/run_store.h"

namespace fs = std::filesystem;

namespace {

// A stage's checkpoint makes the store write what it had buffered: a crash right after the
// checkpoint must not lose rows that a resume from it will not record again. Before it, rows wait
// for the flushing interval (here far longer than the test).
TEST(StoreRecorder, ACheckpointWritesTheBufferedRows) {
  const fs::path dir = fs::temp_directory_path() / ("pm_recorder_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "runs.db").string();
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
  fs::remove_all(dir);
}

}  // namespace
