#pragma once
// The model zoo: each model is an ordered list of partitionable units (torch modules whose
// forward takes one tensor and returns one tensor). A pipeline stage is a contiguous range of
// units. Parameter counts and unit counts match core/config/model_catalog.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/config/experiment.h"

namespace pm {

struct Unit {
  std::string name;            // e.g. "conv1", "block2.1", "head"
  torch::nn::AnyModule module; // Tensor -> Tensor
  int weight_layers = 0;       // layers with weights inside (conv, linear, norm, embedding)
};

// Builds the named model with weights initialised from `seed` (deterministic).
// Throws ConfigError for an unknown name.
std::vector<Unit> buildModel(const std::string& name, uint64_t seed);
// The experiment's model: the zoo's by name, or the TorchScript file of model.path (whose weights
// are the file's, whatever the seed; core/models/torchscript_model.h).
std::vector<Unit> buildModel(const ModelConfig& model, uint64_t seed);

// Trainable parameters of one unit / of several.
int64_t parameterCount(const Unit& unit);
int64_t parameterCount(const std::vector<Unit>& units);

// Input shape of one sample (without the batch dimension) and its dtype.
std::vector<int64_t> sampleShape(const std::string& model, int context = 128);
bool modelTakesTokens(const std::string& model);

// The stage module for units [begin, end): a Sequential registered under the units' names.
torch::nn::Sequential makeStage(const std::vector<Unit>& units, int begin, int end);

// --- building blocks shared by the zoo (one file per family)
std::vector<Unit> buildResNet20();
std::vector<Unit> buildResNet50();
std::vector<Unit> buildCharLM(int vocab = 256, int dModel = 128, int layers = 4, int heads = 4, int ff = 512,
                              int context = 128);

}  // namespace pm
