#pragma once
// TorchScript models and tensor files made in C++, as users make them in Python
// (torch.jit.script(nn.Sequential(...)).save(...), torch.save({"x": x, "y": y}, ...)), for the tests
// of the TorchScript loader, the engine and the command line. Header-only (LibTorch).
#include <torch/script.h>
#include <torch/torch.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace pm::test {

// The class name torch.jit.script gives an nn.Sequential: what the loader accepts as a model.
inline constexpr const char* kSequentialType = "__torch__.torch.nn.modules.container.Sequential";

// An empty scripted module of class `cls` with the `training` flag every nn.Module has (which
// torch::jit::Module::train sets).
inline torch::jit::Module scriptModule(const std::string& cls) {
  torch::jit::Module m(cls);
  m.register_attribute("training", c10::BoolType::get(), true);
  return m;
}

// A unit: flatten (optionally), a linear layer, ReLU (optionally). Weights from the global generator.
inline torch::jit::Module scriptLinear(const std::string& cls, int64_t in, int64_t out, bool relu, bool flatten = true) {
  torch::jit::Module m = scriptModule("__torch__." + cls);
  // requires_grad: what nn.Parameter sets
  m.register_parameter("weight", (torch::randn({out, in}) / std::sqrt(static_cast<double>(in))).requires_grad_(), false);
  m.register_parameter("bias", torch::zeros({out}).requires_grad_(), false);
  std::string body = "def forward(self, x):\n";
  body += flatten ? "    h = torch.flatten(x, 1)\n" : "    h = x\n";
  body += "    h = torch.linear(h, self.weight, self.bias)\n";
  body += relu ? "    return torch.relu(h)\n" : "    return h\n";
  m.define(body);
  return m;
}

// A unit: BatchNorm over the features of [B, C] (running statistics as buffers, momentum 0.1), then ReLU.
inline torch::jit::Module scriptBatchNorm(const std::string& cls, int64_t features) {
  torch::jit::Module m = scriptModule("__torch__." + cls);
  m.register_parameter("weight", torch::ones({features}).requires_grad_(), false);
  m.register_parameter("bias", torch::zeros({features}).requires_grad_(), false);
  m.register_buffer("running_mean", torch::zeros({features}));
  m.register_buffer("running_var", torch::ones({features}));
  m.define(R"(
def forward(self, x):
    h = torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, self.training, 0.1, 1e-5, False)
    return torch.relu(h)
)");
  return m;
}

// A model of units, in order, as a scripted nn.Sequential (type `type`) whose forward runs them
// in turn, as nn.Sequential's does (unit names must be identifiers).
// `chain` false: a forward that returns its input (for units that cannot be chained).
inline torch::jit::Module scriptSequential(const std::vector<std::pair<std::string, torch::jit::Module>>& units,
                                           const std::string& type = kSequentialType, bool chain = true) {
  torch::jit::Module seq = scriptModule(type);
  std::string forward = "def forward(self, x):\n";
  for (const auto& [name, unit] : units) {
    seq.register_module(name, unit);
    if (chain) forward += "    x = self." + name + ".forward(x)\n";
  }
  seq.define(forward + "    return x\n");
  return seq;
}

// The test MLP: 784 -> 32 (BatchNorm) -> 16 -> 10, four units, on 1x28x28 images (seeded).
inline torch::jit::Module scriptMlp(uint64_t seed = 5) {
  torch::manual_seed(seed);
  return scriptSequential({{"fc1", scriptLinear("Fc1", 784, 32, false)},
                           {"bn1", scriptBatchNorm("Bn1", 32)},
                           {"fc2", scriptLinear("Fc2", 32, 16, true, false)},
                           {"head", scriptLinear("Head", 16, 10, false, false)}});
}

// Writes {"x": x, "y": y} as torch.save does (the zip container torch.load reads).
inline void saveTensorFile(const std::string& path, const torch::Tensor& x, const torch::Tensor& y) {
  c10::Dict<std::string, torch::Tensor> d;
  d.insert("x", x);
  d.insert("y", y);
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(d));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The stage files a run's --save-state folder holds (stage0.pt ... each its parameters then its
// buffers), all in stage order.
inline std::vector<torch::Tensor> savedStages(const std::string& dir, int stages) {
  std::vector<torch::Tensor> all;
  for (int s = 0; s < stages; ++s) {
    std::vector<torch::Tensor> t;
    torch::load(t, dir + "/stage" + std::to_string(s) + ".pt");
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

// A learnable 10-class problem on 1x28x28 images: class prototypes plus noise (deterministic).
inline std::pair<torch::Tensor, torch::Tensor> imageProblem(int64_t samples, uint64_t seed) {
  torch::manual_seed(1234);
  const torch::Tensor prototypes = torch::randn({10, 1, 28, 28});
  torch::manual_seed(seed);
  const torch::Tensor y = torch::randint(0, 10, {samples}, torch::kLong);
  const torch::Tensor x = prototypes.index_select(0, y) + 0.8 * torch::randn({samples, 1, 28, 28});
  return {x, y};
}

}  // namespace pm::test
