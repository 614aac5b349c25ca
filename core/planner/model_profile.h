#pragma once
// A model's static profile from one real shape pass: its layers with weights (conv, linear,
// batchnorm, layernorm, embedding) in execution order, and the same figures aggregated per
// partitionable unit of the model zoo. All per-sample figures are measured on a batch of one
// sample (for charlm one sequence of `context` tokens); multiply by the microbatch size for
// per-microbatch values (stage_profile.h does).
// The header is plain data (no LibTorch); profileModel runs the model with LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/experiment.h"

namespace pm {

struct LayerProfile {
  std::string name;                  // "<unit>.<submodule>", e.g. "layer1_1.conv2"
  std::string kind;                  // conv | linear | batchnorm | layernorm | embedding
  int unit = 0;                      // index of the unit that holds the layer
  int64_t parameters = 0;            // trainable parameters
  int64_t paramBytes = 0;            // their bytes
  int64_t bufferBytes = 0;           // buffers (BatchNorm running statistics); not trained, not stashed
  int64_t inputBytes = 0;            // bytes of the layer's data input, per sample
  int64_t outputBytes = 0;           // bytes of the layer's output, per sample
  std::vector<int64_t> outputShape;  // output shape with a batch of one sample
  double flops = 0;                  // forward FLOPs of the layer's own operation, per sample
};

struct UnitProfile {
  std::string name;          // the model zoo's unit name
  int firstLayer = 0;        // its layers are layers[firstLayer, firstLayer + layerCount)
  int layerCount = 0;
  int64_t parameters = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  int64_t inputBytes = 0;       // X: bytes of the unit's input, per sample
  int64_t outputBytes = 0;      // bytes of the unit's output, per sample
  int64_t activationBytes = 0;  // A: sum of the outputs of the operations inside (views excluded), per sample
  double flops = 0;             // forward FLOPs of all operations inside, per sample
};

struct ModelProfile {
  std::string model;
  int context = 128;  // sequence length (token models only)
  std::vector<LayerProfile> layers;
  std::vector<UnitProfile> units;

  int64_t parameters() const;
  int64_t paramBytes() const;
  double flops() const;                         // per sample, sum over units
  int countKind(const std::string& kind) const;  // layers of one kind
};

// Builds the model of the zoo (seed 1), runs one sample through every unit with operator-level
// observers (LibTorch RecordFunction callbacks: the C++ counterpart of forward hooks) and records
// each operation's inputs and outputs. A layer is the module whose weight tensor an operation
// reads; every weight layer of the model must run exactly in this pass.
// FLOPs: conv and linear 2*MACs; batchnorm/layernorm 5 per output element; embedding 1 per output
// element (a gather); other operations inside a unit: matmul-like 2*M*N*K, views 0, anything else
// 1 per element of its largest tensor (elementwise estimate).
// Throws ConfigError for an unknown model or a context the model cannot take.
ModelProfile profileModel(const std::string& model, int context = 128);

// profileModel, computed once per (model, context) in this process (thread-safe).
const ModelProfile& cachedModelProfile(const std::string& model, int context = 128);

// The experiment's model: the zoo's as above, or a TorchScript file's (model.path), profiled from
// one sample of the experiment's input (core/engine/batch_source.h exampleInput: the tensor
// file's first sample, or one of the dataset's shape). Layers are the scripted submodules of the
// kinds above (Conv*, Linear, BatchNorm*, LayerNorm, Embedding, by class name). ModelProfile::model
// is the file's name.
ModelProfile profileModel(const Experiment& e);
// profileModel(e), computed once per (file contents, input) in this process (thread-safe).
const ModelProfile& cachedModelProfile(const Experiment& e);

// The measured cost of each unit's passes on one microbatch, in seconds: the forward F, the whole
// backward B (input and weight gradients together), and the same backward split as the engine's
// zb-h1 runs it: BI (the gradient of the unit's input) and W (its weights' gradients, from the
// output gradient kept since BI). A unit with an integer input (token ids) has no BI; one without
// trainable weights no W.
struct UnitOpCosts {
  double forward = 0, backward = 0, backwardInput = 0, weight = 0;
};

// Times every unit of the experiment's model (the zoo's, or its TorchScript file) on `samples`
// samples of its input, as one stage of `threads` threads would: an untimed round through the
// model, then `rounds` timed ones, each pass's cost its fastest round (interleaving the units
// spreads a busy spell of the machine over all of them; noise only adds time).
std::vector<UnitOpCosts> measureUnitOpCosts(const Experiment& e, int64_t samples, int threads = 1, int rounds = 5);

}  // namespace pm
