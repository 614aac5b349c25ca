// ResNet-20 (He et al. 2016, CIFAR variant, option-A shortcuts) on 1x28x28 input, and the
// ImageNet ResNet-50 (bottleneck blocks, torchvision layout). Units: stem, one unit per residual
// block, head.
#include "core/models/model_zoo.h"

namespace pm {
namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// Stem: conv3x3(in->16) - BN - ReLU.
struct Stem20Impl : nn::Module {
  Stem20Impl() {
    c = register_module("conv", conv(1, 16, 3, 1, 1));
    b = register_module("bn", nn::BatchNorm2d(16));
  }
  torch::Tensor forward(torch::Tensor x) { return torch::relu(b->forward(c->forward(x))); }
  nn::Conv2d c{nullptr};
  nn::BatchNorm2d b{nullptr};
};
TORCH_MODULE(Stem20);

// Basic block with a parameter-free shortcut: stride-2 subsampling and zero-padded channels.
struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) : in_(in), out_(out), stride_(stride) {
    c1 = register_module("conv1", conv(in, out, 3, stride, 1));
    b1 = register_module("bn1", nn::BatchNorm2d(out));
    c2 = register_module("conv2", conv(out, out, 3, 1, 1));
    b2 = register_module("bn2", nn::BatchNorm2d(out));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(b1->forward(c1->forward(x)));
    y = b2->forward(c2->forward(y));
    auto s = x;
    if (stride_ != 1 || in_ != out_) {
      using torch::indexing::Slice;
      s = x.index({Slice(), Slice(), Slice(torch::indexing::None, torch::indexing::None, stride_),
                   Slice(torch::indexing::None, torch::indexing::None, stride_)});
      int64_t pad = out_ - in_;
      s = torch::constant_pad_nd(s, {0, 0, 0, 0, pad / 2, pad - pad / 2});
    }
    return torch::relu(y + s);
  }
  nn::Conv2d c1{nullptr}, c2{nullptr};
  nn::BatchNorm2d b1{nullptr}, b2{nullptr};
  int64_t in_, out_, stride_;
};
TORCH_MODULE(BasicBlock);

// Global average pooling + linear classifier.
struct PoolHeadImpl : nn::Module {
  PoolHeadImpl(int64_t in, int64_t classes) { fc = register_module("fc", nn::Linear(in, classes)); }
  torch::Tensor forward(torch::Tensor x) { return fc->forward(x.mean({2, 3})); }
  nn::Linear fc{nullptr};
};
TORCH_MODULE(PoolHead);

// ResNet-50 stem: conv7x7/2 - BN - ReLU - maxpool 3x3/2.
struct Stem50Impl : nn::Module {
  Stem50Impl() {
    c = register_module("conv", conv(3, 64, 7, 2, 3));
    b = register_module("bn", nn::BatchNorm2d(64));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(b->forward(c->forward(x)));
    return torch::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
  }
  nn::Conv2d c{nullptr};
  nn::BatchNorm2d b{nullptr};
};
TORCH_MODULE(Stem50);

// Bottleneck 1x1 - 3x3(stride) - 1x1 (x4), projection shortcut (conv1x1 + BN) when shapes change.
struct BottleneckImpl : nn::Module {
  BottleneckImpl(int64_t in, int64_t width, int64_t stride) {
    int64_t out = width * 4;
    c1 = register_module("conv1", conv(in, width, 1, 1, 0));
    b1 = register_module("bn1", nn::BatchNorm2d(width));
    c2 = register_module("conv2", conv(width, width, 3, stride, 1));
    b2 = register_module("bn2", nn::BatchNorm2d(width));
    c3 = register_module("conv3", conv(width, out, 1, 1, 0));
    b3 = register_module("bn3", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      dc = register_module("down_conv", conv(in, out, 1, stride, 0));
      db = register_module("down_bn", nn::BatchNorm2d(out));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(b1->forward(c1->forward(x)));
    y = torch::relu(b2->forward(c2->forward(y)));
    y = b3->forward(c3->forward(y));
    auto s = dc ? db->forward(dc->forward(x)) : x;
    return torch::relu(y + s);
  }
  nn::Conv2d c1{nullptr}, c2{nullptr}, c3{nullptr}, dc{nullptr};
  nn::BatchNorm2d b1{nullptr}, b2{nullptr}, b3{nullptr}, db{nullptr};
};
TORCH_MODULE(Bottleneck);

}  // namespace

std::vector<Unit> buildResNet20() {
  std::vector<Unit> u;
  u.push_back({"stem", nn::AnyModule(Stem20()), 2});
  int64_t in = 16;
  const int64_t widths[3] = {16, 32, 64};
  for (int g = 0; g < 3; ++g) {
    for (int b = 0; b < 3; ++b) {
      int64_t stride = (g > 0 && b == 0) ? 2 : 1;
      u.push_back({"block" + std::to_string(g + 1) + "_" + std::to_string(b + 1),
                   nn::AnyModule(BasicBlock(in, widths[g], stride)), 4});
      in = widths[g];
    }
  }
  u.push_back({"head", nn::AnyModule(PoolHead(64, 10)), 1});
  return u;
}

std::vector<Unit> buildResNet50() {
  std::vector<Unit> u;
  u.push_back({"stem", nn::AnyModule(Stem50()), 2});
  const int64_t widths[4] = {64, 128, 256, 512};
  const int blocks[4] = {3, 4, 6, 3};
  int64_t in = 64;
  for (int g = 0; g < 4; ++g) {
    for (int b = 0; b < blocks[g]; ++b) {
      int64_t stride = (g > 0 && b == 0) ? 2 : 1;
      bool proj = (b == 0);
      u.push_back({"layer" + std::to_string(g + 1) + "_" + std::to_string(b + 1),
                   nn::AnyModule(Bottleneck(in, widths[g], stride)), proj ? 8 : 6});
      in = widths[g] * 4;
    }
  }
  u.push_back({"head", nn::AnyModule(PoolHead(2048, 1000)), 1});
  return u;
}

}  // namespace pm
