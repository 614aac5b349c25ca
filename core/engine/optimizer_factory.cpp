#include "core/engine/optimizer_factory.h"

#include "core/util/errors.h"

namespace pm {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const OptimizerConfig& o, std::vector<torch::Tensor> params) {
  if (o.name == OptimizerType::Sgd)
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(o.lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(o.weight_decay));
  if (o.name == OptimizerType::Adam)
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  if (o.name == OptimizerType::AdamW)
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  throw ConfigError("optimizer.name", "unknown optimizer \"" + choiceName(o.name) + "\"");
}

void setLearningRate(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) g.options().set_lr(lr);
}

void setMomentum(torch::optim::Optimizer& opt, double momentum) {
  for (auto& g : opt.param_groups())
    if (auto* o = dynamic_cast<torch::optim::SGDOptions*>(&g.options())) o->momentum(momentum);
}

}  // namespace pm
