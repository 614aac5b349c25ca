#include "core/config/model_catalog.h"

namespace pm {

const std::vector<ModelInfo>& modelCatalog() {
  static const std::vector<ModelInfo> kModels = {
      {"mlp", "784-512-512-10 MLP, ReLU", "image28", 3, 669706},
      {"cnn", "4 conv-BN-ReLU (32,32,64,64) with 2 max-pools, FC 3136-256-10", "image28", 6, 871018},
      {"resnet20", "CIFAR ResNet-20 on 1x28x28 (16/32/64 channels, 3x3 basic blocks)", "image28", 11, 269434},
      {"charlm", "byte-level pre-LN Transformer decoder: d=128, 4 layers, 4 heads, ff 512, ctx 128", "tokens", 6, 875264},
      {"resnet50", "ImageNet ResNet-50 (bottleneck blocks), synthetic 3x224x224 input", "image224", 18, 25557032},
  };
  return kModels;
}

const ModelInfo* findModel(const std::string& name) {
  for (const auto& m : modelCatalog())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace pm
