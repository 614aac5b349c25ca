// A `real` run (one process per stage over Gloo on 127.0.0.1) and the `single` run of the same
// experiment produce the same weights: each stage's action sequence fixes its numerics.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>

#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/store/run_store.h"
#include "tests/app/app_test_support.h"

namespace fs = std::filesystem;
extern char** environ;

namespace {

int runCmd(const std::string& cmd, std::string* out = nullptr) {
  auto r = pm::test::runCmd(cmd);
  if (out) *out = r.out;
  return r.code;
}

// A fresh directory per test, removed afterwards.
class RealMode : public ::testing::TestWithParam<std::tuple<std::string, int, std::string>> {
 protected:
  pm::test::TempDir tmp_;
  const fs::path dir_ = tmp_.dir;
};

std::vector<torch::Tensor> load(const fs::path& file) {
  std::vector<torch::Tensor> t;
  torch::load(t, file.string());
  return t;
}

// A microbatch's forward at stage s starts after it ended at stage s-1, within `tolerance` seconds.
void expectForwardsInPipelineOrder(const std::vector<pm::TraceRecord>& trace, double tolerance) {
  std::map<std::pair<int, int>, std::pair<double, double>> forward;  // (stage, microbatch) -> first F
  for (const auto& t : trace)
    if (t.action == "F") forward.emplace(std::make_pair(t.stage, t.microbatch), std::make_pair(t.start, t.end));
  int checked = 0;
  for (const auto& [key, times] : forward) {
    const auto before = forward.find({key.first - 1, key.second});
    if (key.first == 0 || before == forward.end()) continue;
    EXPECT_GE(times.first, before->second.second - tolerance) << "microbatch " << key.second << ": forward at stage "
                                                              << key.first << " starts before it ended at stage " << key.first - 1;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace

TEST_P(RealMode, SameWeightsAsSingleProcess) {
  const auto [schedule, P, extra] = GetParam();
  const std::string bin = pm::test::binPath("pipemare");
  const std::string exp = pm::test::experimentPath("tiny-synthetic.json");
  const std::string db = (dir_ / "runs.db").string();
  const std::string common = " --db " + db + " --quiet --set model.name=cnn --set pipeline.stages=" + std::to_string(P) +
                             " --set pipeline.microbatches=4 --set pipeline.schedule=" + schedule +
                             " --set training.steps=5 --set execution.timeout_s=30" + extra;
  std::string out;
  ASSERT_EQ(runCmd(bin + " run " + exp + common + " --set execution.mode=single --save-state " + (dir_ / "single").string(), &out), 0) << out;
  ASSERT_EQ(runCmd(bin + " run " + exp + common + " --set execution.mode=real --save-state " + (dir_ / "real").string(), &out), 0) << out;
  for (int s = 0; s < P; ++s) {
    const std::string f = "stage" + std::to_string(s) + ".pt";
    auto a = load(dir_ / "single" / f), b = load(dir_ / "real" / f);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(torch::equal(a[i], b[i])) << "stage " << s << " tensor " << i << " max diff "
                                            << (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>();
  }
  pm::RunStore store(db);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) EXPECT_EQ(r.status, pm::RunStatus::Finished) << r.status_message;
  // The real run recorded per-stage metrics of every rank and the last stage's loss curve.
  const int64_t real = runs[0].id;  // newest first
  std::set<int> stages;
  for (const auto& p : store.loadStageMetric(real, "utilization")) stages.insert(p.stage);
  EXPECT_EQ(static_cast<int>(stages.size()), P);
  EXPECT_FALSE(store.loadMetric(real, "train/loss").empty());
  const auto trace = store.loadTrace(real);
  EXPECT_FALSE(trace.empty());
  // The stages' traces share one clock (were each process timed from its own start, ~3 ms apart,
  // many forwards would start "before" the previous stage ended them).
  expectForwardsInPipelineOrder(trace, 0.0);
}

// The stages of a multi-machine run align their traces through the wall clock: forced here on one
// machine, the forwards still come in pipeline order.
TEST(RealModeTraceClock, WallClockPathKeepsThePipelineOrder) {
  const pm::test::TempDir tmp;
  const std::string db = tmp.file("runs.db");
  std::string out;
  ASSERT_EQ(runCmd("PIPEMARE_TRACE_CLOCK=wall " + pm::test::binPath("pipemare") + " run " +
                       pm::test::experimentPath("tiny-synthetic.json") + " --db " + db +
                       " --quiet --set model.name=cnn --set pipeline.stages=2 --set pipeline.microbatches=4"
                       " --set training.steps=4 --set execution.mode=real --set execution.timeout_s=30",
                   &out),
            0)
      << out;
  // The wall and monotonic clocks are read at slightly different instants (a busy machine may
  // preempt in between): allow 2 ms; a wrong offset is off by the run's whole start-up.
  expectForwardsInPipelineOrder(pm::RunStore(db).loadTrace(1), 2e-3);
}

INSTANTIATE_TEST_SUITE_P(
    EverySchedule, RealMode,
    ::testing::Values(std::make_tuple(std::string("gpipe"), 2, std::string()),
                      std::make_tuple(std::string("gpipe"), 3, std::string(" --set pipeline.recompute=true")),
                      std::make_tuple(std::string("1f1b"), 2, std::string()), std::make_tuple(std::string("1f1b"), 3, std::string()),
                      std::make_tuple(std::string("zb-h1"), 2, std::string()),
                      std::make_tuple(std::string("zb-h1"), 3, std::string(" --set pipeline.recompute=true")),
                      std::make_tuple(std::string("pipedream"), 2, std::string()),
                      std::make_tuple(std::string("pipedream"), 3, std::string()),
                      std::make_tuple(std::string("pipedream-2bw"), 2, std::string(" --set pipeline.update_interval=2")),
                      std::make_tuple(std::string("pipedream-2bw"), 3, std::string(" --set pipeline.update_interval=3")),
                      std::make_tuple(std::string("pipemare"), 2, std::string(" --set pipemare.t1=true --set pipemare.t2=true")),
                      std::make_tuple(std::string("pipemare"), 3,
                                      std::string(" --set pipemare.t1=true --set pipemare.t2=true --set pipemare.warmup_epochs=0.1")),
                      std::make_tuple(std::string("pipemare"), 3, std::string(" --set pipemare.t2=true --set pipeline.timing=paper")),
                      std::make_tuple(std::string("pipedream"), 3, std::string(" --set pipeline.timing=paper"))));

// Several model chunks per rank: interleaved 1F1B (v = 2, a loop) and ZB-V (a V) on 2 ranks cut
// cnn into 4 stages, the partition 1f1b has with 4 stages; they compute 1f1b's update, so every
// stage ends with the weights of 1f1b's, bit for bit, in single and in real mode (2 processes, a
// chunk pair per link, ZB-V's turn at rank 1 handed over in process). The store records each
// stage's rank, and the stages report theirs.
TEST(ChunkedRealMode, InterleavedAndZbVTrainOneFOneBsWeightsOnTwoRanks) {
  const pm::test::TempDir tmp;
  const fs::path& dir = tmp.dir;
  const std::string bin = pm::test::binPath("pipemare");
  const std::string exp = pm::test::experimentPath("tiny-synthetic.json");
  const std::string db = (dir / "runs.db").string();
  const std::string common = " --db " + db + " --quiet --set model.name=cnn --set pipeline.microbatches=4 --set training.steps=5 --set training.log_interval=1"
                             " --set execution.timeout_s=30";
  std::string out;
  ASSERT_EQ(runCmd(bin + " run " + exp + common + " --set pipeline.stages=4 --set pipeline.schedule=1f1b --save-state " +
                       (dir / "1f1b").string(), &out), 0) << out;
  const std::map<std::string, std::vector<int>> ranksOf{{"interleaved-1f1b", {0, 1, 0, 1}}, {"zb-v", {0, 1, 1, 0}}};
  for (const auto& [schedule, ranks] : ranksOf)
    for (const std::string mode : {"single", "real"}) {
      const fs::path saved = dir / (schedule + "-" + mode);
      ASSERT_EQ(runCmd(bin + " run " + exp + common + " --set pipeline.stages=2 --set pipeline.schedule=" + schedule +
                           " --set execution.mode=" + mode + " --save-state " + saved.string(), &out), 0) << schedule << " " << mode << "\n" << out;
      for (int s = 0; s < 4; ++s) {
        const std::string f = "stage" + std::to_string(s) + ".pt";
        auto a = load(dir / "1f1b" / f), b = load(saved / f);
        ASSERT_EQ(a.size(), b.size()) << schedule << " " << mode << " stage " << s;
        ASSERT_FALSE(a.empty());
        for (size_t i = 0; i < a.size(); ++i)
          EXPECT_TRUE(torch::equal(a[i], b[i])) << schedule << " " << mode << " stage " << s << " tensor " << i << " max diff "
                                                << (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>();
      }
    }
  pm::RunStore store(db);
  for (const auto& r : store.listRuns()) {
    EXPECT_EQ(r.status, pm::RunStatus::Finished) << r.status_message;
    ASSERT_EQ(r.partition.size(), 4u) << r.name;
    const auto it = ranksOf.find(r.schedule);
    EXPECT_EQ(r.stage_ranks, it == ranksOf.end() ? std::vector<int>({0, 1, 2, 3}) : it->second) << r.schedule;
    // Every stage measured (its own utilization rows), the loss reported by the last.
    std::set<int> stages;
    for (const auto& p : store.loadStageMetric(r.id, "utilization")) stages.insert(p.stage);
    EXPECT_EQ(stages.size(), 4u) << r.schedule;
    EXPECT_EQ(store.loadMetric(r.id, "train/loss").size(), 5u) << r.schedule;
  }
}

// NCCL's message layout run on Gloo (PIPEMARE_PAYLOAD_GROUPS=1): headers on a group of their own,
// sent once per channel and microbatch size, payloads alone after that on a group per direction.
// Minibatches of 30 in 4 microbatches (8, 8, 7, 7) and the epoch's last minibatch of 20 (5 each)
// give each channel three keys, and the epoch's evaluation sends unkeyed messages between them:
// every schedule, chunked ones too, ends with the single-process run's weights, bit for bit.
TEST(RealModeDeviceLayout, KeyedMessagesOfUnevenMicrobatchesTrainTheSingleRunsWeights) {
  const pm::test::TempDir tmp;
  const fs::path& dir = tmp.dir;
  const std::string bin = pm::test::binPath("pipemare");
  const std::string exp = pm::test::experimentPath("tiny-synthetic.json");
  const std::string db = (dir / "runs.db").string();
  const std::string common = " --db " + db + " --quiet --set model.name=cnn --set data.synthetic_samples=500 --set data.batch_size=30"
                             " --set pipeline.microbatches=4 --set training.steps=19 --set execution.timeout_s=30";
  const std::vector<std::pair<std::string, int>> designs{{"1f1b", 3}, {"zb-h1", 3}, {"pipedream", 3}, {"pipemare", 3}, {"zb-v", 2},
                                                         {"interleaved-1f1b", 2}};
  std::string out;
  for (const auto& [schedule, P] : designs) {
    const std::string design = common + " --set pipeline.schedule=" + schedule + " --set pipeline.stages=" + std::to_string(P);
    const fs::path single = dir / (schedule + "-single"), real = dir / (schedule + "-real");
    ASSERT_EQ(runCmd(bin + " run " + exp + design + " --save-state " + single.string(), &out), 0) << schedule << "\n" << out;
    ASSERT_EQ(runCmd("PIPEMARE_PAYLOAD_GROUPS=1 " + bin + " run " + exp + design + " --set execution.mode=real --save-state " + real.string(),
                     &out),
              0)
        << schedule << "\n" << out;
    const int stages = schedule == "zb-v" || schedule == "interleaved-1f1b" ? 2 * P : P;
    for (int s = 0; s < stages; ++s) {
      const std::string f = "stage" + std::to_string(s) + ".pt";
      auto a = load(single / f), b = load(real / f);
      ASSERT_EQ(a.size(), b.size()) << schedule << " stage " << s;
      ASSERT_FALSE(a.empty());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << schedule << " stage " << s << " tensor " << i;
    }
  }
  pm::RunStore store(db);
  const auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 2 * designs.size());
  for (const auto& r : runs) {
    EXPECT_EQ(r.status, pm::RunStatus::Finished) << r.schedule << ": " << r.status_message;
    EXPECT_FALSE(store.loadMetric(r.id, "eval/accuracy").empty()) << r.schedule << " evaluated no epoch";
  }
}

// A worker that dies ends the run within seconds: status failed, naming the stage and signal,
// and what was recorded until then stays.
TEST(RealModeFailure, KilledWorkerFailsTheRunWithoutHanging) {
  const pm::test::TempDir tmp;
  const fs::path& dir = tmp.dir;
  const std::string bin = pm::test::binPath("pipemare");
  const std::string exp = pm::test::experimentPath("tiny-synthetic.json");
  const std::string db = (dir / "runs.db").string();
  const pid_t launcher = pm::test::spawnBackground({bin, "run", exp, "--db", db, "--quiet", "--set", "model.name=cnn",
                                                    "--set", "pipeline.stages=2", "--set", "pipeline.microbatches=4",
                                                    "--set", "execution.mode=real", "--set", "training.steps=100000",
                                                    "--set", "training.log_interval=1", "--set", "execution.timeout_s=30"},
                                                   "/dev/null");
  ASSERT_GT(launcher, 0);

  // Wait until some losses are recorded, then kill -9 the launcher's stage-1 worker.
  const bool recorded = pm::test::waitUntil([&] {
    try {
      pm::RunStore store(db);
      auto runs = store.listRuns();
      return !runs.empty() && store.loadMetric(runs[0].id, "train/loss").size() >= 2;
    } catch (const std::exception&) {
      return false;
    }
  }, 60);
  ASSERT_TRUE(recorded) << "no losses recorded within 60 s";
  std::string o;
  runCmd("pgrep -P " + std::to_string(launcher) + " -f -- '[-]-rank 1 '", &o);
  ASSERT_FALSE(o.empty()) << "stage-1 worker not found";
  const pid_t worker = static_cast<pid_t>(std::stol(o));
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  int st = 0;
  waitpid(launcher, &st, 0);
  const double afterKill = std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
  EXPECT_LT(afterKill, 10.0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << st;
  // No worker of this launcher is left behind.
  runCmd("pgrep -f -- '" + dir.string() + "'", &o);
  pm::RunStore store(db);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Failed);
  EXPECT_NE(runs[0].status_message.find("stage 1"), std::string::npos) << runs[0].status_message;
  EXPECT_NE(runs[0].status_message.find("SIGKILL"), std::string::npos) << runs[0].status_message;
  EXPECT_GE(store.loadMetric(runs[0].id, "train/loss").size(), 2u);  // what was recorded stays
  EXPECT_NE(::kill(worker, 0), 0);  // the worker is gone
}
