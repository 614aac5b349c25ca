#include <gtest/gtest.h>

#include "core/engine/memory_accounting.h"
#include "core/models/model_zoo.h"

using namespace pm;

TEST(MemoryAccounting, WeightsAndOptimizerStateEqualTensorBytes) {
  auto units = buildModel("cnn", 1);
  auto stage = makeStage(units, 0, 6);
  int64_t params = 0, buffers = 0;
  for (const auto& p : stage->parameters()) params += p.numel() * 4;
  for (const auto& b : stage->buffers()) buffers += b.numel() * static_cast<int64_t>(b.element_size());
  EXPECT_EQ(moduleWeightBytes(*stage), params + buffers);
  EXPECT_EQ(params, 871018 * 4);

  torch::optim::SGD sgd(stage->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_EQ(optimizerStateBytes(sgd), 0);  // no state before the first step
  EXPECT_EQ(moduleGradientBytes(*stage), 0);
  auto y = stage->forward(torch::randn({2, 1, 28, 28}));
  y.sum().backward();
  EXPECT_EQ(moduleGradientBytes(*stage), params);
  sgd.step();
  EXPECT_EQ(optimizerStateBytes(sgd), params);  // one momentum buffer per parameter

  torch::optim::Adam adam(stage->parameters(), torch::optim::AdamOptions(1e-3));
  adam.step();
  EXPECT_EQ(optimizerStateBytes(adam), 2 * params + 0);  // exp_avg + exp_avg_sq (no amsgrad)
}
