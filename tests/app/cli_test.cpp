// End-to-end tests through the real `pipemare` executable.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/store/run_store.h"
#include "tests/app/app_test_support.h"

namespace fs = std::filesystem;

using pm::test::readFile;
using pm::test::runCmd;
using pm::test::writeFile;
using Cli = pm::test::AppTest;

TEST_F(Cli, RunRecordsAndRunsListShowsIt) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --name e2e-run");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("stored as run 1"), std::string::npos) << r.out;
  auto list = runCmd(bin() + " --db " + db_ + " runs list --json");
  ASSERT_EQ(list.code, 0) << list.out;
  auto j = nlohmann::json::parse(list.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["name"], "e2e-run");
  EXPECT_EQ(j[0]["status"], "finished");
  auto show = runCmd(bin() + " --db " + db_ + " runs show 1");
  EXPECT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("train/loss"), std::string::npos) << show.out;
}

// --db may come after the subcommand as well as before it.
TEST_F(Cli, DbOptionWorksAfterTheSubcommand) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  auto list = runCmd("(" + bin() + " runs list --json --db " + db_ + " 2>/dev/null)");
  ASSERT_EQ(list.code, 0) << list.out;
  EXPECT_EQ(nlohmann::json::parse(list.out).size(), 1u) << list.out;
  auto show = runCmd(bin() + " runs show 1 --db " + db_);
  EXPECT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("train/loss"), std::string::npos) << show.out;
  auto bad = runCmd(bin() + " runs list --db " + db_ + " --bogus");
  EXPECT_EQ(bad.code, 2) << bad.out;
  auto status = runCmd(bin() + " runs list --db " + db_ + " --status bogus");
  EXPECT_EQ(status.code, 2) << status.out;
  EXPECT_NE(status.out.find("finished"), std::string::npos) << status.out;  // names the statuses there are
  // A mistyped --db is refused by the commands that read or edit runs; none creates the file
  // (an empty store there would look like a store whose runs were gone).
  const std::string typo = (dir_ / "typo.db").string();
  for (const char* cmd : {"runs list", "runs show 1", "runs tag 1 x", "runs note 1 x", "runs delete 1"}) {
    auto missing = runCmd(bin() + " --db " + typo + " " + std::string(cmd));
    EXPECT_EQ(missing.code, 2) << cmd << ": " << missing.out;
    EXPECT_NE(missing.out.find("no run store here"), std::string::npos) << cmd << ": " << missing.out;
    EXPECT_FALSE(fs::exists(typo)) << cmd;
  }
}

// A run with --set keeps the file's notes and adds what the command line changed; one without keeps
// them as they are.
TEST_F(Cli, RunNotesRecordTheOverrides) {
  auto plain = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet");
  ASSERT_EQ(plain.code, 0) << plain.out;
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --quiet --set training.steps=6 --set optimizer.lr=0.1");
  ASSERT_EQ(r.code, 0) << r.out;
  pm::RunStore store(db_);
  const std::string fileNotes = "A few seconds of training on generated data (no dataset files needed); used by tests.";
  EXPECT_EQ(store.getRun(1)->notes, fileNotes);
  EXPECT_EQ(store.getRun(2)->notes, fileNotes + " [run with --set training.steps=6, optimizer.lr=0.1]");
}

TEST_F(Cli, EventsStdoutStreamsJsonLines) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --events stdout 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream in(r.out);
  std::string line;
  int steps = 0, finished = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    auto e = nlohmann::json::parse(line);
    EXPECT_EQ(e["v"], 1);
    if (e["type"] == "step") ++steps;
    if (e["type"] == "run_finished") {
      ++finished;
      EXPECT_EQ(e["status"], "finished");
    }
  }
  EXPECT_GT(steps, 0);
  EXPECT_EQ(finished, 1);
}

TEST_F(Cli, InvalidExperimentExitsTwoAndCreatesNoRun) {
  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << R"({"name": "bad", "pipeline": {"stages": "four"}})";
  auto r = runCmd(bin() + " run " + bad + " --db " + db_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("pipeline.stages"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"four\""), std::string::npos) << r.out;
  pm::RunStore store(db_);
  EXPECT_TRUE(store.listRuns().empty());
}

// Fashion-MNIST files that are there but corrupt (a label of 200, a truncated image file, a
// dimension of 2^32-1) are bad input like a missing file: `validate` and `run` exit 2 naming the
// file and what is wrong, and no run is recorded.
TEST_F(Cli, CorruptFashionMnistFilesAreRefusedBeforeARunIsRecorded) {
  const auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>((v >> 16) & 0xff), static_cast<char>((v >> 8) & 0xff),
                       static_cast<char>(v & 0xff)};
  };
  const uint32_t n = 32;
  const std::string images = be32(0x00000803) + be32(n) + be32(28) + be32(28) + std::string(n * 784, '\x40');
  std::string labels = be32(0x00000801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) labels += static_cast<char>(i % 10);
  struct Case {
    std::string name, file, bytes, expect;
  };
  std::string badLabels = labels;
  badLabels[8 + 5] = static_cast<char>(200);
  const std::vector<Case> cases{
      {"label", "train-labels-idx1-ubyte", badLabels, "label 200 at index 5 is out of range"},
      {"truncated", "train-images-idx3-ubyte", images.substr(0, images.size() / 2), "truncated"},
      {"huge", "t10k-images-idx3-ubyte", be32(0x00000803) + be32(0xFFFFFFFFu) + be32(28) + be32(28), "exceed the limit"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path dir = dir_ / c.name;
    fs::create_directories(dir);
    for (const char* split : {"train", "t10k"}) {
      pm::test::writeFile((dir / (std::string(split) + "-images-idx3-ubyte")).string(), images);
      pm::test::writeFile((dir / (std::string(split) + "-labels-idx1-ubyte")).string(), labels);
    }
    pm::test::writeFile((dir / c.file).string(), c.bytes);
    const std::string set = " --set data.dataset=fashion-mnist --set data.path=" + dir.string() + " --set training.steps=2";
    const auto v = runCmd(bin() + " validate " + exp("tiny-synthetic.json") + set + " 2>&1");
    EXPECT_EQ(v.code, 2) << v.out;
    EXPECT_NE(v.out.find((dir / c.file).string()), std::string::npos) << v.out;
    EXPECT_NE(v.out.find(c.expect), std::string::npos) << v.out;
    const auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet" + set + " 2>&1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << r.out;
  }
  // The same files, whole, validate.
  const fs::path good = dir_ / "good";
  fs::create_directories(good);
  for (const char* split : {"train", "t10k"}) {
    pm::test::writeFile((good / (std::string(split) + "-images-idx3-ubyte")).string(), images);
    pm::test::writeFile((good / (std::string(split) + "-labels-idx1-ubyte")).string(), labels);
  }
  const auto ok = runCmd(bin() + " validate " + exp("tiny-synthetic.json") + " --set data.dataset=fashion-mnist --set data.path=" +
                         good.string() + " 2>&1");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(!fs::exists(db_) || pm::RunStore(db_).listRuns().empty()) << "a run was recorded";
}

// A dataset that is not there is bad input too: exit 2 naming the file, before a run is recorded
// (no failed run is recorded), for a run and for every point of a sweep.
TEST_F(Cli, MissingDatasetExitsTwoAndCreatesNoRun) {
  const std::string nowhere = (dir_ / "no-such-dir").string();
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --set data.dataset=fashion-mnist --set data.path=" + nowhere);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(nowhere + "/train-images-idx3-ubyte.gz"), std::string::npos) << r.out;
  r = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --db " + db_ + " --set data.dataset=fashion-mnist --grid data.path=" +
             nowhere + "," + nowhere + "2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("[grid point data.path=" + nowhere + "]"), std::string::npos) << r.out;
  EXPECT_TRUE(!fs::exists(db_) || pm::RunStore(db_).listRuns().empty());
  // What the run would refuse at its start is refused before it is recorded too (exit 2, not a
  // failed run with exit 1).
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --set data.train_limit=5 --set pipeline.microbatches=8");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("5 samples, fewer than pipeline.microbatches = 8"), std::string::npos) << r.out;
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --set 'execution.devices=[\"cuda:0\"]'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(!fs::exists(db_) || pm::RunStore(db_).listRuns().empty());
}

// A minibatch larger than the training split trains on the whole split each step; the run says so
// (on the terminal and in the stored log) instead of silently making one step per epoch.
TEST_F(Cli, BatchLargerThanTheTrainingSplitIsWarned) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --set data.train_limit=40 --set data.batch_size=64 --set training.steps=3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("data.batch_size = 64 is larger than the training split (40 samples)"), std::string::npos) << r.out;
  bool logged = false;
  for (const auto& l : pm::RunStore(db_).loadLog(1)) logged |= l.level == "warning" && l.message.find("batch_size = 64") != std::string::npos;
  EXPECT_TRUE(logged);
  // Equal sizes are not warned about.
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --set data.train_limit=64 --set data.batch_size=64 --set training.steps=2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("larger than the training split"), std::string::npos) << r.out;
}

// With --events stdout an error before the run exists is an event on stdout too (place, message,
// exit code), and stdout holds nothing else.
TEST_F(Cli, InvalidExperimentIsAnErrorEventOnTheStream) {
  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << R"({"name": "bad", "pipeline": {"stages": "four"}})";
  auto r = runCmd("(" + bin() + " run " + bad + " --db " + db_ + " --events stdout 2>/dev/null)");
  EXPECT_EQ(r.code, 2) << r.out;
  std::istringstream in(r.out);
  std::string line;
  std::vector<nlohmann::json> events;
  while (std::getline(in, line))
    if (!line.empty()) events.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(events.size(), 1u) << r.out;
  EXPECT_EQ(events[0]["type"], "error");
  EXPECT_NE(events[0]["place"].get<std::string>().find("pipeline.stages"), std::string::npos) << r.out;
  EXPECT_NE(events[0]["place"].get<std::string>().find("bad.json"), std::string::npos) << r.out;
  EXPECT_EQ(events[0]["exit_code"], 2);
  EXPECT_EQ(events[0]["before_run"], true);
  EXPECT_TRUE(events[0].contains("v"));
  // A usage error of the command line (stdout held nothing).
  r = runCmd("(" + bin() + " run " + bad + " --db " + db_ + " --events stdout --bogus 2>/dev/null)");
  EXPECT_EQ(r.code, 2) << r.out;
  ASSERT_FALSE(r.out.empty());
  const auto usage = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(usage["type"], "error");
  EXPECT_EQ(usage["exit_code"], 2);
  EXPECT_NE(usage["message"].get<std::string>().find("--bogus"), std::string::npos) << r.out;
}

// Tags and run names follow the experiment format's rules on the command line too.
TEST_F(Cli, TagsAndNamesFollowTheFormatsRules) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --set training.steps=2 --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " runs tag 1 ok '  '").code, 2);
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " runs tag 1 " + std::string(65, 'x')).code, 2);
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " runs tag 1 fine").code, 0);
  EXPECT_EQ(pm::RunStore(db_).getRun(1)->tags, (std::vector<std::string>{"fine"}));
  EXPECT_EQ(runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --name '   '").code, 2);
  EXPECT_EQ(runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --name " + std::string(201, 'n')).code, 2);
  EXPECT_EQ(pm::RunStore(db_).listRuns().size(), 1u);
}

TEST_F(Cli, BadOverrideExitsTwoWithDidYouMean) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --set pipeline.microbatch=4");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("microbatches"), std::string::npos) << r.out;
  pm::RunStore store(db_);
  EXPECT_TRUE(store.listRuns().empty());
}

TEST_F(Cli, SyntaxErrorNamesLineAndColumn) {
  const std::string bad = (dir_ / "syntax.json").string();
  std::ofstream(bad) << "{\n  \"name\": \"x\",\n  \"model\": {\"name\": \"mlp\",}\n}\n";
  auto r = runCmd(bin() + " validate " + bad);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("syntax.json:3:"), std::string::npos) << r.out;
}

TEST_F(Cli, ModelsListsTheZoo) {
  auto r = runCmd(bin() + " models --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, int64_t> params;
  for (const auto& m : j) params[m["name"]] = m["parameters"];
  EXPECT_EQ(params["cnn"], 871018);
  EXPECT_EQ(params["charlm"], 875264);
}

// `pipemare version`: the version, the BLAS library LibTorch loaded and the presets' folder, which
// from the build tree is the source checkout's; and a preset may be named without its path. (The
// installed programs name their installed presets: scripts/test.sh checks a DESTDIR installation.)
TEST_F(Cli, VersionNamesBlasAndPresetsAndAPresetRunsByName) {
  auto r = runCmd(bin() + " version --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.value("version", std::string()).empty()) << r.out;
  EXPECT_FALSE(j["blas"].value("kind", std::string()).empty()) << r.out;
  EXPECT_TRUE(fs::equivalent(j.value("presets", std::string()), fs::path(exp("tiny-synthetic.json")).parent_path())) << r.out;
  r = runCmd(bin() + " version");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("BLAS: "), std::string::npos) << r.out;
  r = runCmd(bin() + " validate tiny-synthetic");
  EXPECT_EQ(r.code, 0) << r.out;
  r = runCmd(bin() + " run tiny-synthetic --quiet --db " + db_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(pm::RunStore(db_).listRuns().size(), 1u);
  r = runCmd(bin() + " validate no-such-preset");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no-such-preset"), std::string::npos) << r.out;
}

namespace {

// The workbench without a display, in the background, its output in `log`: main.cpp runs headless
// when DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are all unset (ctest sets QT_QPA_PLATFORM).
// env replaces itself with the workbench, so the returned pid is the workbench's.
pid_t spawnHeadlessWorkbench(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv{"/usr/bin/env", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", "-u", "QT_QPA_PLATFORM",
                                pm::test::binPath("pipemare-workbench")};
  argv.insert(argv.end(), args.begin(), args.end());
  return pm::test::spawnBackground(argv, log);
}

// The process that records run 1 of the store `db` (launcher_pid); 0 while the store or the run is
// not there yet.
int64_t launcherPid(const std::string& db) {
  try {
    const auto run = pm::RunStore(db, /*readOnly=*/true).getRun(1);
    return run ? run->launcher_pid : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// The parent of a process (/proc/PID/stat, the field after the state); -1 when it is gone.
pid_t parentOf(int64_t pid) {
  const std::string stat = pm::test::readFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t nameEnd = stat.rfind(')');  // the command name in parentheses may hold spaces
  if (nameEnd == std::string::npos) return -1;
  std::istringstream fields(stat.substr(nameEnd + 1));
  std::string state;
  long long parent = -1;
  fields >> state >> parent;
  return static_cast<pid_t>(parent);
}

}  // namespace

// Without a display the workbench runs the experiment as a `pipemare run` child process, never in
// its own process: the run is recorded by another process, and the child's banner, progress and
// closing lines reach the workbench's output as `pipemare run` writes them.
TEST_F(Cli, WorkbenchWithoutDisplayRunsTheDefaultExperimentHeadless) {
  const std::string wb = pm::test::binPath("pipemare-workbench");
  if (!fs::exists(wb)) GTEST_SKIP() << "workbench not built (PIPEMARE_BUILD_UI=OFF)";
  const std::string log = (dir_ / "workbench.log").string();
  const pid_t pid = spawnHeadlessWorkbench({"--db", db_, "--experiment", exp("tiny-synthetic.json")}, log);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(pm::test::waitExit(pid, 120), 0) << pm::test::readFile(log);
  const std::string out = pm::test::readFile(log);
  EXPECT_NE(out.find("no display"), std::string::npos) << out;
  EXPECT_NE(out.find("partition: "), std::string::npos) << out;  // pipemare run's banner of the started run
  EXPECT_NE(out.find("step 20/20"), std::string::npos) << out;   // its progress (the last step always prints)
  EXPECT_NE(out.find("stored as run 1 in "), std::string::npos) << out;
  EXPECT_NE(out.find(db_), std::string::npos) << out;
  pm::RunStore store(db_);
  ASSERT_EQ(store.listRuns().size(), 1u);
  EXPECT_EQ(store.listRuns()[0].status, pm::RunStatus::Finished);
  const auto run = store.getRun(1);
  ASSERT_TRUE(run);
  EXPECT_GT(run->launcher_pid, 0);
  EXPECT_NE(run->launcher_pid, static_cast<int64_t>(pid)) << "the workbench trained in its own process";
}

// SIGINT to the headless workbench (to it alone, not its process group) stops its run as Ctrl-C
// stops `pipemare run`: the child, a `pipemare` process whose parent is the workbench, finishes the
// minibatch in progress, writes a checkpoint and records the run as stopped; the workbench exits
// with the child's code, 130, and leaves no child behind.
TEST_F(Cli, HeadlessWorkbenchStopsItsRunOnSigint) {
  const std::string wb = pm::test::binPath("pipemare-workbench");
  if (!fs::exists(wb)) GTEST_SKIP() << "workbench not built (PIPEMARE_BUILD_UI=OFF)";
  const std::string expFile = (dir_ / "long.json").string();
  ASSERT_TRUE(pm::test::writeFile(expFile, R"({"name": "headless-long", "model": {"name": "mlp"},
      "data": {"dataset": "synthetic", "synthetic_samples": 512, "batch_size": 32},
      "pipeline": {"stages": 2, "microbatches": 2},
      "training": {"steps": 20000, "log_interval": 1}})"));
  const std::string log = (dir_ / "workbench.log").string();
  const pid_t pid = spawnHeadlessWorkbench({"--db", db_, "--experiment", expFile}, log);
  ASSERT_GT(pid, 0);
  const bool running = pm::test::waitUntil([&] { return pm::test::lossPoints(db_) >= 3 && launcherPid(db_) > 0; }, 90);
  if (!running) {  // stop what did start before failing
    ::kill(pid, SIGINT);
    pm::test::waitExit(pid, 60);
  }
  ASSERT_TRUE(running) << pm::test::readFile(log);
  const int64_t launcher = launcherPid(db_);
  EXPECT_NE(launcher, static_cast<int64_t>(pid)) << "the workbench trains in its own process";
  EXPECT_EQ(parentOf(launcher), pid) << "the run's process is not the workbench's child";
  std::error_code ec;
  EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(launcher) + "/exe", ec).string(),
            fs::canonical(pm::test::binPath("pipemare")).string());
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const int code = pm::test::waitExit(pid, 60);
  const std::string out = pm::test::readFile(log);
  if (launcher != pid && pm::test::processAlive(static_cast<pid_t>(launcher)))
    ::kill(static_cast<pid_t>(launcher), SIGKILL);  // never leave a 20,000-step run behind
  EXPECT_EQ(code, 130) << out;
  EXPECT_NE(out.find("stopping the run"), std::string::npos) << out;
  pm::RunStore store(db_);
  const auto run = store.getRun(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, pm::RunStatus::Stopped) << run->status_message;
  EXPECT_NE(run->status_message.find("checkpoint"), std::string::npos) << run->status_message;
  EXPECT_LT(store.loadMetric(1, "train/loss").size(), 20000u);
  EXPECT_EQ(store.listRuns().size(), 1u);
}

// The workbench does not link the engine: no LibTorch among the libraries it loads and none of the
// command line's code (pm::cli) in it; it runs experiments as `pipemare` child processes.
TEST_F(Cli, WorkbenchDoesNotLinkTheEngine) {
  const std::string wb = pm::test::binPath("pipemare-workbench");
  if (!fs::exists(wb)) GTEST_SKIP() << "workbench not built (PIPEMARE_BUILD_UI=OFF)";
  const auto ldd = runCmd("ldd " + wb);
  if (ldd.code == 127) GTEST_SKIP() << "no ldd here";
  ASSERT_EQ(ldd.code, 0) << ldd.out;
  EXPECT_NE(ldd.out.find("libQt6Widgets"), std::string::npos) << ldd.out;  // it lists the libraries
  for (const char* lib : {"libtorch", "libc10"}) EXPECT_EQ(ldd.out.find(lib), std::string::npos) << lib << "\n" << ldd.out;
  EXPECT_EQ(pm::test::readFile(wb).find("_ZN2pm3cli"), std::string::npos) << "core/cli's code is linked in";
}

// The engine benchmark's options: --help prints them, a bad one exits 2 before anything is measured.
TEST_F(Cli, EngineBenchRejectsBadOptions) {
  const std::string bench = pm::test::binPath("../bench/engine_bench");
  if (!fs::exists(bench)) GTEST_SKIP() << "benchmarks not built (PIPEMARE_BUILD_BENCH=OFF)";
  auto r = runCmd(bench + " --help");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--schedules"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("samples/s"), std::string::npos) << "--help must not run the benchmark: " << r.out;
  r = runCmd(bench + " --bogus");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--bogus"), std::string::npos) << r.out;
  r = runCmd(bench + " --runs many");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--runs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("samples/s"), std::string::npos) << r.out;
}

// The workbench's own options: a usage error exits 2 naming the option, before any run starts;
// --help prints the options; Qt's single-dash options are left to Qt.
TEST_F(Cli, WorkbenchRejectsBadOptions) {
  const std::string wb = pm::test::binPath("pipemare-workbench");
  if (!fs::exists(wb)) GTEST_SKIP() << "workbench not built (PIPEMARE_BUILD_UI=OFF)";
  const std::string headless = "env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM " + wb + " --db " + db_;
  auto r = runCmd(headless + " --experiment " + exp("tiny-synthetic.json") + " --bogus");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown option '--bogus'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("usage: pipemare-workbench"), std::string::npos) << r.out;
  r = runCmd(headless + " --experiment");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("option --experiment needs a value"), std::string::npos) << r.out;
  r = runCmd(headless + " --run-id seven");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--run-id expects a run id (an integer), found 'seven'"), std::string::npos) << r.out;
  r = runCmd(headless + " stray");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unexpected argument 'stray'"), std::string::npos) << r.out;
  r = runCmd(headless + " --tab nope");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--tab: no tab named 'nope' (design, live, runs"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(db_)) << "a usage error must not start a run";
  // With a display: a run id the store does not have is a usage error before the window shows.
  r = runCmd("QT_QPA_PLATFORM=offscreen " + wb + " --db " + db_ + " --run-id 99");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--run-id: no run 99 in the store"), std::string::npos) << r.out;
  r = runCmd(headless + " --compare 1,x");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--compare expects run ids separated by commas (e.g. 3,5,8), found 'x' in '1,x' (a run id is a positive integer)"),
            std::string::npos) << r.out;
  for (const std::string bad : {"0", "-2", "+5", "99999999999999999999"}) {
    r = runCmd(headless + " --compare 1," + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("found '" + bad + "' in '1," + bad + "' (a run id is a positive integer)"), std::string::npos) << r.out;
  }
  for (const std::string bad : {"1,", ",3", "3,,5"}) {
    r = runCmd(headless + " --compare " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("found an empty id in '" + bad + "'"), std::string::npos) << r.out;
  }
  r = runCmd(headless + " --compare 1,3");  // well formed, but there is no window to show them in
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--compare needs a display (the Compare tab); without one, use `pipemare --db"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" compare 1 3`"), std::string::npos) << r.out;
  r = runCmd(headless + " --metric eval/accuracy");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--metric chooses what --compare plots"), std::string::npos) << r.out;
  r = runCmd("QT_QPA_PLATFORM=offscreen " + wb + " --db " + db_ + " --compare 98,99");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--compare: no run 98, 99 in the store " + db_), std::string::npos) << r.out;
  // With a display: an experiment file that cannot be read, with or without --run (the default
  // experiment does not run in its place).
  r = runCmd("QT_QPA_PLATFORM=offscreen " + wb + " --db " + db_ + " --experiment " + (dir_ / "missing.json").string() + " --run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--experiment: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing.json"), std::string::npos) << r.out;
  EXPECT_TRUE(!fs::exists(db_) || pm::RunStore(db_).listRuns().empty()) << "nothing may run";
  r = runCmd(wb + " --help");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--run-id ID"), std::string::npos) << r.out;
  // A Qt option with its value passes the check (the headless run then goes ahead).
  r = runCmd(headless + " -style fusion --experiment " + exp("tiny-synthetic.json"));
  EXPECT_EQ(r.code, 0) << r.out;
}

// pipemare-report: unknown options and a missing --plans folder are usage errors (a trailing
// unknown option as well: none is ignored); without --db it writes the parts that need no runs.
TEST_F(Cli, ReportRejectsBadOptionsAndRunsWithoutAStore) {
  const std::string report = pm::test::binPath("pipemare-report");
  if (!fs::exists(report)) GTEST_SKIP() << "pipemare-report not built (PIPEMARE_BUILD_UI=OFF)";
  const std::string out = (dir_ / "report").string();
  auto r = runCmd(report + " --out " + out + " --bogus");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown option '--bogus'"), std::string::npos) << r.out;
  r = runCmd(report + " --out " + out + " --plans " + (dir_ / "no-plans").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no such directory"), std::string::npos) << r.out;
  r = runCmd(report + " --out " + out + " --db " + db_);
  EXPECT_EQ(r.code, 2) << r.out;  // a store named but not there
  EXPECT_FALSE(fs::exists(db_));
  r = runCmd(report + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string text = pm::test::readFile(out + "/study.md");
  EXPECT_NE(text.find("without a run store"), std::string::npos) << text.substr(0, 400);
}

// export: CSV files, one JSON file and a Chrome trace whose complete events match the stored trace.
TEST_F(Cli, ExportWritesCsvJsonAndChromeTrace) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --quiet --set pipeline.stages=2 --set pipeline.microbatches=2 --set training.trace_steps=3");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string csv = (dir_ / "csv").string(), json = (dir_ / "run.json").string(), trace = (dir_ / "trace.json").string();
  auto e = runCmd(bin() + " --db " + db_ + " export 1 --csv " + csv + " --json " + json + " --chrome-trace " + trace);
  ASSERT_EQ(e.code, 0) << e.out;
  pm::RunStore store(db_);
  const size_t traceRows = store.loadTrace(1).size();
  ASSERT_GT(traceRows, 0u);
  // Chrome trace: one complete ("X") event per stored trace record.
  std::ifstream tf(trace);
  auto t = nlohmann::json::parse(tf);
  size_t complete = 0;
  for (const auto& ev : t["traceEvents"]) complete += ev["ph"] == "X";
  EXPECT_EQ(complete, traceRows);
  // CSV: header + one line per trace row; metrics match the store.
  auto countLines = [](const std::string& path) {
    std::ifstream f(path);
    size_t n = 0;
    std::string line;
    while (std::getline(f, line)) ++n;
    return n;
  };
  EXPECT_EQ(countLines(csv + "/trace.csv"), traceRows + 1);
  size_t metricRows = 0;
  for (const auto& k : store.metricKeys(1)) metricRows += store.loadMetric(1, k).size();
  EXPECT_EQ(countLines(csv + "/metrics.csv"), metricRows + 1);
  std::ifstream jf(json);
  auto j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["trace"].size(), traceRows);
  EXPECT_EQ(j["metrics"]["train/loss"].size(), store.loadMetric(1, "train/loss").size());
  // A missing run is a usage error.
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " export 42 --csv " + csv).code, 2);
  // The trace says it was measured, not "simulated".
  EXPECT_EQ(t["otherData"]["source"], "pipemare export (measured schedule trace of a run)") << t["otherData"].dump();
  // A run without a trace: refused, nothing written (no empty trace with exit 0).
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --set training.trace_steps=0");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string none = (dir_ / "none.json").string();
  e = runCmd(bin() + " --db " + db_ + " export 2 --chrome-trace " + none);
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find("run 2 recorded no schedule trace"), std::string::npos) << e.out;
  EXPECT_FALSE(fs::exists(none));
  // --csv onto a file: a clear refusal, not a filesystem exception.
  e = runCmd(bin() + " --db " + db_ + " export 1 --csv " + json);
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find("exists and is not a directory"), std::string::npos) << e.out;
  // An unwritable --json: nothing is written, the CSV directory is not created, and an earlier
  // export's files keep their contents (the CSV files are not written before the JSON fails).
  const std::string fresh = (dir_ / "fresh-csv").string();
  const std::string badJson = (dir_ / "no-such-dir" / "run.json").string();
  e = runCmd(bin() + " --db " + db_ + " export 1 --csv " + fresh + " --json " + badJson);
  EXPECT_NE(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("nothing exported"), std::string::npos) << e.out;
  EXPECT_FALSE(fs::exists(fresh));
  // Run 2 has no trace: its export would leave trace.csv with the header alone.
  e = runCmd(bin() + " --db " + db_ + " export 2 --csv " + csv + " --json " + badJson);
  EXPECT_NE(e.code, 0) << e.out;
  EXPECT_EQ(countLines(csv + "/trace.csv"), traceRows + 1);
  for (const auto& f : fs::directory_iterator(csv))
    EXPECT_EQ(f.path().filename().string().find(".tmp-"), std::string::npos) << "a temporary was left: " << f.path();
  // A --json that is a directory, or two outputs onto one file: refused before anything is written.
  e = runCmd(bin() + " --db " + db_ + " export 2 --csv " + csv + " --json " + dir_.string());
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find("is a directory"), std::string::npos) << e.out;
  e = runCmd(bin() + " --db " + db_ + " export 2 --csv " + csv + " --json " + csv + "/run.json");
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find("named by two outputs"), std::string::npos) << e.out;
  EXPECT_EQ(countLines(csv + "/trace.csv"), traceRows + 1);
  // A target that is not a regular file is written through (no temporary beside /dev/stdout).
  e = runCmd(bin() + " --db " + db_ + " export 1 --json /dev/stdout 2>/dev/null");
  EXPECT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("\"metrics_columns\""), std::string::npos) << e.out.substr(0, 300);
}

// plan --against RUN: the stored run beside its prediction; the accounted weights and optimizer
// state of each stage agree with the analytic model (BatchNorm buffers aside).
TEST_F(Cli, PlanAgainstARecordedRun) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ +
                  " --quiet --set model.name=cnn --set pipeline.stages=2 --set pipeline.microbatches=4"
                  " --set training.trace_steps=-1 --set training.log_interval=2");
  ASSERT_EQ(r.code, 0) << r.out;
  auto p = runCmd(bin() + " --db " + db_ + " plan --against 1 --json 2>/dev/null");
  ASSERT_EQ(p.code, 0) << p.out;
  auto j = nlohmann::json::parse(p.out);
  ASSERT_EQ(j["per_stage"].size(), 2u);
  for (const auto& s : j["per_stage"]) {
    EXPECT_LT(std::abs(s["weights"]["error_pct"].get<double>()), 2.0) << s.dump();
    EXPECT_LT(std::abs(s["optimizer"]["error_pct"].get<double>()), 0.01) << s.dump();
    EXPECT_GT(s["utilization"]["predicted"].get<double>(), 0.0);
    EXPECT_GT(s["forward_s"].get<double>(), 0.0);
    // Measured activations (what stayed allocated, and transient peaks) beside the model's upper bound.
    EXPECT_GT(s["activations"]["measured"].get<double>(), 0.0) << s.dump();
    EXPECT_GT(s["activations"]["predicted"].get<double>(), 0.0) << s.dump();
  }
  EXPECT_GT(j["seconds_per_minibatch"]["predicted"].get<double>(), 0.0);
  EXPECT_GT(j["seconds_per_minibatch"]["measured"].get<double>(), 0.0);
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " plan --against 99").code, 2);
  // The text says what it compares: a single-process run's caveat, and no "nan" for a run that
  // logged one step.
  auto text = runCmd(bin() + " --db " + db_ + " plan --against 1");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("note: a single-process run"), std::string::npos) << text.out;
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --set training.steps=1 --set pipeline.stages=2");
  ASSERT_EQ(r.code, 0) << r.out;
  text = runCmd(bin() + " --db " + db_ + " plan --against 2");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_EQ(text.out.find("nan"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("measured: none (the run logged fewer than 2 steps"), std::string::npos) << text.out;
  // Its trace has the first minibatch only: those costs, said so, not zeros ("predicted 0.0000").
  EXPECT_NE(text.out.find("note: the trace has only the first minibatch"), std::string::npos) << text.out;
  auto pj = runCmd(bin() + " --db " + db_ + " plan --against 2 --json 2>/dev/null");
  ASSERT_EQ(pj.code, 0) << pj.out;
  const auto one = nlohmann::json::parse(pj.out);
  EXPECT_TRUE(one["costs_from_first_minibatch_only"].get<bool>());
  EXPECT_GT(one["seconds_per_minibatch"]["predicted"].get<double>(), 0.0) << one.dump();
  EXPECT_FALSE(j["costs_from_first_minibatch_only"].get<bool>());
  // The run is the design: a design option beside --against is refused, not ignored.
  auto both = runCmd(bin() + " --db " + db_ + " plan --against 1 --model cnn");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_NE(both.out.find("--model excludes --against"), std::string::npos) << both.out;
}

// plan --experiment FILE [--set k=v]: the experiment file is the design (the engine's units, the
// design's schedule traced); a design option beside it is refused, not silently replaced.
TEST_F(Cli, PlanAnExperimentFile) {
  auto p = runCmd(bin() + " plan --experiment " + exp("tiny-synthetic.json") +
                  " --set pipeline.stages=2 --set pipeline.microbatches=4 --json --trace " + tmp_.file("plan-trace.json"));
  ASSERT_EQ(p.code, 0) << p.out;
  const auto j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["model"], "mlp");
  EXPECT_EQ(j["stages"], 2);
  EXPECT_EQ(j["microbatches"], 4);
  EXPECT_EQ(j["granularity"], "units");
  EXPECT_EQ(j["timing"], "1f1b");  // the experiment's pipeline.timing
  EXPECT_EQ(j["trace"]["schedule"], "gpipe");
  auto both = runCmd(bin() + " plan --experiment " + exp("tiny-synthetic.json") + " --model cnn");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_NE(both.out.find("excludes"), std::string::npos) << both.out;
  auto setAlone = runCmd(bin() + " plan --set pipeline.stages=2");
  EXPECT_EQ(setAlone.code, 2) << setAlone.out;
  EXPECT_NE(setAlone.out.find("--set requires --experiment"), std::string::npos) << setAlone.out;
  auto invalid = runCmd(bin() + " plan --experiment " + exp("tiny-synthetic.json") + " --set pipeline.stages=7");
  EXPECT_EQ(invalid.code, 2) << invalid.out;
  EXPECT_NE(invalid.out.find("pipeline.stages"), std::string::npos) << invalid.out;
}

// compare: the figures of each run and ratios against the baseline, from the store.
TEST_F(Cli, CompareTabulatesRunsWithRatiosAgainstTheBaseline) {
  for (const char* lr : {"0.05", "0.1"}) {
    auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --set optimizer.lr=" + lr +
                    " --set pipeline.stages=2 --set pipeline.microbatches=2 --set training.log_interval=1 --set training.eval_interval=5");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  auto c = runCmd(bin() + " --db " + db_ + " compare 1 2 --baseline 2 --json 2>/dev/null");
  ASSERT_EQ(c.code, 0) << c.out;
  auto j = nlohmann::json::parse(c.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["baseline"], 2);
  pm::RunStore store(db_);
  for (const auto& run : j["runs"]) {
    const int64_t id = run["id"];
    EXPECT_EQ(run["baseline"], id == 2);
    EXPECT_DOUBLE_EQ(run["final_loss"].get<double>(), store.loadMetric(id, "train/loss").back().value);
    ASSERT_EQ(run["per_stage"].size(), 2u);
    if (id == 2) {
      EXPECT_DOUBLE_EQ(run["final_loss_ratio"].get<double>(), 1.0);
    }
  }
  const double ratio = j["runs"][0]["final_loss_ratio"];
  EXPECT_NEAR(ratio, j["runs"][0]["final_loss"].get<double>() / j["runs"][1]["final_loss"].get<double>(), 1e-12);
  auto text = runCmd(bin() + " --db " + db_ + " compare 1 2");
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("(baseline)"), std::string::npos) << text.out;
  EXPECT_EQ(runCmd(bin() + " --db " + db_ + " compare 1 9").code, 2);
}

// Names, tags and notes with quotes, SQL fragments, newlines and unicode are stored and shown
// verbatim (passed as an argument vector: no shell in between).
TEST_F(Cli, QuotesSqlAndUnicodeInNamesTagsAndNotesAreKeptVerbatim) {
  const std::string name = "it's \"quoted\"; DROP TABLE runs; -- \xC3\xBC\xE2\x9C\x93 \xE6\xBC\xA2\xE5\xAD\x97";
  const std::string tag = "tag'); DELETE FROM runs; --";
  const std::string note = "line one \"note\"\nline two \xE2\x9C\x93 %s %n \\x00";
  const std::string log = (dir_ / "out.log").string();
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), bin());
    const pid_t pid = pm::test::spawnBackground(args, log);
    const int code = pm::test::waitExit(pid, 120);
    return std::make_pair(code, pm::test::readFile(log));
  };
  auto made = run({"run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--name", name, "--tag", tag});
  ASSERT_EQ(made.first, 0) << made.second;
  auto noted = run({"--db", db_, "runs", "note", "1", note});
  ASSERT_EQ(noted.first, 0) << noted.second;

  auto list = run({"--db", db_, "runs", "list", "--json"});
  ASSERT_EQ(list.first, 0) << list.second;
  auto j = nlohmann::json::parse(list.second);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["name"], name);
  EXPECT_NE(std::find(j[0]["tags"].begin(), j[0]["tags"].end(), tag), j[0]["tags"].end()) << j[0]["tags"].dump();
  auto shown = run({"--db", db_, "runs", "show", "1"});
  ASSERT_EQ(shown.first, 0) << shown.second;
  EXPECT_NE(shown.second.find(name), std::string::npos) << shown.second;
  EXPECT_NE(shown.second.find(tag), std::string::npos) << shown.second;
  // On the terminal the note's newline reads \n (escapeForTerminal); the store keeps it (below).
  EXPECT_NE(shown.second.find("line one \"note\"\\nline two \xE2\x9C\x93 %s %n \\x00"), std::string::npos) << shown.second;
  auto filtered = run({"--db", db_, "runs", "list", "--json", "--tag", tag});
  ASSERT_EQ(filtered.first, 0) << filtered.second;
  EXPECT_EQ(nlohmann::json::parse(filtered.second).size(), 1u);

  pm::RunStore store(db_, /*readOnly=*/true);
  auto rec = store.getRun(1);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->name, name);
  EXPECT_EQ(rec->notes, note);
}

// `runs import`: a run made into another store appears here with a new id; a missing file is a
// usage error that names it.
TEST_F(Cli, RunsImportCopiesRunsFromAnotherStore) {
  const std::string other = (fs::path(db_).parent_path() / "other.db").string();
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + other + " --quiet --name made-elsewhere");
  ASSERT_EQ(r.code, 0) << r.out;
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --name made-here");
  ASSERT_EQ(r.code, 0) << r.out;
  r = runCmd(bin() + " --db " + db_ + " runs import " + other);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("imported 1 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run 1 -> 2"), std::string::npos) << r.out;
  pm::RunStore store(db_);
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 2u);
  auto imported = store.getRun(2);  // listed by creation time: it was made first, elsewhere
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->name, "made-elsewhere");
  EXPECT_EQ(imported->status, pm::RunStatus::Finished);
  // The curve as the other store holds it, point for point.
  const auto copied = store.loadMetric(2, "train/loss");
  const auto original = pm::RunStore(other).loadMetric(1, "train/loss");
  ASSERT_FALSE(original.empty());
  ASSERT_EQ(copied.size(), original.size());
  for (size_t i = 0; i < copied.size(); ++i) {
    EXPECT_EQ(copied[i].step, original[i].step) << i;
    EXPECT_EQ(copied[i].value, original[i].value) << i;
  }
  // Importing the same store again copies nothing twice.
  r = runCmd(bin() + " --db " + db_ + " runs import " + other);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("imported 0 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run 1 is run 2 here"), std::string::npos) << r.out;
  EXPECT_EQ(pm::RunStore(db_).listRuns().size(), 2u);
  r = runCmd(bin() + " --db " + db_ + " runs import " + other + ".missing");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(other + ".missing"), std::string::npos) << r.out;
}

namespace {

// Runs the pipemare binary with an argument vector (no shell): exit code and stdout + stderr.
pm::test::Result runArgs(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), Cli::bin());
  const std::string log = (dir / "args.log").string();
  const pid_t pid = pm::test::spawnBackground(args, log);
  const int code = pm::test::waitExit(pid, 120);
  return {code, pm::test::readFile(log)};
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// Whether `s` is well-formed UTF-8 (no stray or cut multi-byte characters).
bool validUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80                   ? 1
                       : (c >= 0xC2 && c <= 0xDF) ? 2
                       : (c >= 0xE0 && c <= 0xEF) ? 3
                       : (c >= 0xF0 && c <= 0xF4) ? 4
                                                  : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

}  // namespace

// A training length the engine cannot lay out (2^63-1 steps, or more than 10^7 microbatches over all
// stages) is a validation error naming the field (exit 2), before anything is recorded; so are the
// other step counts at 2^63-1.
TEST_F(Cli, OverlongTrainingIsRefusedBeforeAnythingIsRecorded) {
  const std::string huge = (dir_ / "huge.json").string();
  std::ofstream(huge) << R"({"name": "huge", "data": {"dataset": "synthetic"}, "training": {"steps": 9223372036854775807}})";
  auto r = runCmd(bin() + " validate " + huge);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("training.steps: expected an integer 0..10000000"), std::string::npos) << r.out;
  r = runCmd(bin() + " run " + huge + " --db " + db_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("training.steps: expected an integer 0..10000000"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("bad_alloc"), std::string::npos) << r.out;
  EXPECT_TRUE(!fs::exists(db_) || pm::RunStore(db_).listRuns().empty());
  r = runCmd(bin() + " validate " + exp("tiny-synthetic.json") + " --set training.steps=10000000 --set pipeline.microbatches=2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--set training.steps=10000000: a run has at most 10000000 microbatches over all its stages"),
            std::string::npos)
      << r.out;
  for (const std::string field : {"training.log_interval", "training.eval_interval", "training.checkpoint_every",
                                  "training.trace_steps", "pipemare.anneal_steps", "optimizer.schedule.step_size"}) {
    r = runCmd(bin() + " validate " + exp("tiny-synthetic.json") + " --set " + field + "=9223372036854775807");
    EXPECT_EQ(r.code, 2) << field << ": " << r.out;
    EXPECT_NE(r.out.find("--set " + field + "=9223372036854775807: expected an integer"), std::string::npos) << r.out;
  }
}

// Run ids are read by one rule on every verb that takes one: digits only, 1..2^63-1. A malformed or
// out-of-range id is a usage error naming the argument (exit 2), before any store is touched.
TEST_F(Cli, RunIdsAreCheckedWithTheArgumentNamed) {
  const std::string json = (dir_ / "out.json").string();
  const std::vector<std::pair<std::string, std::string>> verbs{  // command line with X for the id, the argument named
      {"runs show X", "RUN"},        {"runs tag X t", "RUN"},          {"runs note X text", "RUN"},
      {"runs delete X", "RUN"},      {"export X --json " + json, "RUN"}, {"compare 1 X", "RUN"},
      {"compare 1 --baseline X", "--baseline"}, {"run --resume X", "--resume"}, {"plan --against X", "--against"}};
  for (const auto& [line, place] : verbs) {
    for (const std::string bad : {"1abc", "0", "+5", "99999999999999999999"}) {
      std::string cmd = line;
      cmd.replace(cmd.find('X'), 1, bad);
      const auto r = runCmd(bin() + " --db " + db_ + " " + cmd);
      EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
      const std::string problem = bad == "99999999999999999999"
                                      ? "run id 99999999999999999999 is out of range (run ids go up to 9223372036854775807)"
                                      : "expected a run id (a positive whole number), found \"" + bad + "\"";
      EXPECT_NE(r.out.find("error: " + place + ": " + problem), std::string::npos) << cmd << ": " << r.out;
      EXPECT_EQ(r.out.find("Could not convert"), std::string::npos) << cmd << ": " << r.out;
      EXPECT_EQ(r.out.find("no run with id"), std::string::npos) << cmd << ": " << r.out;
    }
  }
  EXPECT_FALSE(fs::exists(db_));
  EXPECT_FALSE(fs::exists(json));
}

// An export onto a device that refuses the bytes (/dev/full) is one usage error (exit 2) that names
// the option and the file once and says nothing was exported.
// Another local user's traps beside the export's targets, and a careless umask: a link planted
// as "run.json.part" (the temporary's name once) pointing at a victim's file is never followed
// (temporaries have random names, created exclusively without following links), and under umask
// 000 the CSV folder the export makes is 0700 and its files 0644, never writable by others.
TEST_F(Cli, ExportFollowsNoPlantedLinkAndKeepsItsModesWhateverTheUmask) {
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --set training.steps=3");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string victim = (dir_ / "victim.txt").string();
  writeFile(victim, "the victim's own text\n");
  const std::string json = (dir_ / "run.json").string();
  fs::create_symlink(victim, json + ".part");
  const std::string csv = (dir_ / "csv").string();
  r = runCmd("bash -c \"umask 000; exec " + bin() + " --db " + db_ + " export 1 --json " + json + " --csv " + csv + "\" 2>&1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(readFile(victim), "the victim's own text\n") << "the export wrote through the planted link";
  EXPECT_NE(readFile(json).find("\"metrics_columns\""), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(csv.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(csv)) {
    ASSERT_EQ(::stat(f.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u) << f.path();
    ++files;
  }
  EXPECT_GT(files, 0u);
  ASSERT_EQ(::stat(json.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(Cli, ExportToAnUnwritableDestinationIsOneUsageError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --db " + db_ + " --quiet --set training.steps=3");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const std::string option : {"--json", "--chrome-trace"}) {
    const auto e = runCmd(bin() + " --db " + db_ + " export 1 " + option + " /dev/full");
    EXPECT_EQ(e.code, 2) << option << ": " << e.out;
    EXPECT_NE(e.out.find("error: " + option + " /dev/full: cannot write "), std::string::npos) << e.out;
    EXPECT_EQ(occurrences(e.out, "/dev/full"), 1u) << e.out;
    EXPECT_EQ(occurrences(e.out, "nothing exported"), 1u) << e.out;
    EXPECT_EQ(occurrences(e.out, "error:"), 1u) << e.out;
  }
}

// Names, tags, notes and log lines are stored exactly and shown escaped on the terminal: control
// characters (ESC, newline) and bidirectional controls (U+202E, U+2066) as \x1b, \n, \u202E, ...;
// multi-byte characters are never cut, and a long name is fitted by characters, not bytes.
TEST_F(Cli, ControlAndBidiCharactersAreEscapedOnTheTerminalAndKeptInTheStore) {
  const std::string u = "\xC3\xBC", rocket = "\xF0\x9F\x9A\x80";
  const std::string name = "\x1b[31mred\xE2\x80\xAEtxt.exe";
  const std::string tag = u + rocket, bidiTag = "bidi\xE2\x81\xA6x";
  const std::string note = "line one\nline two\x1b[0m";
  std::string longName;  // 60 characters, 180 bytes
  for (int i = 0; i < 30; ++i) longName += u + rocket;
  auto r = runArgs(dir_, {"run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--set", "training.steps=2", "--name", name,
                          "--tag", tag, "--tag", bidiTag});
  ASSERT_EQ(r.code, 0) << r.out;
  r = runArgs(dir_, {"run", exp("tiny-synthetic.json"), "--db", db_, "--quiet", "--set", "training.steps=2", "--name", longName});
  ASSERT_EQ(r.code, 0) << r.out;
  r = runArgs(dir_, {"--db", db_, "runs", "note", "1", note});
  ASSERT_EQ(r.code, 0) << r.out;

  const auto safe = [](const std::string& out) {
    return validUtf8(out) && out.find('\x1b') == std::string::npos && out.find("\xE2\x80\xAE") == std::string::npos &&
           out.find("\xE2\x81\xA6") == std::string::npos;
  };
  const std::string shownName = "\\x1b[31mred\\u202Etxt.exe";
  auto list = runArgs(dir_, {"--db", db_, "runs", "list"});
  ASSERT_EQ(list.code, 0) << list.out;
  EXPECT_TRUE(safe(list.out)) << list.out;
  EXPECT_NE(list.out.find(shownName), std::string::npos) << list.out;
  EXPECT_NE(list.out.find(tag + ",bidi\\u2066x"), std::string::npos) << list.out;  // the tags whole
  std::string fitted;  // 48 characters: the head's 24 and the tail's 23 around "~"
  for (int i = 0; i < 12; ++i) fitted += u + rocket;
  fitted += "~" + rocket;
  for (int i = 0; i < 11; ++i) fitted += u + rocket;
  EXPECT_NE(list.out.find(fitted), std::string::npos) << list.out;

  auto show = runArgs(dir_, {"--db", db_, "runs", "show", "1"});
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_TRUE(safe(show.out)) << show.out;
  EXPECT_NE(show.out.find("run 1: " + shownName), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("notes: line one\\nline two\\x1b[0m"), std::string::npos) << show.out;
  auto compare = runArgs(dir_, {"--db", db_, "compare", "1", "2"});
  ASSERT_EQ(compare.code, 0) << compare.out;
  EXPECT_TRUE(safe(compare.out)) << compare.out;
  EXPECT_NE(compare.out.find(shownName), std::string::npos) << compare.out;

  // The store and --json keep the exact text.
  auto json = runArgs(dir_, {"--db", db_, "runs", "list", "--json"});
  ASSERT_EQ(json.code, 0) << json.out;
  bool seen = false;
  for (const auto& run : nlohmann::json::parse(json.out))
    if (run["id"] == 1) {
      seen = true;
      EXPECT_EQ(run["name"], name);
      EXPECT_EQ(run["notes"], note);
      EXPECT_EQ(run["tags"].size(), 4u) << run["tags"].dump();  // the preset's two and the two given
      EXPECT_NE(std::find(run["tags"].begin(), run["tags"].end(), bidiTag), run["tags"].end()) << run["tags"].dump();
    }
  EXPECT_TRUE(seen) << json.out;
  pm::RunStore store(db_, /*readOnly=*/true);
  EXPECT_EQ(store.getRun(1)->name, name);
  EXPECT_EQ(store.getRun(2)->name, longName);
}

// --db (and export --csv) make only the last missing folder of the path; deeper missing folders are
// a usage error naming the option and the first missing folder (exit 2), and nothing is made.
TEST_F(Cli, MissingFoldersAreNamedNotMade) {
  const std::string deep = (dir_ / "missing" / "deeper" / "x.db").string();
  const std::string missing = (dir_ / "missing").string();
  const std::string refusal = "error: --db " + deep + ": the folder " + missing + " does not exist";
  auto r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --quiet --set training.steps=2 --db " + deep);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(refusal), std::string::npos) << r.out;
  r = runCmd(bin() + " sweep " + exp("tiny-synthetic.json") + " --grid optimizer.lr=0.01,0.1 --db " + deep);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(refusal), std::string::npos) << r.out;
  r = runCmd(bin() + " --db " + deep + " runs import " + db_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(refusal), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(missing));

  // One missing level is made.
  const std::string one = (dir_ / "new" / "x.db").string();
  r = runCmd(bin() + " run " + exp("tiny-synthetic.json") + " --quiet --set training.steps=2 --db " + one);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_directory(dir_ / "new"));
  const std::string csv = (dir_ / "nope" / "csv").string();
  r = runCmd(bin() + " --db " + one + " export 1 --csv " + csv);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("error: --csv " + csv + ": the folder " + (dir_ / "nope").string() + " does not exist"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "nope"));
  r = runCmd(bin() + " --db " + one + " export 1 --csv " + (dir_ / "csv").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "csv" / "metrics.csv"));
}

// validate --json and models --json say a refusal as data on stdout, for a program reading them
// (the Design tab's file checks): {"error": {message, place, exit_code}}; a valid design is
// {"valid": true, ...}.
TEST_F(Cli, ValidateAndModelsGiveTheirVerdictAsJson) {
  const std::string bad = (dir_ / "bad.json").string();
  {
    std::ofstream f(bad);
    f << R"({"model": {"name": "mlp"}, "pipeline": {"partition": {"method": "magic"}}})";
  }
  auto r = runCmd("(" + bin() + " validate " + bad + " --json 2>/dev/null)");
  EXPECT_EQ(r.code, 2) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["exit_code"], 2);
  EXPECT_NE(j["error"]["place"].get<std::string>().find("pipeline.partition.method"), std::string::npos) << r.out;
  EXPECT_NE(j["error"]["place"].get<std::string>().find(bad), std::string::npos) << r.out;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("magic"), std::string::npos) << r.out;

  r = runCmd("(" + bin() + " validate " + exp("tiny-synthetic.json") + " --json 2>/dev/null)");
  EXPECT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["valid"], true);
  EXPECT_EQ(j["model"], "mlp");

  const std::string missing = (dir_ / "no-such-model.pt").string();
  r = runCmd("(" + bin() + " models --json --file " + missing + " 2>/dev/null)");
  EXPECT_EQ(r.code, 2) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["place"], missing) << r.out;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("no such file"), std::string::npos) << r.out;
}
