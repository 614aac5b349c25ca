#include <gtest/gtest.h>

#include "core/models/model_zoo.h"
#include "core/planner/model_profile.h"
#include "core/planner/stage_profile.h"
#include "core/util/errors.h"

using namespace pm;

namespace {
const ModelProfile& resnet50() { return cachedModelProfile("resnet50"); }
}  // namespace

TEST(ModelProfile, ResNet50Has107WeightLayersAndItsParameters) {
  const auto& p = resnet50();
  EXPECT_EQ(p.layers.size(), 107u);
  EXPECT_EQ(p.countKind("conv"), 53);
  EXPECT_EQ(p.countKind("batchnorm"), 53);
  EXPECT_EQ(p.countKind("linear"), 1);
  EXPECT_EQ(p.parameters(), 25557032);
  int64_t layerParams = 0;
  for (const auto& l : p.layers) layerParams += l.parameters;
  EXPECT_EQ(layerParams, 25557032);
  EXPECT_EQ(p.paramBytes(), 4 * 25557032);
}

TEST(ModelProfile, ResNet50ShapesComeFromTheShapePass) {
  const auto& p = resnet50();
  const auto& conv1 = p.layers.front();
  EXPECT_EQ(conv1.name, "stem.conv");
  EXPECT_EQ(conv1.kind, "conv");
  EXPECT_EQ(conv1.outputShape, (std::vector<int64_t>{1, 64, 112, 112}));
  EXPECT_EQ(conv1.inputBytes, 3 * 224 * 224 * 4);
  EXPECT_EQ(conv1.outputBytes, 64 * 112 * 112 * 4);
  EXPECT_DOUBLE_EQ(conv1.flops, 2.0 * 64 * 112 * 112 * (3 * 7 * 7));  // 2 * MACs
  EXPECT_EQ(p.layers[1].kind, "batchnorm");
  EXPECT_EQ(p.layers[1].outputBytes, conv1.outputBytes);
  EXPECT_DOUBLE_EQ(p.layers[1].flops, 5.0 * 64 * 112 * 112);
  const auto& fc = p.layers.back();
  EXPECT_EQ(fc.kind, "linear");
  EXPECT_EQ(fc.name, "head.fc");
  EXPECT_EQ(fc.inputBytes, 2048 * 4);
  EXPECT_EQ(fc.outputShape, (std::vector<int64_t>{1, 1000}));
  EXPECT_DOUBLE_EQ(fc.flops, 2.0 * 1000 * 2048);
  // The projection shortcut of layer2_1 runs at stride 2: 28x28 output with 512 channels.
  bool found = false;
  for (const auto& l : p.layers)
    if (l.name == "layer2_1.down_conv") {
      found = true;
      EXPECT_EQ(l.outputShape, (std::vector<int64_t>{1, 512, 28, 28}));
      EXPECT_EQ(l.inputBytes, 256 * 56 * 56 * 4);
    }
  EXPECT_TRUE(found);
  // About 4.1 GMACs per 224x224 image.
  double layerFlops = 0;
  for (const auto& l : p.layers) layerFlops += l.flops;
  EXPECT_GT(layerFlops, 7.6e9);
  EXPECT_LT(layerFlops, 8.6e9);
  EXPECT_GE(p.flops(), layerFlops);
}

TEST(ModelProfile, UnitsAggregateTheirLayers) {
  const auto& p = resnet50();
  auto units = buildModel("resnet50", 1);
  ASSERT_EQ(p.units.size(), units.size());
  int next = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    const auto& up = p.units[u];
    EXPECT_EQ(up.name, units[u].name);
    EXPECT_EQ(up.parameters, parameterCount(units[u]));
    EXPECT_EQ(up.layerCount, units[u].weight_layers) << up.name;
    EXPECT_EQ(up.firstLayer, next);
    next += up.layerCount;
    int64_t outs = 0;
    double flops = 0;
    for (int l = up.firstLayer; l < up.firstLayer + up.layerCount; ++l) {
      EXPECT_EQ(p.layers[static_cast<size_t>(l)].unit, static_cast<int>(u));
      outs += p.layers[static_cast<size_t>(l)].outputBytes;
      flops += p.layers[static_cast<size_t>(l)].flops;
    }
    EXPECT_GT(up.activationBytes, outs) << up.name;  // the layers' outputs plus ReLUs, adds, pools
    EXPECT_GE(up.flops, flops) << up.name;
    if (u > 0) {
      EXPECT_EQ(up.inputBytes, p.units[u - 1].outputBytes);
    }
  }
  EXPECT_EQ(p.units.front().inputBytes, 3 * 224 * 224 * 4);
  EXPECT_EQ(p.units[1].inputBytes, 64 * 56 * 56 * 4);  // after the stem's max-pool
  EXPECT_EQ(p.units.back().outputBytes, 1000 * 4);
}

TEST(ModelProfile, SmallModelsAndTheTransformer) {
  const auto mlp = profileModel("mlp");
  ASSERT_EQ(mlp.layers.size(), 3u);
  EXPECT_EQ(mlp.parameters(), 669706);
  EXPECT_DOUBLE_EQ(mlp.layers[0].flops, 2.0 * 784 * 512);
  EXPECT_EQ(mlp.layers[0].inputBytes, 784 * 4);

  const auto lm = profileModel("charlm", 32);
  EXPECT_EQ(lm.parameters(), 875264);
  EXPECT_EQ(lm.countKind("embedding"), 2);
  EXPECT_EQ(lm.countKind("layernorm"), 9);
  EXPECT_EQ(lm.countKind("linear"), 17);
  EXPECT_EQ(lm.layers.front().kind, "embedding");
  EXPECT_EQ(lm.layers.front().inputBytes, 32 * 8);           // int64 tokens
  EXPECT_EQ(lm.layers.front().outputBytes, 32 * 128 * 4);
  EXPECT_EQ(lm.layers.back().outputShape, (std::vector<int64_t>{1, 32, 256}));
  // Attention (QK^T and AV: 2 * 2*T*T*d) is counted in the block's FLOPs but belongs to no layer.
  const auto& block = lm.units[1];
  double layerFlops = 0;
  for (int l = block.firstLayer; l < block.firstLayer + block.layerCount; ++l) layerFlops += lm.layers[static_cast<size_t>(l)].flops;
  EXPECT_GE(block.flops - layerFlops, 2.0 * 2.0 * 32 * 32 * 128);
}

TEST(ModelProfile, BadInputIsAConfigError) {
  EXPECT_THROW(profileModel("resnet51"), ConfigError);
  EXPECT_THROW(profileModel("charlm", 4096), ConfigError);  // longer than its position table
  EXPECT_THROW(cachedModelProfile("nope"), ConfigError);
}

TEST(StageProfile, LayerAndUnitStages) {
  const auto& p = resnet50();
  const auto layers = layerStages(p, 2);
  ASSERT_EQ(layers.size(), 107u);
  EXPECT_EQ(layers[0].weightBytes, p.layers[0].paramBytes);
  EXPECT_EQ(layers[0].activationBytes, 2 * p.layers[0].outputBytes);
  EXPECT_EQ(layers[0].inputBytes, 2 * 3 * 224 * 224 * 4);

  const auto part = parameterPartition(p, 4);
  const auto units = unitStages(p, part, 1);
  ASSERT_EQ(units.size(), 4u);
  int64_t w = 0;
  for (const auto& s : units) w += s.weightBytes;
  EXPECT_EQ(w, p.paramBytes());
  EXPECT_EQ(units[0].inputBytes, p.units[0].inputBytes);
  EXPECT_EQ(units[3].outputBytes, 1000 * 4);
  for (size_t s = 1; s < units.size(); ++s) EXPECT_EQ(units[s].inputBytes, units[s - 1].outputBytes);
  EXPECT_THROW(parameterPartition(p, 19), std::invalid_argument);

  const auto grouped = layerStages(p, layerParameterPartition(p, 8), 1);
  ASSERT_EQ(grouped.size(), 8u);
  int64_t gw = 0;
  for (const auto& s : grouped) gw += s.weightBytes;
  EXPECT_EQ(gw, p.paramBytes());
}
