#pragma once
// Optimizers from the experiment's optimizer section.
#include <torch/torch.h>

#include <memory>

#include "core/config/experiment.h"

namespace pm {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const OptimizerConfig& o, std::vector<torch::Tensor> params);
void setLearningRate(torch::optim::Optimizer& opt, double lr);
// Sets SGD momentum (used for the per-stage momentum of asynchronous schedules); no-op otherwise.
void setMomentum(torch::optim::Optimizer& opt, double momentum);

}  // namespace pm
