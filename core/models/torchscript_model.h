#pragma once
// Models read from a TorchScript file: a scripted or traced nn.Sequential saved with
// torch.jit.save. Each top-level child is one partitionable unit, in order; each unit's forward
// takes one tensor and returns one tensor. The file's parameters are the initial weights (the
// experiment's seed does not change them). A unit's parameters and buffers are the scripted
// module's own tensors, registered with a torch::nn::Module so that optimizers, weight versions,
// checkpoints and the stage's memory accounting see them as they see the zoo's.
#include <torch/script.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/models/model_zoo.h"

namespace pm {

// One unit of a TorchScript model: a torch::jit::Module behind the torch::nn::Module interface.
class ScriptUnitImpl : public torch::nn::Module {
 public:
  explicit ScriptUnitImpl(torch::jit::Module module);
  torch::Tensor forward(torch::Tensor x);
  void train(bool on = true) override;
  using torch::nn::Module::to;
  void to(torch::Device device, bool non_blocking = false) override;
  torch::jit::Module& script() { return script_; }
  // The unit's parameter and buffer names in the scripted module, in registration order
  // (registered here with '.' written as '_').
  const std::vector<std::string>& scriptNames() const { return names_; }

 private:
  torch::jit::Module script_;
  std::vector<std::string> names_;
};
TORCH_MODULE(ScriptUnit);

// Reads and checks a TorchScript model. Throws ConfigError(path, ...) naming the problem and what
// to change: a missing or unreadable file, a file that is not TorchScript (or is truncated), a
// module that is not an nn.Sequential, a unit whose forward does not take one tensor and return
// one tensor, a model without units.
std::vector<Unit> loadTorchScriptModel(const std::string& path);

}  // namespace pm
