// Soak (issue 9): 10,000 steps of `mlp` as a real two-process pipeline. The resident memory of
// every process (the launcher, which records, and both workers) is sampled from /proc during the
// run; after warm-up (the first 10 % of the run) it must stay flat, and the recorded metrics must
// be complete. PIPEMARE_SOAK_STEPS overrides the step count.
//
// "Flat" is judged on the trend, not on one sample: the median RSS of the last fifth of the
// post-warm-up samples against the median of the first fifth, extrapolated to the whole post-warm-up
// span, must grow by less than 5 %. A leak grows steadily, so it moves the late median; a one-off
// spike (an allocator arena mapped in for a moment: a +5.05 % peak in one worker against +0.07 % in
// the other) moves neither. The judgement itself is tested below on synthetic series.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

#include "core/store/run_store.h"
#include "tests/app/app_test_support.h"

using namespace pm::test;
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

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Growth {
  double base = 0;   // median of the first fifth after warm-up
  double late = 0;   // median of the last fifth
  double peak = 0;   // largest sample after warm-up (printed, not judged)
  // The two windows' centres are 4/5 of the post-warm-up span apart: extrapolate to the span.
  double growth() const { return (late - base) / base / 0.8; }
};

// RSS samples -> trend after warm-up (the first 10 % of the samples). Needs >= 10 samples.
Growth judge(const std::vector<double>& rss) {
  const size_t warm = rss.size() / 10;
  const std::vector<double> after(rss.begin() + static_cast<long>(warm), rss.end());
  const size_t fifth = std::max<size_t>(1, after.size() / 5);
  Growth g;
  g.base = median({after.begin(), after.begin() + static_cast<long>(fifth)});
  g.late = median({after.end() - static_cast<long>(fifth), after.end()});
  g.peak = *std::max_element(after.begin(), after.end());
  return g;
}

}  // namespace

// The judgement: a steady leak of 6 % over the post-warm-up span fails it, a flat series with a spike, an early
// step inside warm-up, or noise does not; a late step of 6 % (a leak that begins mid-run) fails.
TEST(SoakJudge, FlagsSteadyGrowthButNotASpike) {
  const double mb = 180e6;
  std::vector<double> flat(200, mb), leak, spike(200, mb), warmupStep, lateStep, noisy;
  for (int i = 0; i < 200; ++i) {
    leak.push_back(mb * (1.0 + 0.06 * std::max(0, i - 20) / 179.0));
    warmupStep.push_back(i < 15 ? mb * 0.8 : mb);
    lateStep.push_back(i < 120 ? mb : mb * 1.06);
    noisy.push_back(mb * (1.0 + 0.01 * ((i * 7919) % 13 - 6) / 6.0));
  }
  spike[100] = mb * 1.2;
  spike[101] = mb * 1.2;
  EXPECT_LT(judge(flat).growth(), 1e-12);
  EXPECT_LT(judge(spike).growth(), 1e-12);
  EXPECT_NEAR(judge(spike).peak, mb * 1.2, 1);
  EXPECT_LT(judge(warmupStep).growth(), 1e-12);
  EXPECT_LT(std::abs(judge(noisy).growth()), 0.02);
  EXPECT_GT(judge(leak).growth(), 0.05);
  EXPECT_GT(judge(lateStep).growth(), 0.05);
}

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

  // Flat after warm-up (see judge()).
  ASSERT_EQ(samples.size(), 3u) << "expected the launcher and two workers";
  for (const auto& [who, rss] : samples) {
    ASSERT_GE(rss.size(), 10u) << who << ": too few samples (run too short to judge)";
    const Growth g = judge(rss);
    std::printf("[soak] %-14s %zu samples, RSS after warm-up %.1f MB, at the end %.1f MB (peak %.1f MB), growth %+.2f %%\n",
                who.c_str(), rss.size(), g.base / 1e6, g.late / 1e6, g.peak / 1e6, 100 * g.growth());
    EXPECT_LT(g.growth(), 0.05) << who;
  }

  // Complete metrics: every logged step's loss, and each stage's per-step figures.
  pm::RunStore store(db_, /*readOnly=*/true);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Finished);
  EXPECT_EQ(store.loadMetric(runs[0].id, "train/loss").size(), static_cast<size_t>(steps / logInterval));
  const auto rss = store.loadStageMetric(runs[0].id, "rss");
  EXPECT_EQ(rss.size(), 2u * static_cast<size_t>(steps / logInterval));
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
}
