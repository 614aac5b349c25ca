#include <gtest/gtest.h>

#include "core/engine/memory_accounting.h"
#include "core/engine/tensor_memory_meter.h"

#include <c10/core/CPUAllocator.h>
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

#include <torch/version.h>

#include <climits>
#include <cstdlib>

#include "core/util/system_info.h"

// The BLAS report names the library that libblas.so.3 resolves to (OpenBLAS after scripts/setup.sh).
// A test of core/util/system_info kept with the LibTorch tests: BLAS comes with LibTorch, which
// util_test does not link.
TEST(SystemInfo, ReportsTheLoadedBlasLibrary) {
  torch::mm(torch::randn({64, 64}), torch::randn({64, 64}));  // make sure BLAS is in use
  BlasInfo blas = loadedBlas();
#if TORCH_VERSION_MAJOR >= 2
  // PyPI's LibTorch: MKL, linked statically into libtorch_cpu.so (no libblas is loaded).
  EXPECT_EQ(blas.kind, "mkl");
  EXPECT_NE(blas.library.find("libtorch_cpu.so"), std::string::npos) << blas.library;
  return;
#endif
  char resolved[PATH_MAX];
  const char* link = "/usr/lib/x86_64-linux-gnu/libblas.so.3";
  if (!realpath(link, resolved)) GTEST_SKIP() << "no libblas.so.3 on this machine";
  EXPECT_EQ(blas.library, std::string(resolved));
  const bool openblas = std::string(resolved).find("openblas") != std::string::npos;
  EXPECT_EQ(blas.kind == "openblas", openblas) << blas.kind;
  EXPECT_EQ(blas.isReference(), std::string(resolved).find("/blas/libblas") != std::string::npos);
}

// The meter counts exactly the bytes of the tensors allocated after install() and gives them back
// when they are freed, through tensors and through the allocator's raw interface.
TEST(TensorMemoryMeter, CountsTensorStorageExactly) {
  TensorMemoryMeter::install();
  ASSERT_TRUE(TensorMemoryMeter::installed());
  const int64_t base = TensorMemoryMeter::live();
  {
    torch::Tensor a = torch::empty({1000}, torch::kFloat32);
    EXPECT_EQ(TensorMemoryMeter::live() - base, 4000);
    TensorMemoryMeter::resetPeak();
    {
      torch::Tensor b = torch::ones({250, 4}, torch::kFloat64);  // 8000 bytes, freed at once
      EXPECT_EQ(TensorMemoryMeter::live() - base, 12000);
      EXPECT_DOUBLE_EQ(b.sum().item<double>(), 1000.0);  // the memory is usable
    }
    EXPECT_EQ(TensorMemoryMeter::live() - base, 4000);
    EXPECT_GE(TensorMemoryMeter::peak() - base, 12000);
    torch::Tensor view = a.view({10, 100});  // a view allocates no storage
    EXPECT_EQ(TensorMemoryMeter::live() - base, 4000);
  }
  EXPECT_EQ(TensorMemoryMeter::live(), base);
  void* raw = c10::GetCPUAllocator()->raw_allocate(512);
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(raw) % 64, 0u);  // the base allocator's alignment is kept
  EXPECT_EQ(TensorMemoryMeter::live() - base, 512);
  c10::GetCPUAllocator()->raw_deallocate(raw);
  EXPECT_EQ(TensorMemoryMeter::live(), base);
}
