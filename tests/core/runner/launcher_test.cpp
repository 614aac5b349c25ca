#include "core/runner/launcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "core/events/event_sink.h"
#include "core/runner/worker_processes.h"
#include "tests/support/test_support.h"

namespace {

// A Ctrl-C that reaches the workers while they are still loading ends them at once (their own
// handlers are not set yet): the run is a stop, not a failure (the killed workers) and not a
// finished run, also when every worker is gone before the launcher's loop acts on the stop. That
// ordering depends on timing and is not forced here: the workers end by SIGINT at once and the
// stop is asked from the start.
// A real-mode launch of a two-stage mlp whose workers are the script `worker`.
pm::LaunchRequest twoStageRequest(const std::string& name, const std::string& worker) {
  pm::LaunchRequest req;
  req.experiment.name = name;
  req.experiment.model.name = "mlp";
  req.experiment.pipeline.stages = 2;
  req.experiment.pipeline.partition.method = pm::PartitionMethod::Explicit;
  req.experiment.pipeline.partition.boundaries = {1};
  req.experiment.execution.mode = pm::ExecutionMode::Real;
  req.experiment.execution.timeout_s = 10;
  req.workerBinary = worker;
  return req;
}

TEST(Launcher, WorkersEndedByCtrlCDuringStartUpMakeAStop) {
  pm::test::TempDir tmp;
  const std::string fake = tmp.file("fake-pipemare");
  std::ofstream(fake) << "#!/bin/sh\nkill -INT $$\n";
  ::chmod(fake.c_str(), 0755);
  pm::LaunchRequest req = twoStageRequest("ctrl-c", fake);
  std::atomic<bool> stop{true};
  pm::MemorySink sink;
  const pm::RunOutcome out = pm::launchWorkers(req, sink, &stop);
  EXPECT_EQ(out.status, pm::RunStatus::Stopped) << out.message;
  EXPECT_NE(out.message.find("stopped by request"), std::string::npos) << out.message;
}

// Stages that halted together at a stop report the step in their stage_finished events'
// `halt_step`: the run's outcome carries it as data, with the stages' message for people.
TEST(Launcher, StagesHaltStepIsTheOutcomesHaltStep) {
  pm::test::TempDir tmp;
  const std::string fake = tmp.file("fake-pipemare");
  std::ofstream(fake) << "#!/bin/sh\n"
                         "echo '{\"v\":1,\"type\":\"stage_finished\",\"t\":0,\"stage\":0,\"rank\":0,\"status\":\"stopped\","
                         "\"message\":\"stopped by request after step 7 (checkpoint written: resume with pipemare run --resume)\","
                         "\"halt_step\":7}'\n"
                         "exit 130\n";
  ::chmod(fake.c_str(), 0755);
  pm::LaunchRequest req = twoStageRequest("halted", fake);
  pm::MemorySink sink;
  const pm::RunOutcome out = pm::launchWorkers(req, sink, nullptr);
  EXPECT_EQ(out.status, pm::RunStatus::Stopped) << out.message;
  EXPECT_EQ(out.haltStep, 7) << out.message;
  EXPECT_NE(out.message.find("after step 7 (checkpoint written"), std::string::npos) << out.message;
}

}  // namespace

// What a launcher killed with -9 leaves in /tmp (its experiment file and the ranks' store folder,
// named with its pid) is removed by the next launcher; files of a launcher still running, names
// without a pid, and links are left alone. The names of a new run's files carry its pid.
TEST(Launcher, TheNextLauncherRemovesWhatAKilledOneLeft) {
  const pm::test::TempDir tmp;
  const std::string dead = std::to_string(pm::test::deadPid());
  const std::string alive = std::to_string(::getpid());
  const auto dir = tmp.dir;
  std::ofstream(dir / ("pipemare-exp-" + dead + "-a1b2c3")) << "{}";
  std::filesystem::create_directories(dir / ("pipemare-store-" + dead + "-d4e5f6"));
  std::ofstream(dir / ("pipemare-store-" + dead + "-d4e5f6") / "store") << "x";
  std::ofstream(dir / ("pipemare-exp-" + alive + "-g7h8i9")) << "{}";
  std::ofstream(dir / "pipemare-exp-XyZ123") << "{}";  // an older name, without a pid
  std::filesystem::create_symlink(dir / "pipemare-exp-XyZ123", dir / ("pipemare-exp-" + dead + "-link00"));
  EXPECT_EQ(pm::removeLeftWorkerFiles(dir.string()), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / ("pipemare-exp-" + dead + "-a1b2c3")));
  EXPECT_FALSE(std::filesystem::exists(dir / ("pipemare-store-" + dead + "-d4e5f6")));
  EXPECT_TRUE(std::filesystem::exists(dir / ("pipemare-exp-" + alive + "-g7h8i9")));
  EXPECT_TRUE(std::filesystem::exists(dir / "pipemare-exp-XyZ123"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir / ("pipemare-exp-" + dead + "-link00")));

  pm::Experiment e;
  pm::WorkerFiles files(e, /*fileStore=*/true);
  EXPECT_NE(files.configPath().find("/tmp/pipemare-exp-" + alive + "-"), std::string::npos) << files.configPath();
  EXPECT_NE(files.storeDir().find("/tmp/pipemare-store-" + alive + "-"), std::string::npos) << files.storeDir();
}
