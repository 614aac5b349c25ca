// Soak (issue 9): 10,000 steps of `mlp` as a real two-process pipeline. The resident memory of
// every process (the launcher, which records, and both workers) is sampled from /proc during the
// run; after warm-up (the first 10 % of the run) it must stay flat (growth < 5 %), and the
// recorded metrics must be complete. PIPEMARE_SOAK_STEPS overrides the step count.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/store/run_store.h"
#include "tests/app/app_test_support.h"

using namespace pmtest;
using Soak = AppTest;

namespace {

// Resident set size in bytes from /proc/<pid>/status (0 when the process is gone).
double rssBytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      double kb = 0;
      f >> kb;
      return kb * 1024;
    }
    std::string rest;
    std::getline(f, rest);
  }
  return 0;
}

}  // namespace

TEST_F(Soak, TenThousandStepsOfATwoStagePipelineKeepMemoryFlat) {
  const char* env = std::getenv("PIPEMARE_SOAK_STEPS");
  const int steps = env && std::atoi(env) > 0 ? std::atoi(env) : 10000;
  const int logInterval = 10;
  const std::string log = (dir_ / "soak.log").string();
  const pid_t launcher = spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--name", "soak",
                                          "--set", "pipeline.stages=2", "--set", "pipeline.microbatches=2",
                                          "--set", "execution.mode=real", "--set", "training.steps=" + std::to_string(steps),
                                          "--set", "training.log_interval=" + std::to_string(logInterval)},
                                         log);
  ASSERT_GT(launcher, 0);
  // Sample every process's RSS twice a second until the launcher exits.
  std::map<std::string, std::vector<double>> samples;  // "launcher", "worker <pid>"
  int status = -1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(20);
  for (;;) {
    int st = 0;
    if (waitpid(launcher, &st, WNOHANG) == launcher) {
      status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "soak run did not finish within 20 minutes";
    if (double r = rssBytes(launcher); r > 0) samples["launcher"].push_back(r);
    auto kids = runCmd("pgrep -P " + std::to_string(launcher));
    std::istringstream in(kids.out);
    for (long p; in >> p;)
      if (double r = rssBytes(static_cast<pid_t>(p)); r > 0) samples["worker " + std::to_string(p)].push_back(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_EQ(status, 0) << readFile(log);

  // Flat after warm-up: the largest RSS after the first 10 % of samples, against the RSS at the
  // end of warm-up.
  ASSERT_EQ(samples.size(), 3u) << "expected the launcher and two workers";
  for (const auto& [who, rss] : samples) {
    ASSERT_GE(rss.size(), 10u) << who << ": too few samples (run too short to judge)";
    const size_t warm = rss.size() / 10;
    const double base = rss[warm];
    const double peak = *std::max_element(rss.begin() + static_cast<long>(warm), rss.end());
    const double growth = (peak - base) / base;
    std::printf("[soak] %-14s %zu samples, RSS after warm-up %.1f MB, peak %.1f MB, growth %+.2f %%\n", who.c_str(),
                rss.size(), base / 1e6, peak / 1e6, 100 * growth);
    EXPECT_LT(growth, 0.05) << who;
  }

  // Complete metrics: every logged step's loss, and each stage's per-step figures.
  pm::RunStore store(db_, /*readOnly=*/true);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "finished");
  EXPECT_EQ(store.loadMetric(runs[0].id, "train/loss").size(), static_cast<size_t>(steps / logInterval));
  const auto rss = store.loadStageMetric(runs[0].id, "rss");
  EXPECT_EQ(rss.size(), 2u * static_cast<size_t>(steps / logInterval));
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
}
