// The TorchScript loader: a scripted nn.Sequential made in C++ (as Python's torch.jit.script makes
// one) loads as units that share the file's tensors, and each kind of bad file is refused with a
// message that names the file and the unit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/models/model_zoo.h"
#include "core/models/torchscript_model.h"
#include "core/util/errors.h"
#include "tests/support/script_models.h"
#include "tests/support/test_support.h"

using namespace pm;
namespace fs = std::filesystem;

namespace {

std::string refusal(const std::string& path) {
  try {
    loadTorchScriptModel(path);
  } catch (const ConfigError& ex) {
    EXPECT_EQ(ex.exitCode(), 2);
    return ex.what();
  }
  return "(loaded)";
}

}  // namespace

TEST(TorchScriptModel, UnitsAreTheSequentialsChildrenWithTheirTensors) {
  test::TempDir tmp;
  const std::string file = tmp.file("mlp.pt");
  torch::jit::Module m = test::scriptMlp();
  m.save(file);
  auto units = loadTorchScriptModel(file);
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[0].name, "fc1");
  EXPECT_EQ(units[3].name, "head");
  EXPECT_EQ(parameterCount(units), 784 * 32 + 32 + 32 * 2 + 32 * 16 + 16 + 16 * 10 + 10);
  EXPECT_EQ(units[1].module.ptr()->buffers().size(), 2u);  // running mean and variance
  EXPECT_EQ(units[0].weight_layers, 1);

  // The units compute what the saved module computes, unit by unit.
  m.eval();
  for (auto& u : units) u.module.ptr()->eval();
  torch::NoGradGuard ng;
  const torch::Tensor x = torch::randn({3, 1, 28, 28});
  torch::Tensor h = x;
  for (auto& u : units) h = u.module.forward(h);
  const torch::Tensor want = m.forward({x}).toTensor();
  EXPECT_TRUE(torch::equal(h, want));

  // A parameter changed through the LibTorch module is the scripted module's own tensor.
  auto* script = dynamic_cast<ScriptUnitImpl*>(units[0].module.ptr().get());
  ASSERT_NE(script, nullptr);
  units[0].module.ptr()->parameters()[0].data().fill_(0.5f);
  EXPECT_EQ(script->script().attr("weight").toTensor().max().item<float>(), 0.5f);
  // train()/eval() reach the scripted module.
  units[1].module.ptr()->train();
  EXPECT_TRUE(dynamic_cast<ScriptUnitImpl*>(units[1].module.ptr().get())->script().is_training());
  units[1].module.ptr()->eval();
  EXPECT_FALSE(dynamic_cast<ScriptUnitImpl*>(units[1].module.ptr().get())->script().is_training());
}

TEST(TorchScriptModel, TheExperimentsModelIsTheFileWhateverTheSeed) {
  test::TempDir tmp;
  const std::string file = tmp.file("mlp.pt");
  test::scriptMlp().save(file);
  ModelConfig cfg;
  cfg.name = kTorchScriptModel;
  cfg.path = file;
  auto a = buildModel(cfg, 1), b = buildModel(cfg, 99);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    auto pa = a[i].module.ptr()->parameters(), pb = b[i].module.ptr()->parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t k = 0; k < pa.size(); ++k) EXPECT_TRUE(torch::equal(pa[k], pb[k]));
    // Two loads are two models: training one does not move the other.
    if (!pa.empty()) {
      EXPECT_NE(pa[0].data_ptr(), pb[0].data_ptr());
    }
  }
}

TEST(TorchScriptModel, BadFilesAreRefusedNamingTheFileAndTheUnit) {
  test::TempDir tmp;
  // No such file.
  EXPECT_NE(refusal(tmp.file("missing.pt")).find("missing.pt: cannot open"), std::string::npos);
  // Not TorchScript.
  const std::string text = tmp.file("notes.pt");
  std::ofstream(text) << "this is not a model\n";
  std::string why = refusal(text);
  EXPECT_NE(why.find("notes.pt: not a readable TorchScript file"), std::string::npos) << why;
  // A truncated file: the first half of a valid one.
  const std::string good = tmp.file("good.pt");
  test::scriptMlp().save(good);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = tmp.file("cut.pt");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  why = refusal(cut);
  EXPECT_NE(why.find("cut.pt: not a readable TorchScript file"), std::string::npos) << why;
  // A module that is not an nn.Sequential.
  torch::manual_seed(1);
  const std::string net = tmp.file("net.pt");
  test::scriptSequential({{"fc", test::scriptLinear("Fc", 784, 10, false)}}, "__torch__.MyNet").save(net);
  why = refusal(net);
  EXPECT_NE(why.find("net.pt: the model is a __torch__.MyNet, not an nn.Sequential"), std::string::npos) << why;
  EXPECT_NE(why.find("wrap the model as an nn.Sequential"), std::string::npos) << why;
  // A unit with two outputs.
  torch::jit::Module pair = test::scriptModule("__torch__.Pair");
  pair.define("def forward(self, x):\n    return x, x\n");
  const std::string two = tmp.file("two.pt");
  test::scriptSequential({{"fc", test::scriptLinear("Fc", 784, 10, false)}, {"split", pair}}).save(two);
  why = refusal(two);
  EXPECT_NE(why.find("two.pt: unit 1 (\"split\", a __torch__.Pair) its forward returns Tuple[Tensor, Tensor] (it must return one tensor)"),
            std::string::npos)
      << why;
  // A unit that takes two tensors.
  torch::jit::Module add = test::scriptModule("__torch__.Add");
  add.define("def forward(self, x, y):\n    return x + y\n");
  const std::string takesTwo = tmp.file("add.pt");
  test::scriptSequential({{"add", add}}, test::kSequentialType, /*chain=*/false).save(takesTwo);
  why = refusal(takesTwo);
  EXPECT_NE(why.find("add.pt: unit 0 (\"add\", a __torch__.Add) its forward takes 2 inputs"), std::string::npos) << why;
  // No units.
  const std::string empty = tmp.file("empty.pt");
  test::scriptSequential({}).save(empty);
  EXPECT_NE(refusal(empty).find("has no units"), std::string::npos);
}
