// TorchScript models and tensor files through the engine: a scripted nn.Sequential made in C++
// trains at P = 1 exactly as a plain LibTorch loop over the loaded module does, a recomputed
// forward leaves its BatchNorm statistics alone, and bad data is refused before a run starts with
// a message naming the file and the tensor.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/engine/batch_source.h"
#include "core/engine/input_check.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/run_outcome.h"
#include "core/util/errors.h"
#include "tests/support/script_models.h"
#include "tests/support/test_support.h"

using namespace pm;
namespace fs = std::filesystem;

namespace {

struct ScriptCase {
  test::TempDir tmp;
  Experiment e;
  ScriptCase() {
    test::scriptMlp().save(tmp.file("mlp.pt"));
    auto [x, y] = test::imageProblem(64, 7);
    test::saveTensorFile(tmp.file("train.pt"), x, y);
    auto [ex, ey] = test::imageProblem(16, 8);
    test::saveTensorFile(tmp.file("eval.pt"), ex, ey);
    e.name = "script";
    e.model.name = kTorchScriptModel;
    e.model.path = tmp.file("mlp.pt");
    e.data.dataset = DatasetKind::Tensors;
    e.data.path = tmp.file("train.pt");
    e.data.eval_path = tmp.file("eval.pt");
    e.data.batch_size = 16;
    e.data.shuffle = false;
    e.optimizer.lr = 0.05;
    e.optimizer.momentum = 0.9;
    e.training.steps = 8;
    e.training.log_interval = 1;
    e.training.seed = 3;
  }
};

std::vector<torch::Tensor> loadState(const fs::path& file) {
  std::vector<torch::Tensor> t;
  torch::load(t, file.string());
  return t;
}

std::string dataRefusal(const Experiment& e) {
  try {
    checkDataAvailable(e);
  } catch (const Error& ex) {
    EXPECT_EQ(ex.exitCode(), 2) << ex.what();
    return ex.what();
  }
  return "(accepted)";
}

}  // namespace

// The engine at P = 1 against the loop a user would write: the whole scripted module's forward,
// cross-entropy, SGD with momentum, the same minibatches in the same order.
TEST(TorchScriptEngine, SingleStageEqualsAPlainLoopOverTheLoadedModule) {
  ScriptCase c;
  MemorySink sink;
  EngineOptions opts;
  opts.saveStateDir = c.tmp.file("state");
  ASSERT_EQ(runSingleProcess(c.e, sink, nullptr, opts).status, RunStatus::Finished);
  const auto engine = loadState(fs::path(opts.saveStateDir) / "stage0.pt");

  setStageThreads(c.e.execution.threads_per_stage);
  torch::jit::Module m = torch::jit::load(c.e.model.path);
  m.train();
  std::vector<torch::Tensor> params;
  for (const auto& p : m.parameters()) params.push_back(p);
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(c.e.optimizer.lr).momentum(c.e.optimizer.momentum));
  auto [x, y] = test::imageProblem(64, 7);
  for (int64_t step = 0; step < c.e.training.steps; ++step) {
    const int64_t begin = (step % 4) * 16;
    sgd.zero_grad();
    const torch::Tensor out = m.forward({x.narrow(0, begin, 16)}).toTensor();
    torch::nn::functional::cross_entropy(out, y.narrow(0, begin, 16)).backward();
    sgd.step();
  }
  std::vector<torch::Tensor> plain;
  for (const auto& p : m.parameters()) plain.push_back(p.detach());
  for (const auto& b : m.buffers()) plain.push_back(b.detach());
  ASSERT_EQ(engine.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_TRUE(torch::equal(engine[i], plain[i])) << "tensor " << i << " differs by "
                                                   << (engine[i] - plain[i]).abs().max().item<double>();
  // It learned: the last loss is below the first.
  const auto steps = sink.ofType(ev::kStep);
  ASSERT_GE(steps.size(), 2u);
  EXPECT_LT(steps.back()["loss"].get<double>(), steps.front()["loss"].get<double>());
}

// gpipe with pipeline.recompute trains the same weights and running statistics as without: the
// recomputed forwards of the scripted BatchNorm unit do not update its statistics a second time.
TEST(TorchScriptEngine, RecomputeLeavesScriptedBatchNormStatisticsAlone) {
  ScriptCase c;
  c.e.pipeline.stages = 2;
  c.e.pipeline.microbatches = 4;
  c.e.training.steps = 3;
  std::vector<std::vector<torch::Tensor>> states;
  for (bool recompute : {false, true}) {
    Experiment e = c.e;
    e.pipeline.recompute = recompute;
    MemorySink sink;
    EngineOptions opts;
    opts.saveStateDir = c.tmp.file(recompute ? "recompute" : "kept");
    ASSERT_EQ(runSingleProcess(e, sink, nullptr, opts).status, RunStatus::Finished);
    std::vector<torch::Tensor> all;
    for (int s = 0; s < 2; ++s)
      for (auto& t : loadState(fs::path(opts.saveStateDir) / ("stage" + std::to_string(s) + ".pt"))) all.push_back(t);
    states.push_back(all);
  }
  ASSERT_EQ(states[0].size(), states[1].size());
  bool buffersMoved = false;
  for (size_t i = 0; i < states[0].size(); ++i) {
    EXPECT_TRUE(torch::equal(states[0][i], states[1][i])) << "tensor " << i;
    if (states[0][i].numel() == 32 && !torch::equal(states[0][i], torch::zeros({32})) && !torch::equal(states[0][i], torch::ones({32})))
      buffersMoved = true;
  }
  EXPECT_TRUE(buffersMoved);  // the statistics did change: three steps of four microbatches
}

TEST(TorchScriptEngine, TheLossFollowsTheLabelsOrModelTask) {
  ScriptCase c;
  EXPECT_EQ(makeBatchSource(c.e, true)->task(), Task::Classification);
  EXPECT_EQ(makeBatchSource(c.e, true)->size(), 64);
  EXPECT_EQ(makeBatchSource(c.e, false)->size(), 16);
  // Without an eval file, the last eval_fraction of the training file is held out.
  Experiment held = c.e;
  held.data.eval_path.clear();
  held.data.eval_fraction = 0.25;
  EXPECT_EQ(makeBatchSource(held, true)->size(), 48);
  EXPECT_EQ(makeBatchSource(held, false)->size(), 16);
  // Float targets: regression; a task the labels do not fit is refused naming the file.
  test::saveTensorFile(c.tmp.file("reg.pt"), torch::randn({8, 1, 28, 28}), torch::randn({8}));
  Experiment reg = c.e;
  reg.data.path = c.tmp.file("reg.pt");
  reg.data.eval_path.clear();
  EXPECT_EQ(makeBatchSource(reg, true)->task(), Task::Regression);
  reg.model.task = ModelTask::Classification;
  try {
    makeBatchSource(reg, true);
    ADD_FAILURE() << "classification on float targets was accepted";
  } catch (const DataError& ex) {
    EXPECT_NE(std::string(ex.what()).find("reg.pt: model.task=classification needs integer class labels"), std::string::npos)
        << ex.what();
  }
}

TEST(TorchScriptEngine, BadDataIsRefusedBeforeTheRunNamingTheFileAndTheTensor) {
  ScriptCase c;
  EXPECT_EQ(dataRefusal(c.e), "(accepted)");
  Experiment e = c.e;
  // A file without "x".
  c10::Dict<std::string, torch::Tensor> onlyY;
  onlyY.insert("y", torch::zeros({4}, torch::kLong));
  const auto bytes = torch::pickle_save(c10::IValue(onlyY));
  std::ofstream(c.tmp.file("noX.pt"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  e.data.path = c.tmp.file("noX.pt");
  std::string why = dataRefusal(e);
  EXPECT_NE(why.find("noX.pt: has no tensor \"x\" (found keys: \"y\")"), std::string::npos) << why;
  // Not a torch.save file.
  std::ofstream(c.tmp.file("text.pt")) << "x,y\n1,2\n";
  e.data.path = c.tmp.file("text.pt");
  why = dataRefusal(e);
  EXPECT_NE(why.find("text.pt: not a readable torch.save file"), std::string::npos) << why;
  // Labels outside the model's ten classes.
  test::saveTensorFile(c.tmp.file("labels.pt"), torch::randn({8, 1, 28, 28}), torch::full({8}, 12, torch::kLong));
  e.data.path = c.tmp.file("labels.pt");
  why = dataRefusal(e);
  EXPECT_NE(why.find("labels.pt: tensor \"y\" holds labels 12..12, outside the 10 classes"), std::string::npos) << why;
  // Samples of a shape the model does not take.
  test::saveTensorFile(c.tmp.file("shape.pt"), torch::randn({8, 3, 32, 32}), torch::zeros({8}, torch::kLong));
  e.data.path = c.tmp.file("shape.pt");
  why = dataRefusal(e);
  EXPECT_NE(why.find("shape.pt: one sample of tensor \"x\" (shape [3, 32, 32], Float) does not fit the model in"), std::string::npos)
      << why;
  EXPECT_NE(why.find("unit 0 (\"fc1\")"), std::string::npos) << why;
  // What the unit expected and what it got, from the interpreter's own error, not its first line.
  EXPECT_EQ(why.find("The following operation failed"), std::string::npos) << why;
  EXPECT_NE(why.find("3072"), std::string::npos) << why;  // the flattened 3x32x32 sample
  EXPECT_NE(why.find("784"), std::string::npos) << why;   // fc1's 1x28x28 inputs
  // One label per sample.
  test::saveTensorFile(c.tmp.file("count.pt"), torch::randn({8, 1, 28, 28}), torch::zeros({5}, torch::kLong));
  e.data.path = c.tmp.file("count.pt");
  why = dataRefusal(e);
  EXPECT_NE(why.find("count.pt: tensor \"y\" of shape [5] does not have one label per sample of \"x\" (shape [8, 1, 28, 28])"),
            std::string::npos)
      << why;
  // An eval file whose samples differ from the training file's.
  e = c.e;
  test::saveTensorFile(c.tmp.file("eval2.pt"), torch::randn({4, 1, 14, 14}), torch::zeros({4}, torch::kLong));
  e.data.eval_path = c.tmp.file("eval2.pt");
  why = dataRefusal(e);
  EXPECT_NE(why.find("eval2.pt: tensor \"x\" holds samples of shape [1, 14, 14]"), std::string::npos) << why;
  // More stages than the file has units.
  e = c.e;
  e.pipeline.stages = 5;
  why = dataRefusal(e);
  EXPECT_NE(why.find("pipeline.stages: expected at most 4 stages"), std::string::npos) << why;
  // A zoo model on tensors of another shape.
  e = c.e;
  e.model = ModelConfig{};
  e.model.name = "mlp";
  e.data.path = c.tmp.file("shape.pt");
  e.data.eval_path.clear();
  why = dataRefusal(e);
  EXPECT_NE(why.find("shape.pt: tensor \"x\" holds samples of shape [3, 32, 32] (Float); model mlp takes [1, 28, 28]"),
            std::string::npos)
      << why;
}
