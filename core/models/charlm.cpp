// Byte-level decoder-only Transformer with pre-LayerNorm blocks (LibTorch 1.13's built-in layer
// has no pre-LN option). Units: embedding (tokens + learned positions), one unit per block, head
// (final LayerNorm + bias-free projection to the vocabulary).
#include <cmath>

#include "core/models/model_zoo.h"

namespace pm {
namespace nn = torch::nn;

namespace {

struct EmbedImpl : nn::Module {
  EmbedImpl(int vocab, int d, int context) {
    tok = register_module("tok", nn::Embedding(vocab, d));
    pos = register_module("pos", nn::Embedding(context, d));
    nn::init::normal_(tok->weight, 0.0, 0.02);
    nn::init::normal_(pos->weight, 0.0, 0.02);
  }
  // x: int64 [B, T] -> float [B, T, d]
  torch::Tensor forward(torch::Tensor x) {
    auto t = x.size(1);
    auto positions = torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
    return tok->forward(x) + pos->forward(positions).unsqueeze(0);
  }
  nn::Embedding tok{nullptr}, pos{nullptr};
};
TORCH_MODULE(Embed);

// x + Attn(LN(x)); x + FF(LN(x)). Causal multi-head self-attention with a fused QKV projection.
struct PreLNBlockImpl : nn::Module {
  PreLNBlockImpl(int d, int heads, int ff) : d_(d), heads_(heads) {
    ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({d})));
    qkv = register_module("qkv", nn::Linear(d, 3 * d));
    proj = register_module("proj", nn::Linear(d, d));
    ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({d})));
    ff1 = register_module("ff1", nn::Linear(d, ff));
    ff2 = register_module("ff2", nn::Linear(ff, d));
  }
  torch::Tensor forward(torch::Tensor x) {
    const auto B = x.size(0), T = x.size(1);
    const int64_t hd = d_ / heads_;
    auto h = ln1->forward(x);
    auto q_k_v = qkv->forward(h).view({B, T, 3, heads_, hd}).permute({2, 0, 3, 1, 4});  // 3,B,H,T,hd
    auto q = q_k_v[0], k = q_k_v[1], v = q_k_v[2];
    auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
    auto mask = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
    att = torch::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1);
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({B, T, d_});
    x = x + proj->forward(y);
    x = x + ff2->forward(torch::gelu(ff1->forward(ln2->forward(x))));
    return x;
  }
  int64_t d_, heads_;
  nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr}, ff1{nullptr}, ff2{nullptr};
};
TORCH_MODULE(PreLNBlock);

struct LMHeadImpl : nn::Module {
  LMHeadImpl(int d, int vocab) {
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({d})));
    out = register_module("out", nn::Linear(nn::LinearOptions(d, vocab).bias(false)));
  }
  torch::Tensor forward(torch::Tensor x) { return out->forward(ln->forward(x)); }
  nn::LayerNorm ln{nullptr};
  nn::Linear out{nullptr};
};
TORCH_MODULE(LMHead);

}  // namespace

std::vector<Unit> buildCharLM(int vocab, int dModel, int layers, int heads, int ff, int context) {
  std::vector<Unit> u;
  u.push_back({"embed", nn::AnyModule(Embed(vocab, dModel, context)), 2});
  for (int l = 0; l < layers; ++l)
    u.push_back({"block" + std::to_string(l + 1), nn::AnyModule(PreLNBlock(dModel, heads, ff)), 6});
  u.push_back({"head", nn::AnyModule(LMHead(dModel, vocab)), 2});
  return u;
}

}  // namespace pm
