// The run lifecycle through the real executables: sweeps, stop (SIGINT) and resume, divergence,
// concurrent runs into one database, a launcher killed with -9.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "core/store/run_checkpoints.h"
#include "core/store/run_store.h"
#include "core/util/system_info.h"
#include "tests/app/app_test_support.h"

using namespace pm::test;
using Lifecycle = AppTest;

namespace {

// A single-mode experiment long enough to be interrupted (a few seconds), asynchronous
// with every PipeMare state (T1, T2, in-flight microbatches crossing the checkpoint).
std::vector<std::string> longRunArgs(const std::string& db) {
  return {AppTest::bin(), "run", AppTest::exp("tiny-synthetic.json"), "--db", db, "--quiet",
          "--set", "model.name=cnn", "--set", "training.steps=80", "--set", "training.log_interval=1", "--set", "pipeline.stages=3",
          "--set", "pipeline.microbatches=4", "--set", "pipeline.schedule=pipemare", "--set", "pipemare.t1=true",
          "--set", "pipemare.t2=true", "--set", "training.trace_steps=0"};
}

}  // namespace

TEST_F(Lifecycle, SweepRunsEveryGridPointTaggedWithTheSweep) {
  auto r = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --set training.steps=6 --grid optimizer.lr=0.01,0.1 --grid pipeline.stages=1,2 --parallel 2");
  ASSERT_EQ(r.code, 0) << r.out;
  pm::RunStore store(db_);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 4u);
  std::set<std::string> points;
  for (const auto& run : runs) {
    EXPECT_EQ(run.status, pm::RunStatus::Finished);
    EXPECT_EQ(run.sweep_id, runs[0].sweep_id);
    std::string lr, stages;
    for (const auto& t : run.tags) {
      if (t.rfind("optimizer.lr=", 0) == 0) lr = t;
      if (t.rfind("pipeline.stages=", 0) == 0) stages = t;
    }
    points.insert(lr + " " + stages);
    EXPECT_EQ(run.stages, stages == "pipeline.stages=2" ? 2 : 1);
  }
  EXPECT_EQ(points, (std::set<std::string>{"optimizer.lr=0.01 pipeline.stages=1", "optimizer.lr=0.01 pipeline.stages=2",
                                           "optimizer.lr=0.1 pipeline.stages=1", "optimizer.lr=0.1 pipeline.stages=2"}));
  EXPECT_FALSE(runs[0].sweep_id.empty());
  auto list = runCmd(bin() + " --db " + db_ + " runs list --sweep " + runs[0].sweep_id);
  ASSERT_EQ(list.code, 0) << list.out;
  EXPECT_NE(list.out.find("final accuracy (rows optimizer.lr, columns pipeline.stages"), std::string::npos) << list.out;
  // A bad grid point is refused before anything runs.
  auto bad = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ + " --grid pipeline.stages=2,many");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("pipeline.stages=many"), std::string::npos) << bad.out;
  EXPECT_EQ(runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ + " --grid optimizer.lr").code, 2);
  // A --tag the format would refuse in the file is refused on the command line too.
  auto longTag = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ + " --grid optimizer.lr=0.1 --tag " +
                        std::string(65, 't'));
  EXPECT_EQ(longTag.code, 2) << longTag.out;
  EXPECT_NE(longTag.out.find("a tag has at most 64 characters"), std::string::npos) << longTag.out;
  EXPECT_EQ(runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --tag " + std::string(65, 't')).code, 2);
  // One number written two ways would run the same point twice.
  auto same = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ + " --grid optimizer.lr=0.1,1e-1");
  EXPECT_EQ(same.code, 2) << same.out;
  EXPECT_NE(same.out.find("the same number twice (\"0.1\" and \"1e-1\")"), std::string::npos) << same.out;
  EXPECT_EQ(store.listRuns().size(), 4u);
}

// Ctrl-C while some grid points have not started: the running point stops, the sweep exits 130
// and names the points it never started, rather than wait for them forever.
TEST_F(Lifecycle, SweepStoppedBeforeEveryPointStartedExits) {
  const std::string log = (dir_ / "sweep.log").string();
  const pid_t pid = spawnBackground({bin(), "sweep", exp("tiny-synthetic.json"), "--db", db_, "--set", "training.steps=100000",
                                     "--set", "training.log_interval=7", "--grid", "optimizer.lr=0.01,0.02,0.03", "--parallel", "1"},
                                    log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 2; }, 60)) << readFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitExit(pid, 60), 130) << readFile(log);
  EXPECT_NE(readFile(log).find("not started: optimizer.lr=0.02; optimizer.lr=0.03"), std::string::npos) << readFile(log);
  pm::RunStore store(db_);
  const auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Stopped);
  // The curve ends at the step the stop halted at (logged although not a multiple of the log
  // interval), so the stored final loss is the summary's.
  const std::string& message = runs[0].status_message;
  const int64_t haltStep = runs[0].halt_step;
  ASSERT_GT(haltStep, 0) << message;
  EXPECT_NE(message.find("after step " + std::to_string(haltStep) + " "), std::string::npos) << message;
  const auto loss = store.loadMetric(runs[0].id, "train/loss");
  ASSERT_FALSE(loss.empty());
  EXPECT_EQ(loss.back().step, haltStep) << message;
  nlohmann::json summary;
  for (const auto& l : store.loadLog(runs[0].id))
    if (l.message.rfind("summary ", 0) == 0) summary = nlohmann::json::parse(l.message.substr(8));
  ASSERT_TRUE(summary.contains("final_loss")) << summary.dump();
  EXPECT_DOUBLE_EQ(summary["final_loss"].get<double>(), runs[0].final_loss);
}

// A sweep stopped during its first point is continued by `sweep --resume ID`: the stopped point
// resumes from its checkpoint into the same record, the point never started runs; a second
// resume finds nothing to do. `runs list --sweep` shows the points not started meanwhile.
TEST_F(Lifecycle, StoppedSweepResumesWhereItStopped) {
  const std::string log = (dir_ / "sweep.log").string();
  const pid_t pid = spawnBackground({bin(), "sweep", exp("tiny-synthetic.json"), "--db", db_, "--set", "training.steps=1500",
                                     "--set", "training.log_interval=7", "--grid", "optimizer.lr=0.01,0.02"},
                                    log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 2; }, 60)) << readFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitExit(pid, 60), 130) << readFile(log);
  std::string sweepId;
  {
    pm::RunStore store(db_);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_EQ(runs[0].status, pm::RunStatus::Stopped) << "the point ended before the stop; make it longer";
    sweepId = runs[0].sweep_id;
  }
  EXPECT_NE(readFile(log).find("pipemare sweep --resume " + sweepId), std::string::npos) << readFile(log);
  auto list = runCmd(bin() + " --db " + db_ + " runs list --sweep " + sweepId);
  ASSERT_EQ(list.code, 0) << list.out;
  EXPECT_NE(list.out.find("1 run(s), 1 point(s) not started"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("not started"), std::string::npos) << list.out;

  // Usage errors: the grid is the sweep's own; an unknown sweep.
  EXPECT_EQ(runCmd(bin() + " sweep --resume " + sweepId + " --db " + db_ + " --grid optimizer.lr=1").code, 2);
  auto unknown = runCmd(bin() + " sweep --resume sweep-nope --db " + db_);
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("no sweep \"sweep-nope\""), std::string::npos) << unknown.out;

  auto resumed = runCmd(bin() + " sweep --resume " + sweepId + " --db " + db_);
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resumed run 1: optimizer.lr=0.01"), std::string::npos) << resumed.out;
  {
    pm::RunStore store(db_);
    auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 2u);
    for (const auto& r : runs) {
      EXPECT_EQ(r.status, pm::RunStatus::Finished) << r.name;
      EXPECT_EQ(r.sweep_id, sweepId);
    }
    // The resumed point's curve runs to the end, each step once.
    const auto loss = store.loadMetric(1, "train/loss");
    ASSERT_FALSE(loss.empty());
    EXPECT_EQ(loss.back().step, 1500);
    for (size_t i = 1; i < loss.size(); ++i) EXPECT_LT(loss[i - 1].step, loss[i].step);
    EXPECT_NE(std::find(store.getRun(2)->tags.begin(), store.getRun(2)->tags.end(), "optimizer.lr=0.02"), store.getRun(2)->tags.end());
  }
  auto again = runCmd(bin() + " sweep --resume " + sweepId + " --db " + db_);
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("nothing to resume"), std::string::npos) << again.out;
  EXPECT_EQ(pm::RunStore(db_).listRuns().size(), 2u);
}

// Checkpoints belong to one run of one store: a store made anew in the same place, whose run 1 is
// another run, cannot resume from the first store's run-1 checkpoint (it neither loads those
// weights nor deletes them); a second store beside it keeps its own checkpoint directory.
TEST_F(Lifecycle, ResumeUsesOnlyItsOwnRunsCheckpoints) {
  const std::string log = (dir_ / "run.log").string();
  const pid_t pid = spawnBackground(longRunArgs(db_), log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 3; }, 60)) << readFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitExit(pid, 30), 130) << readFile(log);
  const std::string root = pm::checkpointRoot(db_, 1);
  ASSERT_TRUE(std::filesystem::is_directory(root)) << root;
  const std::string other = (dir_ / "other.db").string();
  EXPECT_NE(pm::checkpointRoot(other, 1), root);
  std::string config;
  {
    pm::RunStore store(db_);
    config = store.getRun(1)->config_json;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_ + suffix);
  {
    pm::RunStore fresh(db_);
    ASSERT_EQ(fresh.createRun("another run 1", config), 1);
    fresh.setStatus(1, "stopped", "stopped");
  }
  auto r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("are not this run's"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_directory(root)) << "the other run's checkpoints are left alone";
  // Deleting the run deletes its checkpoint directory.
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " runs delete 1").code, 0);
  EXPECT_FALSE(std::filesystem::exists(root));
}

// A run stopped within its traced minibatches and resumed: the second session's trace continues
// the first one's times (restarting at 0 would overlap them).
TEST_F(Lifecycle, ResumedTraceContinuesTheFirstSessionsTimes) {
  const std::string log = (dir_ / "run.log").string();
  std::vector<std::string> args = longRunArgs(db_);
  args.back() = "training.trace_steps=-1";  // every minibatch traced
  const pid_t pid = spawnBackground(args, log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 3; }, 60)) << readFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitExit(pid, 30), 130) << readFile(log);
  auto r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  std::map<int, double> forwardStart;  // stage 0: microbatch -> start of its forward
  for (const auto& t : pm::RunStore(db_).loadTrace(1))
    if (t.stage == 0 && t.action == "F") forwardStart.emplace(t.microbatch, t.start);
  ASSERT_GT(forwardStart.size(), 8u);
  double previous = -1;
  for (const auto& [mb, start] : forwardStart) {
    EXPECT_GT(start, previous) << "microbatch " << mb << " starts before the one before it";
    previous = start;
  }
}

// A run killed some minibatches after a periodic checkpoint traces those minibatches again when it
// resumes: the store keeps one row per (stage, action, microbatch), not the killed session's too
// (overlapping rows would inflate the Timeline's counts and the planner's fitted costs).
TEST_F(Lifecycle, ResumeAfterACrashKeepsOneTraceRowPerAction) {
  const std::string log = (dir_ / "run.log").string();
  std::vector<std::string> args = longRunArgs(db_);
  args.back() = "training.trace_steps=-1";
  args.insert(args.end(), {"--set", "training.checkpoint_every=4"});
  const pid_t pid = spawnBackground(args, log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 7; }, 60)) << readFile(log);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  waitExit(pid, 10);
  const size_t killedRows = pm::RunStore(db_, true).loadTrace(1).size();
  auto r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  std::map<std::tuple<int, std::string, int64_t>, int> seen;
  const auto trace = pm::RunStore(db_, true).loadTrace(1);
  ASSERT_GT(trace.size(), killedRows);
  for (const auto& t : trace) ++seen[{t.stage, t.action, t.microbatch}];
  for (const auto& [key, n] : seen)
    EXPECT_EQ(n, 1) << "stage " << std::get<0>(key) << " " << std::get<1>(key) << " " << std::get<2>(key) << " recorded " << n << " times";
  // From the checkpoint it resumed on, every microbatch's forward and backward are there once
  // (80 minibatches of 4 microbatches). Rows before it may have been lost unflushed with the kill.
  const auto resumedRun = pm::RunStore(db_, true).getRun(1);
  ASSERT_TRUE(resumedRun);
  const int64_t resumedStep = resumedRun->resume_step;
  ASSERT_GT(resumedStep, 0);
  EXPECT_EQ(resumedStep % 4, 0) << "a periodic checkpoint (training.checkpoint_every=4)";
  EXPECT_EQ(resumedRun->halt_step, 0) << "killed, not stopped: no stop checkpoint";
  for (int s = 0; s < 3; ++s)
    for (int64_t mb = resumedStep * 4 + 8; mb < 320; ++mb) {
      EXPECT_EQ(seen.count({s, "F", mb}), 1u) << "stage " << s << " F " << mb;
      EXPECT_EQ(seen.count({s, "B", mb}), 1u) << "stage " << s << " B " << mb;
    }
}

// A diverged point is a result of the sweep (the stability map's D cells): the sweep exits 0.
TEST_F(Lifecycle, SweepWithADivergedPointSucceeds) {
  auto r = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --set training.steps=50 --set training.log_interval=1 --grid optimizer.lr=0.01,10");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 run(s) diverged"), std::string::npos) << r.out;
  pm::RunStore store(db_);
  std::multiset<std::string> statuses;
  for (const auto& run : store.listRuns()) statuses.insert(pm::toString(run.status));
  EXPECT_EQ(statuses, (std::multiset<std::string>{"diverged", "finished"}));
  // Each point's line says its run and how it ended as the child's events say (run id from its
  // log event, status and message from run_finished), never read from the child's own text.
  for (const auto& run : store.listRuns()) {
    const bool diverged = run.status == pm::RunStatus::Diverged;
    const std::string line = std::string(diverged ? "optimizer.lr=10: run " : "optimizer.lr=0.01: run ") + std::to_string(run.id) +
                             (diverged ? " diverged: " + run.status_message : std::string(" finished ("));
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
}

// SIGINT stops a run (status stopped, data kept, a checkpoint at the next minibatch boundary);
// --resume continues it into the same record; the final weights equal an uninterrupted run's.
TEST_F(Lifecycle, SigintThenResumeEqualsAnUninterruptedRun) {
  const std::string full = (dir_ / "full").string(), resumed = (dir_ / "resumed").string();
  const std::string dbFull = (dir_ / "full.db").string();
  auto args = longRunArgs(db_);
  args.push_back("--save-state");
  args.push_back(resumed);
  const pid_t pid = spawnBackground(args, (dir_ / "run.log").string());
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 3; }, 60)) << readFile((dir_ / "run.log").string());
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitExit(pid, 30), 130) << readFile((dir_ / "run.log").string());
  const double stoppedBy = pm::wallClockSeconds();
  int64_t haltStep = 0;
  double lastSeen = 0;
  {
    pm::RunStore store(db_);
    lastSeen = store.lastActivity(1);
    auto run = store.getRun(1);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, pm::RunStatus::Stopped);
    EXPECT_NE(run->status_message.find("checkpoint"), std::string::npos) << run->status_message;
    // The stop checkpoint's step and the partition are fields of the run.
    haltStep = run->halt_step;
    EXPECT_GT(haltStep, 0) << run->status_message;
    EXPECT_NE(run->status_message.find("after step " + std::to_string(haltStep) + " "), std::string::npos) << run->status_message;
    EXPECT_EQ(run->resume_step, 0);
    EXPECT_EQ(run->partition.size(), 3u);
    // The stored message names the run too (runs show, the Runs tab), not only the terminal's.
    EXPECT_NE(run->status_message.find("pipemare run --resume 1)"), std::string::npos) << run->status_message;
    EXPECT_NE(readFile((dir_ / "run.log").string()).find("pipemare run --resume 1)"), std::string::npos)
        << readFile((dir_ / "run.log").string());
    EXPECT_GE(store.loadMetric(1, "train/loss").size(), 3u);
    EXPECT_LT(store.loadMetric(1, "train/loss").size(), 80u) << "the run ended before it was interrupted";
  }
  // A finished run cannot be resumed; neither can one that does not exist.
  const double resumedFrom = pm::wallClockSeconds();
  auto r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet --save-state " + resumed);
  const double resumeDone = pm::wallClockSeconds();
  ASSERT_EQ(r.code, 0) << r.out;
  {
    // The pause between the sessions is recorded as data, at the step the session continued from:
    // at least the time between the stop's exit and the resume's start, at most from the first
    // session's last sign of life to the resume's end. Durations and time axes leave it out.
    pm::RunStore store(db_);
    const auto paused = store.loadMetric(1, "time/paused_s");
    ASSERT_EQ(paused.size(), 1u);
    EXPECT_EQ(paused[0].step, haltStep);
    EXPECT_GE(store.getRun(1)->paused_s, resumedFrom - stoppedBy);
    EXPECT_LE(store.getRun(1)->paused_s, resumeDone - lastSeen);
    EXPECT_GT(store.getRun(1)->paused_s, 0);
  }
  const auto again = runCmd(bin() + " run --resume 1 --db " + db_);
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.out.find("--resume 1: the run is finished"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("resume \""), std::string::npos) << "no banner before the refusal: " << again.out;
  EXPECT_EQ(runCmd(bin() + " run --resume 7 --db " + db_).code, 2);
  pm::RunStore store(db_);
  auto run = store.getRun(1);
  EXPECT_EQ(run->status, pm::RunStatus::Finished);
  EXPECT_EQ(run->resume_step, haltStep) << "the session continued from the stop checkpoint";
  EXPECT_EQ(run->halt_step, 0);
  // The resumed session's rate counts its own samples over its own time: the summary's samples_per_s
  // times wall_s is samples - resumed_samples.
  nlohmann::json summary;
  for (const auto& l : store.loadLog(1))
    if (l.message.rfind("summary ", 0) == 0) summary = nlohmann::json::parse(l.message.substr(8));
  ASSERT_TRUE(summary.contains("resumed_samples")) << summary.dump();
  const double sessionSamples = summary["samples"].get<double>() - summary["resumed_samples"].get<double>();
  EXPECT_GT(sessionSamples, 0);
  EXPECT_LT(sessionSamples, summary["samples"].get<double>());
  EXPECT_NEAR(summary["samples_per_s"].get<double>() * summary["wall_s"].get<double>(), sessionSamples, 1e-6 * sessionSamples);
  // The curve joins without a gap or a duplicate step.
  auto loss = store.loadMetric(1, "train/loss");
  ASSERT_EQ(loss.size(), 80u);
  for (size_t i = 0; i < loss.size(); ++i) ASSERT_EQ(loss[i].step, static_cast<int64_t>(i + 1));
  EXPECT_EQ(store.listRuns().size(), 1u);
  // The uninterrupted run, bit for bit.
  auto fullArgs = longRunArgs(dbFull);
  std::string cmd;
  for (const auto& a : fullArgs) cmd += a + " ";
  auto u = runCmd(cmd + "--save-state " + full);
  ASSERT_EQ(u.code, 0) << u.out;
  for (int s = 0; s < 3; ++s) {
    const std::string a = readFile(full + "/stage" + std::to_string(s) + ".pt");
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == readFile(resumed + "/stage" + std::to_string(s) + ".pt")) << "stage " << s << " weights differ";
  }
  EXPECT_EQ(pm::RunStore(dbFull).loadMetric(1, "train/loss").back().value, loss.back().value);
}

TEST_F(Lifecycle, DivergingRunEndsAsDivergedKeepingItsCurve) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --quiet --set optimizer.lr=10 --set training.log_interval=1 --set training.steps=50");
  EXPECT_EQ(r.code, 1) << r.out;
  pm::RunStore store(db_);
  auto run = store.getRun(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, pm::RunStatus::Diverged);
  EXPECT_NE(run->status_message.find("at step"), std::string::npos) << run->status_message;
  auto loss = store.loadMetric(1, "train/loss");
  ASSERT_FALSE(loss.empty());
  EXPECT_LT(loss.size(), 50u);
  EXPECT_EQ(run->status_message.find("at step " + std::to_string(loss.back().step)) != std::string::npos, true)
      << run->status_message;
}

// Four runs at once into one database (two of them real two-process runs): all complete and
// every row of each is present.
TEST_F(Lifecycle, FourConcurrentRunsIntoOneDatabase) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 4; ++i) {
    pids.push_back(spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--name",
                                    "concurrent-" + std::to_string(i), "--set", "training.steps=300", "--set",
                                    "training.log_interval=1", "--set", "pipeline.stages=2", "--set", "pipeline.microbatches=2",
                                    "--set", std::string("execution.mode=") + (i % 2 ? "real" : "single")},
                                   (dir_ / ("c" + std::to_string(i) + ".log")).string()));
    ASSERT_GT(pids.back(), 0);
  }
  for (size_t i = 0; i < pids.size(); ++i) EXPECT_EQ(waitExit(pids[i], 120), 0) << readFile((dir_ / ("c" + std::to_string(i) + ".log")).string());
  pm::RunStore store(db_);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 4u);
  for (const auto& run : runs) {
    EXPECT_EQ(run.status, pm::RunStatus::Finished) << run.name;
    EXPECT_EQ(store.loadMetric(run.id, "train/loss").size(), 300u) << run.name;
    EXPECT_EQ(store.loadStageMetric(run.id, "utilization").size(), 2u * 300u) << run.name;
  }
}

// kill -9 of the launcher of a real run: its workers end by themselves within 10 s, and the run
// is shown as interrupted the next time the store is opened.
TEST_F(Lifecycle, KilledLauncherLeavesWorkersGoneAndTheRunInterrupted) {
  const pid_t launcher = spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--set",
                                          "model.name=cnn", "--set", "pipeline.stages=2", "--set", "pipeline.microbatches=4",
                                          "--set", "execution.mode=real", "--set", "training.steps=100000", "--set",
                                          "training.log_interval=1", "--set", "execution.timeout_s=30"},
                                         (dir_ / "launcher.log").string());
  ASSERT_GT(launcher, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 2; }, 90)) << readFile((dir_ / "launcher.log").string());
  auto children = runCmd("pgrep -P " + std::to_string(launcher));
  std::vector<pid_t> workers;
  std::istringstream in(children.out);
  for (long p; in >> p;) workers.push_back(static_cast<pid_t>(p));
  ASSERT_EQ(workers.size(), 2u) << children.out;
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  EXPECT_EQ(waitExit(launcher, 10), 128 + SIGKILL);
  EXPECT_TRUE(waitUntil([&] {
    for (pid_t w : workers)
      if (processAlive(w)) return false;
    return true;
  }, 10)) << "workers still alive 10 s after the launcher died";
  auto list = runCmd(bin() + " --db " + db_ + " runs list --json");
  ASSERT_EQ(list.code, 0) << list.out;
  auto j = nlohmann::json::parse(list.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["status"], "interrupted");
  EXPECT_GE(lossPoints(db_, 1), 2u);
}

// Two launchers on 127.0.0.1 form one pipeline (node 0: stages 0-1, node 1: stage 2). Node 0
// records every stage's metrics, including the remote ones, and the weights equal single mode.
TEST_F(Lifecycle, TwoLaunchersFormOneMultiNodePipeline) {
  const int port = freePortPair();
  const std::vector<std::string> common{"--set", "model.name=cnn", "--set", "pipeline.stages=3", "--set",
                                        "pipeline.microbatches=4", "--set", "execution.mode=real", "--set",
                                        "training.steps=12", "--set", "pipeline.schedule=pipemare", "--set",
                                        "training.log_interval=1", "--quiet"};
  auto launcher = [&](int node, const std::string& db, const std::string& state) {
    std::vector<std::string> a{bin(), "run", exp("tiny-synthetic.json"), "--db", db, "--nnodes", "2", "--node-rank",
                               std::to_string(node), "--master-addr", "127.0.0.1", "--master-port", std::to_string(port),
                               "--save-state", state};
    a.insert(a.end(), common.begin(), common.end());
    if (node == 1)  // the same --set options in another order: the same experiment (the notes differ)
      for (size_t i = 0, j = common.size() - 3; i < j; i += 2, j -= 2) {
        std::swap(a[a.size() - common.size() + i], a[a.size() - common.size() + j]);
        std::swap(a[a.size() - common.size() + i + 1], a[a.size() - common.size() + j + 1]);
      }
    return spawnBackground(a, (dir_ / ("node" + std::to_string(node) + ".log")).string());
  };
  const std::string state = (dir_ / "multi").string(), remoteDb = (dir_ / "remote.db").string();
  const pid_t n1 = launcher(1, remoteDb, state);
  const pid_t n0 = launcher(0, db_, state);
  ASSERT_GT(n0, 0);
  ASSERT_GT(n1, 0);
  // A connection to node 0's event port that never says hello (a port scan, a health probe) is not
  // a node: the run goes on (no "node -1's launcher disconnected" failure).
  for (int i = 0; i < 50; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port + 1));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    ::close(fd);
    if (connected) break;
    ::usleep(100 * 1000);
  }
  EXPECT_EQ(waitExit(n0, 120), 0) << readFile((dir_ / "node0.log").string());
  EXPECT_EQ(waitExit(n1, 30), 0) << readFile((dir_ / "node1.log").string());
  pm::RunStore store(db_);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Finished) << runs[0].status_message;
  EXPECT_EQ(store.loadMetric(runs[0].id, "train/loss").size(), 12u);  // from stage 2, on node 1
  std::set<int> stages;
  for (const auto& p : store.loadStageMetric(runs[0].id, "utilization")) stages.insert(p.stage);
  EXPECT_EQ(stages, (std::set<int>{0, 1, 2}));
  EXPECT_FALSE(fs::exists(remoteDb));  // only node 0 records
  // The same pipeline in one process.
  std::string cmd = bin() + " run " + exp("tiny-synthetic.json") + " --db " + (dir_ / "single.db").string() +
                    " --save-state " + (dir_ / "single").string();
  for (const auto& c : common) cmd += " " + c;
  auto r = runCmd(cmd + " --set execution.mode=single");
  ASSERT_EQ(r.code, 0) << r.out;
  for (int s = 0; s < 3; ++s) {
    const std::string a = readFile(state + "/stage" + std::to_string(s) + ".pt");
    ASSERT_FALSE(a.empty()) << "stage " << s;
    EXPECT_TRUE(a == readFile((dir_ / "single" / ("stage" + std::to_string(s) + ".pt")).string())) << "stage " << s;
  }
  // Bad multi-node arguments are usage errors.
  EXPECT_EQ(runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --nnodes 2 --node-rank 2 --master-port 1").code, 2);
  EXPECT_EQ(runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --nnodes 2 --master-port 1").code, 2);
}

// Multi-node runs end the same way on every node: a node whose experiment differs is refused at
// once on both nodes, and told why (node 1 does not wait out the timeout and report a TCPStore
// error); Ctrl-C on node 1 stops the run everywhere (node 0 records a stop, not a failure).
TEST_F(Lifecycle, MultiNodeRunsEndTheSameWayOnEveryNode) {
  auto launcher = [&](int node, int port, const std::string& lr, const std::string& log) {
    std::vector<std::string> a{bin(), "run", exp("tiny-synthetic.json"), "--db", node == 0 ? db_ : (dir_ / "remote.db").string(),
                               "--nnodes", "2", "--node-rank", std::to_string(node), "--master-addr", "127.0.0.1",
                               "--master-port", std::to_string(port), "--quiet", "--set", "pipeline.stages=2", "--set",
                               "execution.mode=real", "--set", "execution.timeout_s=30", "--set", "training.steps=100000",
                               "--set", "training.log_interval=1", "--set", "optimizer.lr=" + lr};
    return spawnBackground(a, (dir_ / log).string());
  };
  {
    const int port = freePortPair();
    const pid_t n1 = launcher(1, port, "0.02", "mismatch1.log");
    const pid_t n0 = launcher(0, port, "0.01", "mismatch0.log");
    const double t0 = pm::monotonicSeconds();
    EXPECT_EQ(waitExit(n0, 60), 1) << readFile((dir_ / "mismatch0.log").string());
    EXPECT_EQ(waitExit(n1, 60), 1) << readFile((dir_ / "mismatch1.log").string());
    EXPECT_LT(pm::monotonicSeconds() - t0, 25.0) << "the mismatch waited for a timeout";
    EXPECT_NE(readFile((dir_ / "mismatch1.log").string()).find("node 0 refused this node: node 1 runs a different experiment"),
              std::string::npos)
        << readFile((dir_ / "mismatch1.log").string());
    pm::RunStore store(db_);
    ASSERT_EQ(store.listRuns().size(), 1u);
    EXPECT_NE(store.listRuns()[0].status_message.find("runs a different experiment"), std::string::npos);
  }
  {
    const int port = freePortPair();
    const pid_t n1 = launcher(1, port, "0.01", "stop1.log");
    const pid_t n0 = launcher(0, port, "0.01", "stop0.log");
    ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 2) >= 3; }, 60)) << readFile((dir_ / "stop0.log").string());
    ASSERT_EQ(::kill(n1, SIGINT), 0);
    EXPECT_EQ(waitExit(n1, 60), 130) << readFile((dir_ / "stop1.log").string());
    EXPECT_EQ(waitExit(n0, 60), 130) << readFile((dir_ / "stop0.log").string());
    const auto run = pm::RunStore(db_).getRun(2);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, pm::RunStatus::Stopped) << run->status_message;
  }
  // Node 1 never comes: node 0's failure says so (the workers' message alone is a Gloo timeout).
  auto alone = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --nnodes 2 --node-rank 0 --master-port " +
                      std::to_string(freePortPair()) + " --set pipeline.stages=2 --set execution.mode=real --set execution.timeout_s=3 --quiet");
  EXPECT_EQ(alone.code, 1) << alone.out;
  EXPECT_NE(alone.out.find("node 1 never joined"), std::string::npos) << alone.out;
}

// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) at any moment of a real
// run's start-up is a stop, never a failure, also when the workers forming their group die of it
// (not "failed: stage 1 was killed by signal 2").
TEST_F(Lifecycle, CtrlCDuringStartUpIsAStop) {
  for (const double delay : {0.3, 0.8, 1.3, 1.8}) {
    const std::string db = (dir_ / ("startup-" + std::to_string(delay) + ".db")).string();
    const std::string log = (dir_ / "startup.log").string();
    const pid_t pid = spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", db, "--quiet", "--set",
                                       "pipeline.stages=2", "--set", "execution.mode=real", "--set", "training.steps=3000"},
                                      log, /*ownGroup=*/true);
    ASSERT_GT(pid, 0);
    ::usleep(static_cast<useconds_t>(delay * 1e6));  // the moment of the Ctrl-C in the start-up
    ASSERT_EQ(::kill(-pid, SIGINT), 0);
    EXPECT_EQ(waitExit(pid, 60), 130) << "after " << delay << " s\n" << readFile(log);
    if (fs::exists(db)) {
      for (const auto& r : pm::RunStore(db).listRuns()) {
        EXPECT_EQ(r.status, pm::RunStatus::Stopped) << "after " << delay << " s: " << r.status_message;
      }
    }
  }
}

// Workers started by hand (srun, mpirun): bad RANK / WORLD_SIZE / MASTER_PORT values are usage
// errors at once ("RANK=abc" is not rank 0 timing out); SIGINT stops every stage after one
// common minibatch with a checkpoint, each worker exits 130 (not 0) and says which --resume-step
// continues; the workers started again with it finish.
TEST_F(Lifecycle, WorkersStartedByHandStopAndResume) {
  const std::string cfg = (dir_ / "p2.json").string();
  {
    auto e = nlohmann::json::parse(readFile(exp("tiny-synthetic.json")));
    e["pipeline"]["stages"] = 2;
    e["execution"]["mode"] = "real";
    e["training"]["steps"] = 400;
    e["training"]["log_interval"] = 1;
    std::ofstream(cfg) << e.dump(2);
  }
  for (const char* env : {"RANK=abc WORLD_SIZE=2", "RANK=1x WORLD_SIZE=2", "RANK=0 WORLD_SIZE=2.5", "RANK=0 WORLD_SIZE=2 MASTER_PORT=70000"}) {
    auto r = runCmd(std::string("env ") + env + " " + bin() + " worker --config " + cfg);
    EXPECT_EQ(r.code, 2) << env << "\n" << r.out;
    EXPECT_NE(r.out.find("expected a whole number"), std::string::npos) << env << "\n" << r.out;
  }
  {  // An unresolvable MASTER_ADDR names itself at once (rather than read as a rendezvous timeout).
    auto r = runCmd("env RANK=1 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid " + bin() + " worker --config " + cfg);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("MASTER_ADDR"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cannot resolve host \\\"no-such-host.invalid\\\""), std::string::npos) << r.out;
  }
  const std::string ckpt = (dir_ / "ckpt").string();
  const int port = freePortPair();
  auto worker = [&](int rank, const std::string& log, const std::vector<std::string>& extra) {
    std::vector<std::string> a{"/usr/bin/env", "RANK=" + std::to_string(rank), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                               "MASTER_PORT=" + std::to_string(port), bin(), "worker", "--config", cfg, "--checkpoint-dir", ckpt};
    a.insert(a.end(), extra.begin(), extra.end());
    return spawnBackground(a, (dir_ / log).string());
  };
  const pid_t w0 = worker(0, "w0.log", {}), w1 = worker(1, "w1.log", {});
  auto steps = [&](const std::string& log) {
    const std::string text = readFile((dir_ / log).string());
    size_t n = 0;
    for (size_t at = 0; (at = text.find("\"type\":\"step\"", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  ASSERT_TRUE(waitUntil([&] { return steps("w1.log") >= 3; }, 60)) << readFile((dir_ / "w1.log").string());
  ASSERT_EQ(::kill(w0, SIGINT), 0);
  ASSERT_EQ(::kill(w1, SIGINT), 0);
  EXPECT_EQ(waitExit(w0, 60), 130) << tailOfFile((dir_ / "w0.log").string());
  EXPECT_EQ(waitExit(w1, 60), 130) << tailOfFile((dir_ / "w1.log").string());
  const std::string log1 = readFile((dir_ / "w1.log").string());
  const size_t at = log1.find("--resume-step ");
  ASSERT_NE(at, std::string::npos) << log1;
  const std::string step = std::to_string(std::stoll(log1.substr(at + 14)));
  ASSERT_GT(std::stoll(step), 0);
  EXPECT_EQ(log1.find("pipemare run --resume"), std::string::npos) << "a hint for a launcher's run";
  // A step with no checkpoint: a usage error before anything connects.
  EXPECT_EQ(runCmd("env RANK=0 WORLD_SIZE=2 " + bin() + " worker --config " + cfg + " --checkpoint-dir " + ckpt + " --resume-step 99999").code, 2);
  const pid_t r0 = worker(0, "r0.log", {"--resume-step", step}), r1 = worker(1, "r1.log", {"--resume-step", step});
  EXPECT_EQ(waitExit(r0, 120), 0) << tailOfFile((dir_ / "r0.log").string());
  EXPECT_EQ(waitExit(r1, 120), 0) << tailOfFile((dir_ / "r1.log").string());
  EXPECT_NE(readFile((dir_ / "r1.log").string()).find("\"status\":\"finished\""), std::string::npos);
}

// A real run (one process per stage) stopped with SIGINT finishes the minibatch in progress on
// every stage, checkpoints there, and resumes (again as a real run) to the same weights as an
// uninterrupted single-process run; PipeDream's weight stash crosses the checkpoint.
TEST_F(Lifecycle, RealRunStoppedAndResumedEqualsSingleMode) {
  const std::vector<std::string> common{"--set", "model.name=cnn", "--set", "pipeline.stages=3", "--set",
                                        "pipeline.microbatches=4", "--set", "training.steps=60", "--set",
                                        "pipeline.schedule=pipedream", "--set", "pipeline.update_interval=2", "--set",
                                        "training.log_interval=1", "--quiet"};
  const std::string resumed = (dir_ / "resumed").string(), single = (dir_ / "single").string();
  std::vector<std::string> args{bin(), "run", exp("tiny-synthetic.json"), "--db", db_, "--save-state", resumed,
                                "--set", "execution.mode=real"};
  args.insert(args.end(), common.begin(), common.end());
  const pid_t pid = spawnBackground(args, (dir_ / "real.log").string());
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, 1) >= 3; }, 90)) << readFile((dir_ / "real.log").string());
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitExit(pid, 60), 130) << readFile((dir_ / "real.log").string());
  int64_t haltStep = 0;
  {
    pm::RunStore store(db_);
    auto run = store.getRun(1);
    EXPECT_EQ(run->status, pm::RunStatus::Stopped);
    EXPECT_NE(run->status_message.find("checkpoint"), std::string::npos) << run->status_message;
    // The stages' halt step reaches the run through their stage_finished events.
    haltStep = run->halt_step;
    EXPECT_GT(haltStep, 0) << run->status_message;
    EXPECT_NE(run->status_message.find("after step " + std::to_string(haltStep) + " "), std::string::npos) << run->status_message;
    EXPECT_EQ(run->partition.size(), 3u);
    // The stored message names the run too (runs show, the Runs tab), not only the terminal's.
    EXPECT_NE(run->status_message.find("pipemare run --resume 1)"), std::string::npos) << run->status_message;
  }
  auto r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet --save-state " + resumed);
  ASSERT_EQ(r.code, 0) << r.out;
  std::string cmd = bin() + " run " + exp("tiny-synthetic.json") + " --db " + (dir_ / "single.db").string() +
                    " --save-state " + single;
  for (const auto& c : common) cmd += " " + c;
  auto u = runCmd(cmd);
  ASSERT_EQ(u.code, 0) << u.out;
  pm::RunStore store(db_);
  EXPECT_EQ(store.getRun(1)->status, pm::RunStatus::Finished);
  EXPECT_EQ(store.getRun(1)->resume_step, haltStep);
  EXPECT_EQ(store.loadMetric(1, "train/loss").size(), 60u);
  for (int s = 0; s < 3; ++s) {
    const std::string a = readFile(single + "/stage" + std::to_string(s) + ".pt");
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == readFile(resumed + "/stage" + std::to_string(s) + ".pt")) << "stage " << s << " weights differ";
  }
}

// Ranks holding several chunks stop together and resume bit-identically: a real interleaved-1f1b
// (v = 2) and a real zb-v run on 2 ranks (4 stages), stopped with Ctrl-C, resume to the weights of
// the uninterrupted single-mode run; every stage wrote its checkpoint.
TEST_F(Lifecycle, ChunkedRealRunsStoppedAndResumedEqualSingleMode) {
  int run = 0;
  for (const std::string schedule : {"interleaved-1f1b", "zb-v"}) {
    SCOPED_TRACE(schedule);
    ++run;
    const std::vector<std::string> common{"--set", "model.name=cnn", "--set", "pipeline.stages=2", "--set", "pipeline.microbatches=4",
                                          "--set", "training.steps=60", "--set", "pipeline.schedule=" + schedule, "--set",
                                          "training.log_interval=1", "--quiet"};
    const std::string resumed = (dir_ / (schedule + "-resumed")).string(), single = (dir_ / (schedule + "-single")).string();
    std::vector<std::string> args{bin(), "run", exp("tiny-synthetic.json"), "--db", db_, "--save-state", resumed, "--set", "execution.mode=real"};
    args.insert(args.end(), common.begin(), common.end());
    const std::string log = (dir_ / (schedule + ".log")).string();
    const pid_t pid = spawnBackground(args, log);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(waitUntil([&] { return lossPoints(db_, run) >= 3; }, 90)) << readFile(log);
    ASSERT_EQ(::kill(pid, SIGINT), 0);
    ASSERT_EQ(waitExit(pid, 60), 130) << readFile(log);
    int64_t haltStep = 0;
    {
      pm::RunStore store(db_);
      auto rec = store.getRun(run);
      EXPECT_EQ(rec->status, pm::RunStatus::Stopped);
      haltStep = rec->halt_step;
      ASSERT_GT(haltStep, 0) << rec->status_message;
      EXPECT_LT(haltStep, 60);
    }
    auto r = runCmd(bin() + " run --resume " + std::to_string(run) + " --db " + db_ + " --quiet --save-state " + resumed);
    ASSERT_EQ(r.code, 0) << r.out;
    std::string cmd = bin() + " run " + exp("tiny-synthetic.json") + " --db " + (dir_ / (schedule + "-single.db")).string() +
                      " --save-state " + single;
    for (const auto& c : common) cmd += " " + c;
    auto u = runCmd(cmd);
    ASSERT_EQ(u.code, 0) << u.out;
    pm::RunStore store(db_);
    EXPECT_EQ(store.getRun(run)->status, pm::RunStatus::Finished);
    EXPECT_EQ(store.getRun(run)->resume_step, haltStep);
    EXPECT_EQ(store.loadMetric(run, "train/loss").size(), 60u);
    for (int s = 0; s < 4; ++s) {
      const std::string a = readFile(single + "/stage" + std::to_string(s) + ".pt");
      ASSERT_FALSE(a.empty());
      EXPECT_TRUE(a == readFile(resumed + "/stage" + std::to_string(s) + ".pt")) << "stage " << s << " weights differ";
    }
  }
}

// The launcher killed (SIGKILL, nothing can run in it) at random moments of its first 3 s: before
// its workers exist, while they load LibTorch, while they meet, while they train. No worker may
// outlive it by more than 10 s. This process adopts the orphans (child subreaper), so a worker
// left behind is seen, and reaped, here.
TEST_F(Lifecycle, LauncherKilledAtAnyMomentLeavesNoWorkerBehind) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const unsigned seed = 28011;
  std::printf("launcher kill moments from seed %u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> moment(0.0, 3.0);
  for (int trial = 0; trial < 20; ++trial) {
    const double at = trial == 0 ? 0.0 : moment(rng);
    const pid_t launcher = spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--set",
                                            "pipeline.stages=2", "--set", "execution.mode=real", "--set", "training.steps=100000"},
                                           (dir_ / "killed.log").string());
    ASSERT_GT(launcher, 0);
    ::usleep(static_cast<useconds_t>(at * 1e6));  // the random moment of the kill
    ASSERT_EQ(::kill(launcher, SIGKILL), 0);
    ASSERT_EQ(waitExit(launcher, 10), 128 + SIGKILL);
    const double killed = pm::monotonicSeconds();
    // Reap every adopted worker until none is left, for at most 10 s.
    bool clean = false;
    while (pm::monotonicSeconds() - killed < 10.0) {
      const pid_t p = ::waitpid(-1, nullptr, WNOHANG);
      if (p < 0 && errno == ECHILD) {
        clean = true;
        break;
      }
      if (p == 0) ::usleep(20 * 1000);
    }
    if (!clean) {
      const auto left = runCmd("pgrep -a -P " + std::to_string(::getpid()));
      runCmd("pkill -KILL -P " + std::to_string(::getpid()));
      while (::waitpid(-1, nullptr, 0) > 0) {
      }
      FAIL() << "trial " << trial << " (seed " << seed << "): killed " << at << " s after the start, workers alive 10 s later:\n"
             << left.out;
    }
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

namespace {

// A process that knows the experiment and node 0's address but not the run secret: it answers
// node 0's challenge with a hello under a made-up MAC, then sends what a node would.
struct Forger {
  int fd = -1;
  std::string buf;
  bool connect(int port) {
    for (int i = 0; i < 300; ++i) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<uint16_t>(port));
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return true;
      ::close(fd);
      fd = -1;
      ::usleep(100 * 1000);
    }
    return false;
  }
  // The next line from node 0 ("" at end of file), waiting up to 30 s.
  std::string line() {
    for (int i = 0; i < 300; ++i) {
      if (const auto at = buf.find('\n'); at != std::string::npos) {
        std::string l = buf.substr(0, at);
        buf.erase(0, at + 1);
        return l;
      }
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) == 1) {
        char tmp[4096];
        const ssize_t n = ::read(fd, tmp, sizeof tmp);
        if (n <= 0) return "";
        buf.append(tmp, static_cast<size_t>(n));
      }
    }
    return "";
  }
  void send(const std::string& text) { (void)!::write(fd, text.data(), text.size()); }
};

}  // namespace

// A forged hello (no run secret) followed by a fake metric, a log line and a stop: node 0 refuses
// the connection, records none of it (neither the fake loss nor the log line), and the genuine run
// goes on to finish (the fake stop does not end it).
TEST_F(Lifecycle, ForgedNodeHelloIsRefusedAndTheRunGoesOn) {
  const int port = freePortPair();
  const std::vector<std::string> env{"PIPEMARE_RUN_SECRET=a-secret-every-node-of-this-run-has"};
  auto launcher = [&](int node) {
    return spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", node == 0 ? db_ : (dir_ / "remote.db").string(),
                            "--nnodes", "2", "--node-rank", std::to_string(node), "--master-addr", "127.0.0.1", "--master-port",
                            std::to_string(port), "--quiet", "--set", "pipeline.stages=2", "--set", "execution.mode=real", "--set",
                            "training.steps=30", "--set", "training.log_interval=1"},
                           (dir_ / ("forged" + std::to_string(node) + ".log")).string(), false, env);
  };
  const pid_t n0 = launcher(0);
  ASSERT_GT(n0, 0);
  Forger f;
  ASSERT_TRUE(f.connect(port + 1)) << readFile((dir_ / "forged0.log").string());
  const auto challenge = nlohmann::json::parse(f.line(), nullptr, false);
  ASSERT_TRUE(challenge.is_object());
  EXPECT_EQ(challenge.value("type", ""), "node_challenge");
  const nlohmann::json hello{{"type", "node_hello"}, {"node", 1}, {"nnodes", 2}, {"ranks", {1}}, {"nonce", std::string(32, 'a')}};
  f.send(std::string(64, '0') + " " + hello.dump() + "\n");
  f.send(R"({"type":"step","v":1,"run":0,"step":1,"loss":12345.0})" "\n");
  f.send(R"({"type":"log","v":1,"level":"info","message":"forged line"})" "\n");
  f.send(R"({"type":"node_stopping","node":1})" "\n");
  const auto refused = nlohmann::json::parse(f.line(), nullptr, false);
  ASSERT_TRUE(refused.is_object());
  EXPECT_EQ(refused.value("type", ""), "node_refused");
  EXPECT_NE(refused.value("message", "").find("authentication failed"), std::string::npos) << refused.dump();
  EXPECT_EQ(f.line(), "") << "node 0 kept the forger's connection open";
  ::close(f.fd);

  const pid_t n1 = launcher(1);
  EXPECT_EQ(waitExit(n0, 120), 0) << readFile((dir_ / "forged0.log").string());
  EXPECT_EQ(waitExit(n1, 30), 0) << readFile((dir_ / "forged1.log").string());
  EXPECT_NE(readFile((dir_ / "forged0.log").string()).find("refused a connection from 127.0.0.1"), std::string::npos)
      << readFile((dir_ / "forged0.log").string());
  pm::RunStore store(db_);
  const auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Finished) << runs[0].status_message;
  const auto losses = store.loadMetric(runs[0].id, "train/loss");
  EXPECT_EQ(losses.size(), 30u);
  for (const auto& p : losses) EXPECT_LT(p.value, 1000.0) << "the forged loss was recorded at step " << p.step;
  for (const auto& l : store.loadLog(runs[0].id)) EXPECT_EQ(l.message.find("forged"), std::string::npos) << l.message;
}

// Launchers with different run secrets: node 1 is refused at once and says why; node 0 fails
// saying that node 1 never joined and that a connection was refused.
TEST_F(Lifecycle, NodesWithDifferentSecretsAreRefusedWithTheReason) {
  const int port = freePortPair();
  auto launcher = [&](int node, const std::string& secret) {
    return spawnBackground({bin(), "run", exp("tiny-synthetic.json"), "--db", node == 0 ? db_ : (dir_ / "remote.db").string(),
                            "--nnodes", "2", "--node-rank", std::to_string(node), "--master-addr", "127.0.0.1", "--master-port",
                            std::to_string(port), "--quiet", "--set", "pipeline.stages=2", "--set", "execution.mode=real", "--set",
                            "execution.timeout_s=5", "--set", "training.steps=30"},
                           (dir_ / ("secret" + std::to_string(node) + ".log")).string(), false, {"PIPEMARE_RUN_SECRET=" + secret});
  };
  const pid_t n0 = launcher(0, "the secret of node zero, 0000");
  const pid_t n1 = launcher(1, "the secret of node one, 111111");
  EXPECT_EQ(waitExit(n1, 60), 1) << readFile((dir_ / "secret1.log").string());
  EXPECT_NE(readFile((dir_ / "secret1.log").string()).find("node 0 refused this node: authentication failed"), std::string::npos)
      << readFile((dir_ / "secret1.log").string());
  EXPECT_EQ(waitExit(n0, 60), 1) << readFile((dir_ / "secret0.log").string());
  pm::RunStore store(db_);
  ASSERT_EQ(store.listRuns().size(), 1u);
  const std::string msg = store.listRuns()[0].status_message;
  EXPECT_NE(msg.find("node 1 never joined"), std::string::npos) << msg;
  EXPECT_NE(msg.find("refused: authentication failed"), std::string::npos) << msg;
  // A run secret too short to be one is a usage error before anything starts.
  auto shortSecret = runCmd("PIPEMARE_RUN_SECRET=abc " + bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                            " --nnodes 2 --node-rank 0 --master-port " + std::to_string(freePortPair()) +
                            " --set pipeline.stages=2 --set execution.mode=real --quiet");
  EXPECT_EQ(shortSecret.code, 2) << shortSecret.out;
  EXPECT_NE(shortSecret.out.find("PIPEMARE_RUN_SECRET"), std::string::npos) << shortSecret.out;
  EXPECT_EQ(store.listRuns().size(), 1u);
}

// torchrun starts the workers (`torchrun --no_python pipemare worker ...`): RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT and LOCAL_RANK come from it, and the workers join the TCPStore its agent
// serves (TORCHELASTIC_USE_AGENT_STORE) rather than rank 0 serving one. Two CPU workers train to the
// end. The torchrun of the build's own PyTorch: the torch 2.11 environment's for the torch2 build,
// Debian's for the Debian build.
TEST_F(Lifecycle, TorchrunStartsTheWorkers) {
  const auto version = runCmd(bin() + " version --json");
  ASSERT_EQ(version.code, 0) << version.out;
  const std::string torch = nlohmann::json::parse(version.out)["build"].value("torch", std::string());
  const std::string torchrun = torch.rfind("1.", 0) == 0 ? "/usr/bin/torchrun" : "/opt/pipemare/torch-" + torch + "/bin/torchrun";
  if (!std::filesystem::exists(torchrun)) GTEST_SKIP() << "no " << torchrun << " (scripts/setup.sh, scripts/setup-torch2.sh)";
  const std::string cfg = (dir_ / "p2.json").string();
  {
    auto e = nlohmann::json::parse(readFile(exp("tiny-synthetic.json")));
    e["pipeline"]["stages"] = 2;
    e["execution"]["mode"] = "real";
    e["execution"]["devices"] = {"cpu", "cpu"};
    e["training"]["steps"] = 12;
    e["training"]["log_interval"] = 1;
    std::ofstream(cfg) << e.dump(2);
  }
  const int port = freePortPair();
  const std::string log = (dir_ / "torchrun.log").string();
  // The underscore spellings: Debian's torchrun (1.13) knows only those; later ones take both.
  const pid_t p = spawnBackground({torchrun, "--nnodes=1", "--nproc_per_node=2", "--master_addr=127.0.0.1",
                                   "--master_port=" + std::to_string(port), "--no_python", bin(), "worker", "--config", cfg},
                                  log);
  const int code = waitExit(p, 180);
  const std::string text = readFile(log);
  // Debian's torchrun (1.13) under Debian's Python 3.11 fails before it starts a worker: its
  // Std.from_str("0") finds no enum member (Python 3.11's Flag iteration omits the zero value) and
  // returns None.
  if (code != 0 && text.find("'NoneType' object has no attribute 'get'") != std::string::npos)
    GTEST_SKIP() << torchrun << " cannot start workers under this Python (torch 1.13's elastic launcher and Python 3.11): " << text.substr(0, 200);
  EXPECT_EQ(code, 0) << text;
  // Both stages finished, the last one with the run's 12 steps of losses.
  size_t finished = 0;
  for (size_t at = 0; (at = text.find("\"status\":\"finished\"", at)) != std::string::npos; ++at) ++finished;
  EXPECT_EQ(finished, 2u) << text;
  size_t steps = 0;
  for (size_t at = 0; (at = text.find("\"type\":\"step\"", at)) != std::string::npos; ++at) ++steps;
  EXPECT_EQ(steps, 12u) << text;
}
