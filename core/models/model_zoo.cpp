#include "core/models/model_zoo.h"

#include "core/config/model_catalog.h"
#include "core/models/torchscript_model.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

namespace pm {
namespace nn = torch::nn;

namespace {

// Flattens its input then applies a linear layer and (optionally) ReLU.
struct FlattenLinearImpl : nn::Module {
  FlattenLinearImpl(int64_t in, int64_t out, bool relu) : relu_(relu) {
    fc = register_module("fc", nn::Linear(in, out));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = fc->forward(x.flatten(1));
    return relu_ ? torch::relu(x) : x;
  }
  nn::Linear fc{nullptr};
  bool relu_;
};
TORCH_MODULE(FlattenLinear);

// conv3x3(pad 1, bias) - BN - ReLU, optionally followed by a 2x2 max-pool.
struct ConvBnReluImpl : nn::Module {
  ConvBnReluImpl(int64_t in, int64_t out, bool pool) : pool_(pool) {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1).bias(true)));
    bn = register_module("bn", nn::BatchNorm2d(out));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn->forward(conv->forward(x)));
    return pool_ ? torch::max_pool2d(x, {2, 2}) : x;
  }
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  bool pool_;
};
TORCH_MODULE(ConvBnRelu);

std::vector<Unit> buildMlp() {
  std::vector<Unit> u;
  u.push_back({"fc1", nn::AnyModule(FlattenLinear(784, 512, true)), 1});
  u.push_back({"fc2", nn::AnyModule(FlattenLinear(512, 512, true)), 1});
  u.push_back({"fc3", nn::AnyModule(FlattenLinear(512, 10, false)), 1});
  return u;
}

std::vector<Unit> buildCnn() {
  std::vector<Unit> u;
  u.push_back({"conv1", nn::AnyModule(ConvBnRelu(1, 32, false)), 2});
  u.push_back({"conv2", nn::AnyModule(ConvBnRelu(32, 32, true)), 2});
  u.push_back({"conv3", nn::AnyModule(ConvBnRelu(32, 64, false)), 2});
  u.push_back({"conv4", nn::AnyModule(ConvBnRelu(64, 64, true)), 2});
  u.push_back({"fc1", nn::AnyModule(FlattenLinear(3136, 256, true)), 1});
  u.push_back({"fc2", nn::AnyModule(FlattenLinear(256, 10, false)), 1});
  return u;
}

}  // namespace

std::vector<Unit> buildModel(const std::string& name, uint64_t seed) {
  torch::manual_seed(seed);
  if (name == "mlp") return buildMlp();
  if (name == "cnn") return buildCnn();
  if (name == "resnet20") return buildResNet20();
  if (name == "resnet50") return buildResNet50();
  if (name == "charlm") return buildCharLM();
  std::vector<std::string> names;
  for (const auto& m : modelCatalog()) names.push_back(m.name);
  std::string hint = didYouMean(name, names);
  throw ConfigError("model.name", "unknown model \"" + name + "\"" + (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
}

std::vector<Unit> buildModel(const ModelConfig& model, uint64_t seed) {
  if (model.fromFile()) return loadTorchScriptModel(model.path);
  return buildModel(model.name, seed);
}

int64_t parameterCount(const Unit& unit) {
  int64_t n = 0;
  for (const auto& p : unit.module.ptr()->parameters()) n += p.numel();
  return n;
}

int64_t parameterCount(const std::vector<Unit>& units) {
  int64_t n = 0;
  for (const auto& u : units) n += parameterCount(u);
  return n;
}

std::vector<int64_t> sampleShape(const std::string& model, int context) {
  if (model == "charlm") return {context};
  if (model == "resnet50") return {3, 224, 224};
  return {1, 28, 28};
}

bool modelTakesTokens(const std::string& model) { return model == "charlm"; }

torch::nn::Sequential makeStage(const std::vector<Unit>& units, int begin, int end) {
  nn::Sequential s;
  for (int i = begin; i < end; ++i) s->push_back(units[static_cast<size_t>(i)].name, units[static_cast<size_t>(i)].module);
  return s;
}

}  // namespace pm
