#pragma once
// Memory by category, accounted where it lives (the stage knows its tensors).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/events/event.h"

namespace pm {

struct StageMemory {
  int64_t weights = 0;      // parameters + buffers (BN running statistics)
  int64_t gradients = 0;    // .grad tensors that exist
  int64_t optimizer = 0;    // optimizer state (momentum, Adam moments)
  int64_t stash = 0;        // stashed weight versions (pipedream, 2bw)
  int64_t delta = 0;        // PipeMare T2 delta
  int64_t activations = 0;  // in-flight activations / stage inputs kept for backward
  int64_t peak = 0;         // peak of the sum above, over the run so far
  int64_t total() const { return weights + gradients + optimizer + stash + delta + activations; }
  Json toJson() const;
};

int64_t tensorBytes(const torch::Tensor& t);
int64_t tensorBytes(const std::vector<torch::Tensor>& ts);
int64_t moduleWeightBytes(const torch::nn::Module& m);     // parameters + buffers
int64_t moduleGradientBytes(const torch::nn::Module& m);   // defined .grad only
// Bytes of the optimizer's per-parameter state (SGD momentum buffers, Adam/AdamW moments).
int64_t optimizerStateBytes(torch::optim::Optimizer& opt);

}  // namespace pm
