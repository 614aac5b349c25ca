#pragma once
// What the format knows about each model of the zoo without building it (no LibTorch):
// its partitionable units and parameter count. tests/core/models checks these figures against
// the built LibTorch modules.
#include <cstdint>
#include <string>
#include <vector>

namespace pm {

struct ModelInfo {
  std::string name;
  std::string description;
  std::string input;        // "image28" (1x28x28), "image224" (3x224x224), "tokens" (byte sequence)
  int units;                // partitionable units, in order
  int64_t parameters;       // trainable parameters
};

const std::vector<ModelInfo>& modelCatalog();
// nullptr when unknown.
const ModelInfo* findModel(const std::string& name);

}  // namespace pm
