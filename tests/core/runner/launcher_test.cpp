#include "core/runner/launcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "core/events/event_sink.h"

namespace fs = std::filesystem;

namespace {

// A Ctrl-C that reaches the workers while they are still loading ends them at once (their own
// handlers are not set yet): the run is a stop, not a failure (the killed workers) and not a
// finished run. (When every worker was gone before the launcher's loop acted on the stop, it read
// as finished; that ordering depends on timing and is not forced here: the workers end by SIGINT
// at once and the stop is asked from the start.)
TEST(Launcher, WorkersEndedByCtrlCDuringStartUpMakeAStop) {
  const fs::path dir = fs::temp_directory_path() / ("pm_launcher_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fake = (dir / "fake-pipemare").string();
  std::ofstream(fake) << "#!/bin/sh\nkill -INT $$\n";
  ::chmod(fake.c_str(), 0755);
  pm::LaunchRequest req;
  req.experiment.name = "ctrl-c";
  req.experiment.model.name = "mlp";
  req.experiment.pipeline.stages = 2;
  req.experiment.pipeline.partition.method = "explicit";
  req.experiment.pipeline.partition.boundaries = {1};
  req.experiment.execution.mode = "real";
  req.experiment.execution.timeout_s = 10;
  req.workerBinary = fake;
  std::atomic<bool> stop{true};
  pm::MemorySink sink;
  const pm::RunOutcome out = pm::launchWorkers(req, sink, &stop);
  EXPECT_EQ(out.status, "stopped") << out.message;
  EXPECT_NE(out.message.find("stopped by request"), std::string::npos) << out.message;
  fs::remove_all(dir);
}

}  // namespace
