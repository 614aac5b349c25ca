// Models and data made in Python, as users make them: scripts/export-model.py writes a CNN, a
// residual network and a Transformer as scripted nn.Sequentials with torch.save data files
// (Debian's python3-torch, installed by scripts/setup.sh), and each trains through `pipemare run`
// under every schedule, in single and real mode with the same weights. The exported CNN, given the
// zoo cnn's initial weights, trains to the zoo cnn's weights: the loader adds and loses nothing.
#include <gtest/gtest.h>

#include <map>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>

#include "core/engine/pipeline_engine.h"
#include "core/models/model_zoo.h"
#include "tests/app/app_test_support.h"
#include "tests/support/script_models.h"
#include "tests/support/tiny_experiment.h"

namespace fs = std::filesystem;
using pm::test::readFile;
using pm::test::runCmd;

namespace {

// The Python whose PyTorch writes the models: the build's own (PIPEMARE_TEST_PYTHON: Debian's
// /usr/bin/python3 for the Debian build, the torch 2.11 environment's for the torch2 preset), so
// that files written by today's PyTorch are tested on the build that runs them.
const char* kPython = PIPEMARE_TEST_PYTHON;

class PythonModels : public pm::test::AppTest {
 protected:
  // Exports `model` (and its data) into the test folder; fails the test when Python cannot.
  void exportModel(const std::string& model, const std::string& extra = "", const std::string& python = kPython) {
    const auto r = runCmd(python + " " + pm::test::sourcePath("scripts/export-model.py") + " --model " + model +
                          " --out " + (dir_ / (model + ".pt")).string() + " --data-dir " + (dir_ / model).string() +
                          " --samples 64 " + extra);
    ASSERT_EQ(r.code, 0) << "scripts/export-model.py needs " << python << " with PyTorch (scripts/setup.sh installs Debian's "
                         << "python3-torch, scripts/setup-torch2.sh torch 2.11)\n" << r.out;
  }

  std::string experiment(const std::string& model, const std::string& file) {
    const std::string path = (dir_ / (file + ".json")).string();
    std::ofstream(path) << R"({"name": ")" << file << R"(", "model": {"name": "torchscript", "path": ")" << file
                        << R"(.pt"}, "data": {"dataset": "tensors", "path": ")" << model << R"(/train.pt", "eval_path": ")"
                        << model << R"(/eval.pt", "batch_size": 16},
 "pipeline": {"stages": 2, "microbatches": 4}, "optimizer": {"lr": 0.02, "momentum": 0.9},
 "training": {"steps": 3, "log_interval": 1, "seed": 3}, "execution": {"timeout_s": 60}})";
    return path;
  }

  static std::vector<torch::Tensor> state(const fs::path& dir, int stages) { return pm::test::savedStages(dir.string(), stages); }

  // Every schedule, single then real mode, the same weights.
  void trainUnderEverySchedule(const std::string& exp, const std::string& what) {
    for (const std::string schedule : {"gpipe", "1f1b", "zb-h1", "pipedream", "pipedream-2bw", "pipemare"}) {
      std::string extra = " --set pipeline.schedule=" + schedule;
      if (schedule == "pipedream-2bw") extra += " --set pipeline.update_interval=2";
      if (schedule == "pipemare") extra += " --set pipemare.t1=true --set pipemare.t2=true";
      std::vector<std::vector<torch::Tensor>> states;
      for (const std::string mode : {"single", "real"}) {
        const fs::path out = dir_ / (what + "-" + schedule + "-" + mode);
        const auto r = runCmd(bin() + " run " + exp + " --db " + db_ + " --quiet" + extra + " --set execution.mode=" + mode +
                              " --save-state " + out.string());
        ASSERT_EQ(r.code, 0) << what << " " << schedule << " " << mode << "\n" << r.out;
        states.push_back(state(out, 2));
      }
      ASSERT_EQ(states[0].size(), states[1].size());
      for (size_t i = 0; i < states[0].size(); ++i)
        EXPECT_TRUE(torch::equal(states[0][i], states[1][i])) << what << " " << schedule << ": tensor " << i;
    }
  }
};

}  // namespace

TEST_F(PythonModels, ExportedCnnTrainsUnderEveryScheduleInSingleAndRealMode) {
  exportModel("cnn");
  trainUnderEverySchedule(experiment("cnn", "cnn"), "cnn");
}

TEST_F(PythonModels, ExportedResidualNetworkTrainsUnderEveryScheduleInSingleAndRealMode) {
  exportModel("resnet");
  trainUnderEverySchedule(experiment("resnet", "resnet"), "resnet");
}

TEST_F(PythonModels, ExportedTransformerTrainsUnderEveryScheduleInSingleAndRealMode) {
  exportModel("transformer");
  const std::string exp = experiment("transformer", "transformer");
  trainUnderEverySchedule(exp, "transformer");
  // Integer [N, T] labels: the next-token loss, learned.
  const auto r = runCmd(bin() + " run " + exp + " --db " + db_ + " --quiet --set training.steps=30 --set pipeline.schedule=1f1b");
  ASSERT_EQ(r.code, 0) << r.out;
  pm::RunStore store(db_);
  const auto loss = store.loadMetric(store.listRuns().front().id, "train/loss");
  ASSERT_GE(loss.size(), 2u);
  EXPECT_GT(loss.front().value, 5.0);  // log(256) = 5.5 at the start
  EXPECT_LT(loss.back().value, loss.front().value - 1.0);
}

// A model file from the other LibTorch build's PyTorch. On Debian's 1.13 build, one written by torch
// 2.11 (scripts/setup-torch2.sh's Python) is refused at validation with exit 2, naming both
// versions; on the torch2 build, one written by Debian's 1.13 loads and trains, its loss falling.
TEST_F(PythonModels, AFileFromTheOtherBuildsPyTorch) {
  const bool old = TORCH_VERSION_MAJOR < 2;
  const std::string other = old ? "/opt/pipemare/torch-2.11.0/bin/python" : "/usr/bin/python3";
  if (!fs::exists(other)) GTEST_SKIP() << "no " << other << " (scripts/setup-torch2.sh, scripts/setup.sh install it)";
  exportModel("cnn", "", other);
  const std::string exp = experiment("cnn", "cnn");
  if (old) {
    const auto r = runCmd(bin() + " validate " + exp);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("cnn.pt: was written by PyTorch 2.11.0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("newer than this build's LibTorch 1.13.0"), std::string::npos) << r.out;
    return;
  }
  const auto r = runCmd(bin() + " run " + exp + " --db " + db_ + " --quiet --set training.steps=20");
  ASSERT_EQ(r.code, 0) << r.out;
  pm::RunStore store(db_);
  const auto loss = store.loadMetric(store.listRuns().front().id, "train/loss");
  ASSERT_EQ(loss.size(), 20u);
  EXPECT_LT(loss.back().value, loss.front().value) << "the 1.13 file did not train on " << TORCH_VERSION_MAJOR << "."
                                                   << TORCH_VERSION_MINOR;
}

// torch.jit.trace bakes attribute values (BatchNorm's momentum) into the graph: a traced CNN
// trains too, recompute included: its loss falls, and every stage recomputed its forwards.
TEST_F(PythonModels, TracedCnnTrainsWithRecompute) {
  exportModel("cnn", "--trace");
  const auto r = runCmd(bin() + " run " + experiment("cnn", "cnn") + " --db " + db_ +
                        " --quiet --set pipeline.recompute=true --set training.steps=20");
  ASSERT_EQ(r.code, 0) << r.out;
  pm::RunStore store(db_);
  const int64_t run = store.listRuns().front().id;
  const auto loss = store.loadMetric(run, "train/loss");
  ASSERT_EQ(loss.size(), 20u);
  EXPECT_LT(loss.back().value, loss.front().value) << "the traced CNN did not train";
  std::map<int, double> recomputed;
  for (const auto& p : store.loadStageMetric(run, "recomputed")) recomputed[p.stage] += p.value;
  ASSERT_EQ(recomputed.size(), static_cast<size_t>(store.listRuns().front().stages));
  for (const auto& [stage, n] : recomputed) EXPECT_GT(n, 0) << "stage " << stage << " recomputed nothing";
}

// The exported CNN has the zoo cnn's units and parameters in the same order; with the zoo model's
// initial weights copied into it, 20 steps of training reach the zoo cnn's weights (allclose:
// the same kernels run in the same order, so the states agree to the last bits).
TEST_F(PythonModels, ExportedCnnWithTheZoosInitialWeightsTrainsToTheZoosWeights) {
  exportModel("cnn");
  pm::Experiment zoo = pm::test::tinyExperiment("cnn");
  zoo.data.synthetic_samples = 128;
  zoo.data.batch_size = 16;
  zoo.pipeline.microbatches = 2;
  zoo.training.steps = 20;
  zoo.optimizer.lr = 0.02;

  torch::jit::Module script = torch::jit::load((dir_ / "cnn.pt").string());
  auto units = pm::buildModel("cnn", zoo.training.seed);
  std::vector<torch::Tensor> zooTensors;
  for (auto& u : units)
    for (const auto& p : u.module.ptr()->parameters()) zooTensors.push_back(p.detach());
  std::vector<torch::Tensor> zooBuffers;
  for (auto& u : units)
    for (const auto& b : u.module.ptr()->buffers()) zooBuffers.push_back(b.detach());
  std::vector<torch::Tensor> scriptParams, scriptBuffers;
  for (const auto& p : script.parameters()) scriptParams.push_back(p);
  for (const auto& b : script.buffers()) scriptBuffers.push_back(b);
  ASSERT_EQ(scriptParams.size(), zooTensors.size());
  ASSERT_EQ(scriptBuffers.size(), zooBuffers.size());
  {
    torch::NoGradGuard ng;
    for (size_t i = 0; i < scriptParams.size(); ++i) {
      ASSERT_EQ(scriptParams[i].sizes(), zooTensors[i].sizes()) << "parameter " << i;
      scriptParams[i].copy_(zooTensors[i]);
    }
    for (size_t i = 0; i < scriptBuffers.size(); ++i) scriptBuffers[i].copy_(zooBuffers[i]);
  }
  script.save((dir_ / "cnn-zoo-init.pt").string());

  pm::Experiment fromFile = zoo;
  fromFile.model.name = pm::kTorchScriptModel;
  fromFile.model.path = (dir_ / "cnn-zoo-init.pt").string();
  std::vector<std::vector<torch::Tensor>> states;
  for (const auto* e : {&zoo, &fromFile}) {
    pm::MemorySink sink;
    pm::EngineOptions opts;
    opts.saveStateDir = (dir_ / (e == &zoo ? "zoo" : "script")).string();
    ASSERT_EQ(pm::runSingleProcess(*e, sink, nullptr, opts).status, pm::RunStatus::Finished);
    states.push_back(state(opts.saveStateDir, 1));
  }
  ASSERT_EQ(states[0].size(), states[1].size());
  double worst = 0;
  for (size_t i = 0; i < states[0].size(); ++i) {
    const auto a = states[0][i].to(torch::kDouble), b = states[1][i].to(torch::kDouble);
    worst = std::max(worst, ((a - b).abs() / (1e-6 + 1e-5 * b.abs())).max().item<double>());
    EXPECT_TRUE(torch::allclose(states[0][i], states[1][i], 1e-5, 1e-6)) << "tensor " << i;
  }
  std::printf("zoo cnn against the exported cnn after 20 steps: %.3g of the allclose tolerance\n", worst);
  // Training moved the weights (the comparison is not of two untouched copies).
  EXPECT_FALSE(torch::allclose(states[0][0], zooTensors[0]));
}

// A zip bomb: an exported model, and its data file, each given one more record of 200 MiB of
// zeros deflated to about 200 KiB (Python's zipfile). `validate` refuses both with exit 2 naming the
// file and the record, before LibTorch inflates anything; the files as exported validate.
TEST_F(PythonModels, AZipBombModelOrDataFileIsRefusedUnread) {
  exportModel("cnn");
  const std::string exp = experiment("cnn", "cnn");
  const auto fine = runCmd(bin() + " validate " + exp + " 2>&1");
  ASSERT_EQ(fine.code, 0) << fine.out;
  for (const std::string file : {"cnn.pt", "cnn/train.pt"}) {
    SCOPED_TRACE(file);
    const std::string path = (dir_ / file).string();
    const std::string saved = readFile(path);
    const auto added = runCmd(std::string(kPython) +
                              " -c \"import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], 'a', compression=zipfile.ZIP_DEFLATED); "
                              "z.writestr('bomb/data/99', bytes(200 << 20)); z.close()\" " + path + " 2>&1");
    ASSERT_EQ(added.code, 0) << added.out;
    ASSERT_LT(fs::file_size(path), saved.size() + (2u << 20)) << "the record was not deflated";
    const auto r = runCmd(bin() + " validate " + exp + " 2>&1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(path), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("record bomb/data/99 inflates"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("zip bomb"), std::string::npos) << r.out;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << saved;
  }
}

// A first stage of units without parameters (nn.Flatten alone, where a partition puts it) has no
// graph to differentiate: the run trains in both modes instead of failing inside autograd. And a
// model whose loss is NaN from the first step ends diverged in real mode with the result line, its
// output free of LibTorch's C++ stack frames.
TEST_F(PythonModels, AParameterFreeFirstStageTrainsAndANanModelSaysSoPlainly) {
  const std::string flat = (dir_ / "flat.pt").string(), nan = (dir_ / "nan.pt").string();
  // torch.jit.script reads a module's source: the script is a file.
  const std::string script = (dir_ / "make.py").string();
  std::ofstream(script) << "import sys, torch, torch.nn as nn\n"
                           "class Log(nn.Module):\n"
                           "    def forward(self, x):\n"
                           "        return torch.log(x - 1000.0)\n"
                           "torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(784, 10))).save(sys.argv[1])\n"
                           "torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(784, 10), Log())).save(sys.argv[2])\n";
  const auto made = runCmd(std::string(kPython) + " " + script + " " + flat + " " + nan + " 2>&1");
  ASSERT_EQ(made.code, 0) << made.out;
  const std::string common = " --db " + db_ + " --set model.name=torchscript --set pipeline.stages=2 --set pipeline.microbatches=2"
                             " --set training.steps=5 --set training.log_interval=1 --set execution.timeout_s=30";
  for (const std::string mode : {"single", "real"}) {
    const auto r = runCmd(bin() + " run tiny-synthetic" + common + " --set model.path=" + flat + " --set execution.mode=" + mode + " 2>&1");
    EXPECT_EQ(r.code, 0) << mode << "\n" << r.out;
    EXPECT_NE(r.out.find("partition: [0,1) [1,2)"), std::string::npos) << "the Flatten alone on stage 0: " << r.out;
  }
  const auto r = runCmd(bin() + " run tiny-synthetic" + common + " --set model.path=" + nan + " --set execution.mode=real 2>&1");
  EXPECT_EQ(r.out.find("frame #"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Exception raised from"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("type_error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("diverged: loss is not finite"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stored as run 3"), std::string::npos) << r.out;
}
