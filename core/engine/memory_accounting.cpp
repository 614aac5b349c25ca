#include "core/engine/memory_accounting.h"

namespace pm {

Json StageMemory::toJson() const {
  return Json{{"weights", weights}, {"gradients", gradients}, {"optimizer", optimizer}, {"stash", stash},
              {"delta", delta},     {"activations", activations}, {"total", total()}, {"peak", peak}};
}

int64_t tensorBytes(const torch::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

int64_t tensorBytes(const std::vector<torch::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += tensorBytes(t);
  return n;
}

int64_t moduleWeightBytes(const torch::nn::Module& m) {
  return tensorBytes(m.parameters()) + tensorBytes(m.buffers());
}

int64_t moduleGradientBytes(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += tensorBytes(p.grad());
  return n;
}

int64_t optimizerStateBytes(torch::optim::Optimizer& opt) {
  int64_t n = 0;
  for (auto& kv : opt.state()) {
    auto* state = kv.second.get();
    if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(state)) {
      n += tensorBytes(s->momentum_buffer());
    } else if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(state)) {
      n += tensorBytes(a->exp_avg()) + tensorBytes(a->exp_avg_sq()) + tensorBytes(a->max_exp_avg_sq());
    } else if (auto* w = dynamic_cast<torch::optim::AdamWParamState*>(state)) {
      n += tensorBytes(w->exp_avg()) + tensorBytes(w->exp_avg_sq()) + tensorBytes(w->max_exp_avg_sq());
    }
  }
  return n;
}

}  // namespace pm
