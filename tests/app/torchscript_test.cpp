// TorchScript models and tensor files through the `pipemare` command line, as a user runs them:
// an experiment that names its files relative to itself validates, lists, trains in single and
// real mode under every schedule with the same weights, records the model file's identity,
// resumes exactly after a stop, and refuses bad files with exit 2 and nothing recorded.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/store/run_store.h"
#include "core/util/file_digest.h"
#include "tests/app/app_test_support.h"
#include "tests/support/script_models.h"

namespace fs = std::filesystem;
using pm::test::readFile;
using pm::test::runCmd;

namespace {

class TorchScriptCli : public pm::test::AppTest {
 protected:
  void SetUp() override {
    pm::test::scriptMlp().save((dir_ / "mlp.pt").string());
    auto [x, y] = pm::test::imageProblem(96, 7);
    pm::test::saveTensorFile((dir_ / "train.pt").string(), x, y);
    auto [ex, ey] = pm::test::imageProblem(32, 8);
    pm::test::saveTensorFile((dir_ / "eval.pt").string(), ex, ey);
    writeExperiment("exp.json", "mlp.pt", "train.pt");
  }

  // An experiment in the test folder naming its files relative to itself.
  std::string writeExperiment(const std::string& name, const std::string& model, const std::string& data,
                              const std::string& extra = "", const std::string& evalData = "eval.pt") {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << R"({"name": "script", "model": {"name": "torchscript", "path": ")" << model
                        << R"("}, "data": {"dataset": "tensors", "path": ")" << data
                        << R"(", "eval_path": ")" << evalData << R"(", "batch_size": 16},
 "pipeline": {"stages": 2, "microbatches": 4}, "optimizer": {"lr": 0.05, "momentum": 0.9},
 "training": {"steps": 4, "log_interval": 1, "seed": 3)" << extra << R"(}, "execution": {"timeout_s": 30}})";
    return path;
  }

  std::string run(const std::string& experiment, const std::string& args) {
    return bin() + " run " + experiment + " --db " + db_ + " --quiet " + args;
  }

  static std::vector<torch::Tensor> state(const fs::path& dir, int stages) { return pm::test::savedStages(dir.string(), stages); }

  static void expectEqualStates(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    ASSERT_FALSE(a.empty()) << what;
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(torch::equal(a[i], b[i])) << what << ": tensor " << i << " differs by "
                                            << (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>();
  }
};

}  // namespace

TEST_F(TorchScriptCli, ValidateListAndRecordTheModelFile) {
  auto r = runCmd(bin() + " validate " + (dir_ / "exp.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("valid (torchscript"), std::string::npos) << r.out;
  r = runCmd(bin() + " models --file " + (dir_ / "mlp.pt").string() + " --data " + (dir_ / "train.pt").string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* line : {"fc1", "bn1", "fc2", "head", "[32]", "[16]", "[10]", "4 units, 25882 parameters"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in\n" << r.out;
  r = runCmd(bin() + " models --json --file " + (dir_ / "mlp.pt").string() + " --input-shape 1,28,28");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["units"].size(), 4u);
  EXPECT_EQ(j["units"][3]["output_shape"], nlohmann::json::array({10}));
  EXPECT_EQ(j["units"][0]["parameters"], 784 * 32 + 32);

  // The planner profiles the file's units and predicts every schedule for the design.
  r = runCmd(bin() + " plan --experiment " + (dir_ / "exp.json").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["model"], "mlp.pt");
  EXPECT_EQ(plan["stages"], 2);
  std::set<std::string> schedules;
  for (const auto& row : plan["schedules"]) schedules.insert(row.value("schedule", std::string()));
  for (const char* s : {"gpipe", "1f1b", "zb-h1", "pipedream", "pipedream-2bw", "pipemare"})
    EXPECT_TRUE(schedules.count(s)) << s << " in " << r.out.substr(0, 2000);
  // Partitioned by measured time: the file's units are timed like the zoo's.
  r = runCmd(run((dir_ / "exp.json").string(), "--set pipeline.partition.method=time --set training.steps=2"));
  ASSERT_EQ(r.code, 0) << r.out;

  // Run from another directory: the experiment's paths are its own folder's.
  r = runCmd("cd / && " + run((dir_ / "exp.json").string(), ""));
  ASSERT_EQ(r.code, 0) << r.out;
  pm::RunStore store(db_);
  const auto rec = store.getRun(2);
  ASSERT_TRUE(rec);
  EXPECT_EQ(store.getRun(1)->partition.size(), 2u);
  const pm::FileDigest want = pm::digestFile((dir_ / "mlp.pt").string());
  EXPECT_EQ(rec->model_file.path, want.path);
  EXPECT_EQ(rec->model_file.size, want.size);
  EXPECT_EQ(rec->model_file.sha256, want.sha256);
  EXPECT_EQ(rec->model, "mlp.pt");
  r = runCmd(bin() + " runs show 2 --db " + db_);
  EXPECT_NE(r.out.find("sha256 " + want.sha256), std::string::npos) << r.out;
}

// Real mode (one process per stage) trains the weights single mode does, bit for bit, under
// every schedule.
TEST_F(TorchScriptCli, RealModeEqualsSingleModeUnderEverySchedule) {
  const std::string exp = (dir_ / "exp.json").string();
  for (const std::string schedule : {"gpipe", "1f1b", "zb-h1", "pipedream", "pipedream-2bw", "pipemare"}) {
    std::string extra = " --set pipeline.schedule=" + schedule;
    if (schedule == "pipedream-2bw") extra += " --set pipeline.update_interval=2";
    if (schedule == "pipemare") extra += " --set pipemare.t1=true --set pipemare.t2=true";
    const fs::path single = dir_ / (schedule + "-single"), real = dir_ / (schedule + "-real");
    auto r = runCmd(run(exp, extra + " --set execution.mode=single --save-state " + single.string()));
    ASSERT_EQ(r.code, 0) << schedule << "\n" << r.out;
    r = runCmd(run(exp, extra + " --set execution.mode=real --save-state " + real.string()));
    ASSERT_EQ(r.code, 0) << schedule << "\n" << r.out;
    expectEqualStates(state(single, 2), state(real, 2), schedule);
  }
  // The split backward through a TorchScript unit: zb-h1 trains what 1f1b trains, bit for bit.
  expectEqualStates(state(dir_ / "1f1b-single", 2), state(dir_ / "zb-h1-single", 2), "zb-h1 against 1f1b");
  pm::RunStore store(db_);
  for (const auto& rec : store.listRuns()) EXPECT_EQ(rec.status, pm::RunStatus::Finished) << rec.status_message;
}

// A TorchScript model cut into 4 stages on 2 ranks (interleaved 1F1B with v = 2, ZB-V): the weights
// of 1f1b on 4 ranks, bit for bit, in single and real mode (ZB-V's split backward through the
// scripted units too).
TEST_F(TorchScriptCli, ChunkedSchedulesTrainOneFOneBsWeights) {
  const std::string exp = (dir_ / "exp.json").string();
  auto r = runCmd(run(exp, " --set pipeline.stages=4 --set pipeline.schedule=1f1b --save-state " + (dir_ / "1f1b").string()));
  ASSERT_EQ(r.code, 0) << r.out;
  for (const std::string schedule : {"interleaved-1f1b", "zb-v"})
    for (const std::string mode : {"single", "real"}) {
      const fs::path saved = dir_ / (schedule + "-" + mode);
      r = runCmd(run(exp, " --set pipeline.schedule=" + schedule + " --set execution.mode=" + mode + " --save-state " + saved.string()));
      ASSERT_EQ(r.code, 0) << schedule << " " << mode << "\n" << r.out;
      expectEqualStates(state(dir_ / "1f1b", 4), state(saved, 4), schedule + " " + mode);
    }
}

// A run stopped with Ctrl-C resumes from its checkpoint to the weights of an uninterrupted run; a
// model file changed in between is refused.
TEST_F(TorchScriptCli, StoppedRunResumesToTheUninterruptedWeightsAndRefusesAChangedFile) {
  const std::string exp = writeExperiment("long.json", "mlp.pt", "train.pt");
  const std::vector<std::string> sets{"--set", "training.steps=400", "--set", "pipeline.schedule=pipemare",
                                      "--set", "pipemare.t1=true", "--set", "training.trace_steps=0"};
  std::vector<std::string> args{bin(), "run", exp, "--db", db_, "--quiet", "--save-state", (dir_ / "resumed").string()};
  args.insert(args.end(), sets.begin(), sets.end());
  const std::string log = (dir_ / "run.log").string();
  const pid_t pid = pm::test::spawnBackground(args, log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(pm::test::waitUntil([&] { return pm::test::lossPoints(db_, 1) >= 3; }, 60)) << readFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(pm::test::waitExit(pid, 30), 130) << readFile(log);
  {
    pm::RunStore store(db_);
    ASSERT_EQ(store.getRun(1)->status, pm::RunStatus::Stopped) << "the run ended before the stop; make it longer";
  }
  // Another model under the run's file name: refused, and the run stays resumable.
  const std::string original = readFile((dir_ / "mlp.pt").string());
  pm::test::scriptMlp(/*seed=*/6).save((dir_ / "mlp.pt").string());
  auto r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("changed since the run trained it"), std::string::npos) << r.out;
  ASSERT_TRUE(pm::test::writeFile((dir_ / "mlp.pt").string(), original));
  r = runCmd(bin() + " run --resume 1 --db " + db_ + " --quiet --save-state " + (dir_ / "resumed").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::string cmd = run(exp, "--save-state " + (dir_ / "full").string());
  for (const auto& s : sets) cmd += " " + s;
  r = runCmd(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  expectEqualStates(state(dir_ / "full", 2), state(dir_ / "resumed", 2), "resumed against uninterrupted");
}

// Each bad file: exit 2, a message naming the file, and no run in the store.
TEST_F(TorchScriptCli, BadFilesAreRefusedWithExitTwoAndNothingRecorded) {
  std::ofstream(dir_ / "text.pt") << "not a model";
  const std::string good = readFile((dir_ / "mlp.pt").string());
  ASSERT_TRUE(pm::test::writeFile((dir_ / "cut.pt").string(), good.substr(0, good.size() / 2)));
  torch::manual_seed(1);
  pm::test::scriptSequential({{"fc", pm::test::scriptLinear("Fc", 784, 10, false)}}, "__torch__.MyNet")
      .save((dir_ / "net.pt").string());
  torch::jit::Module pair = pm::test::scriptModule("__torch__.Pair");
  pair.define("def forward(self, x):\n    return x, x\n");
  pm::test::scriptSequential({{"fc", pm::test::scriptLinear("Fc", 784, 10, false)}, {"split", pair}})
      .save((dir_ / "two.pt").string());
  c10::Dict<std::string, torch::Tensor> onlyY;
  onlyY.insert("y", torch::zeros({8}, torch::kLong));
  const auto bytes = torch::pickle_save(c10::IValue(onlyY));
  ASSERT_TRUE(pm::test::writeFile((dir_ / "noX.pt").string(), std::string(bytes.begin(), bytes.end())));
  pm::test::saveTensorFile((dir_ / "labels.pt").string(), torch::randn({8, 1, 28, 28}), torch::full({8}, 10, torch::kLong));
  pm::test::saveTensorFile((dir_ / "shape.pt").string(), torch::randn({8, 1, 20, 20}), torch::zeros({8}, torch::kLong));

  const struct {
    std::string model, data, says;
  } cases[] = {
      {"text.pt", "train.pt", "text.pt: not a readable TorchScript file"},
      {"cut.pt", "train.pt", "cut.pt: not a readable TorchScript file"},
      {"net.pt", "train.pt", "net.pt: the model is a __torch__.MyNet, not an nn.Sequential"},
      {"two.pt", "train.pt", "two.pt: unit 1 (\"split\""},
      {"mlp.pt", "noX.pt", "noX.pt: has no tensor \"x\""},
      {"mlp.pt", "labels.pt", "labels.pt: tensor \"y\" holds labels 10..10, outside the 10 classes"},
      {"mlp.pt", "shape.pt", "shape.pt: one sample of tensor \"x\" (shape [1, 20, 20], Float) does not fit"},
  };
  for (const auto& c : cases) {
    const std::string exp = writeExperiment("bad.json", c.model, c.data);
    for (const std::string verb : {"validate", "run"}) {
      const auto r = runCmd(verb == "run" ? run(exp, "") : bin() + " validate " + exp);
      EXPECT_EQ(r.code, 2) << verb << " " << c.model << " " << c.data << "\n" << r.out;
      EXPECT_NE(r.out.find(c.says), std::string::npos) << verb << ": expected \"" << c.says << "\" in\n" << r.out;
    }
  }
  pm::RunStore store(db_);
  EXPECT_TRUE(store.listRuns().empty());
}

// A worker whose model file is not the run's refuses to start, naming its host and rank.
TEST_F(TorchScriptCli, AWorkerRefusesAModelFileThatIsNotTheRuns) {
  const std::string exp = writeExperiment("one.json", "mlp.pt", "train.pt");
  const auto r = runCmd(bin() + " worker --config " + exp + " --rank 0 --world-size 2 --store-file " +
                        (dir_ / "store").string() + " --model-sha256 " + std::string(64, '0'));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("the model file on "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(rank 0) has SHA-256 "), std::string::npos) << r.out;
}

// Two launchers of one multi-node run whose model files differ: node 0 refuses node 1 by name and
// the run fails on both nodes.
TEST_F(TorchScriptCli, ANodeWithAnotherModelFileIsRefusedByName) {
  fs::create_directories(dir_ / "node1");
  pm::test::scriptMlp(/*seed=*/6).save((dir_ / "node1" / "mlp.pt").string());
  const std::string exp0 = writeExperiment("multi.json", "mlp.pt", "train.pt");
  const std::string exp1 = writeExperiment("node1/multi.json", "mlp.pt", "../train.pt", "", "../eval.pt");
  const int port = pm::test::freePortPair();
  auto launcher = [&](int node, const std::string& exp, const std::string& db) {
    return pm::test::spawnBackground({bin(), "run", exp, "--db", db, "--nnodes", "2", "--node-rank", std::to_string(node),
                                      "--master-addr", "127.0.0.1", "--master-port", std::to_string(port), "--quiet", "--set",
                                      "execution.mode=real"},
                                     (dir_ / ("node" + std::to_string(node) + ".log")).string());
  };
  const pid_t n1 = launcher(1, exp1, (dir_ / "remote.db").string());
  const pid_t n0 = launcher(0, exp0, db_);
  ASSERT_GT(n0, 0);
  ASSERT_GT(n1, 0);
  EXPECT_EQ(pm::test::waitExit(n0, 120), 1) << readFile((dir_ / "node0.log").string());
  EXPECT_NE(pm::test::waitExit(n1, 60), 0) << readFile((dir_ / "node1.log").string());
  pm::RunStore store(db_);
  const auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Failed);
  EXPECT_NE(runs[0].status_message.find("node 1's model file differs from node 0's"), std::string::npos) << runs[0].status_message;
  EXPECT_NE(readFile((dir_ / "node1.log").string()).find("model file differs"), std::string::npos)
      << readFile((dir_ / "node1.log").string());
}
