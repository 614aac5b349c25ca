#include <gtest/gtest.h>

#include "core/config/model_catalog.h"
#include "core/models/model_zoo.h"
#include "core/util/errors.h"

using namespace pm;

// The catalog's (torch-free) figures must match the built modules.
TEST(ModelZoo, ParameterAndUnitCountsMatchCatalogAndSpec) {
  const std::map<std::string, int64_t> spec = {{"mlp", 669706}, {"cnn", 871018}, {"resnet20", 269434},
                                               {"charlm", 875264}, {"resnet50", 25557032}};
  for (const auto& m : modelCatalog()) {
    auto units = buildModel(m.name, 1);
    EXPECT_EQ(parameterCount(units), spec.at(m.name)) << m.name;
    EXPECT_EQ(parameterCount(units), m.parameters) << m.name;
    EXPECT_EQ(static_cast<int>(units.size()), m.units) << m.name;
  }
}

TEST(ModelZoo, ResNet50Has107WeightLayers) {
  auto units = buildModel("resnet50", 1);
  int convs = 0, bns = 0, fcs = 0;
  for (const auto& u : units)
    for (const auto& mod : u.module.ptr()->modules(false)) {
      const std::string n = mod->name();
      if (n == "torch::nn::Conv2dImpl") ++convs;
      if (n == "torch::nn::BatchNorm2dImpl") ++bns;
      if (n == "torch::nn::LinearImpl") ++fcs;
    }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(bns, 53);
  EXPECT_EQ(fcs, 1);
}

TEST(ModelZoo, ForwardShapes) {
  torch::NoGradGuard ng;
  for (const char* name : {"mlp", "cnn", "resnet20"}) {
    auto units = buildModel(name, 1);
    auto stage = makeStage(units, 0, static_cast<int>(units.size()));
    auto y = stage->forward(torch::randn({3, 1, 28, 28}));
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 10})) << name;
  }
  auto lm = buildModel("charlm", 1);
  auto stage = makeStage(lm, 0, static_cast<int>(lm.size()));
  auto y = stage->forward(torch::randint(0, 256, {2, 16}, torch::kLong));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 16, 256}));
}

TEST(ModelZoo, StagesComposeToTheWholeModel) {
  torch::NoGradGuard ng;
  auto units = buildModel("resnet20", 3);
  for (auto& u : units) u.module.ptr()->eval();
  auto x = torch::randn({2, 1, 28, 28});
  auto whole = makeStage(units, 0, 11)->forward(x);
  auto a = makeStage(units, 0, 4)->forward(x);
  auto b = makeStage(units, 4, 11)->forward(a);
  EXPECT_TRUE(torch::allclose(whole, b));
}

TEST(ModelZoo, CharLMIsCausal) {
  torch::NoGradGuard ng;
  auto lm = buildModel("charlm", 1);
  auto stage = makeStage(lm, 0, static_cast<int>(lm.size()));
  auto x = torch::randint(0, 256, {1, 12}, torch::kLong);
  auto y1 = stage->forward(x);
  auto x2 = x.clone();
  x2[0][11] = (x2[0][11].item<int64_t>() + 1) % 256;  // change the last token only
  auto y2 = stage->forward(x2);
  using torch::indexing::Slice;
  EXPECT_TRUE(torch::allclose(y1.index({0, Slice(0, 11)}), y2.index({0, Slice(0, 11)}), 1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(y1.index({0, 11}), y2.index({0, 11})));
}

TEST(ModelZoo, SameSeedSameWeights) {
  auto a = buildModel("cnn", 7), b = buildModel("cnn", 7), c = buildModel("cnn", 8);
  auto pa = a[0].module.ptr()->parameters()[0], pb = b[0].module.ptr()->parameters()[0],
       pc = c[0].module.ptr()->parameters()[0];
  EXPECT_TRUE(torch::equal(pa, pb));
  EXPECT_FALSE(torch::equal(pa, pc));
}

TEST(ModelZoo, UnknownModelIsAConfigError) {
  try {
    buildModel("resnet21", 1);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet20"), std::string::npos) << e.what();
  }
}
