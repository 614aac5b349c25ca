#pragma once
// The LibTorch compatibility seam: the one place where the project tells LibTorch releases apart
// (Debian's 1.13, PyPI's 2.x). Code elsewhere uses these names and never tests a torch version.
// Header-only; include it only from targets that link LibTorch (comm, engine, models, cli).
#include <torch/torch.h>
#include <torch/version.h>

#include <string>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#ifdef PIPEMARE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace pm::compat {

// The object a c10d backend's point-to-point calls live on: since PyTorch 2.0 ProcessGroupGloo and
// ProcessGroupNCCL derive from c10d::Backend (a ProcessGroup wraps backends); in 1.13 they are
// ProcessGroups themselves.
#if TORCH_VERSION_MAJOR >= 2
using P2PGroup = c10d::Backend;
#else
using P2PGroup = c10d::ProcessGroup;
#endif

// Ends a group's communicators (NCCL's are otherwise torn down by static destructors, or never:
// the workers leave with _Exit). 1.13's groups have no shutdown; nothing to do there.
inline void shutdownGroup(P2PGroup& group) {
#if TORCH_VERSION_MAJOR >= 2
  group.shutdown();
#else
  (void)group;
#endif
}

// The LibTorch release this binary was compiled against ("2.11.0").
inline std::string torchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Whether the NCCL backend is compiled in (torch_cuda's USE_C10D_NCCL).
constexpr bool kNcclCompiled =
#ifdef USE_C10D_NCCL
    true;
#else
    false;
#endif

// The CUDA version this binary was compiled against ("13.0"), "" for a CPU-only build.
inline std::string cudaVersion() {
#ifdef PIPEMARE_CUDA_VERSION
  return PIPEMARE_CUDA_VERSION;
#else
  return "";
#endif
}

// The CUDA caching allocator's figures for one device, all pools together.
struct CudaAllocatorStats {
  int64_t allocated = 0, allocatedPeak = 0, reserved = 0;
};
#ifdef PIPEMARE_WITH_CUDA
inline CudaAllocatorStats cudaAllocatorStats(int device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  // StatType::AGGREGATE is index 0 in every release; the enum itself moved from
  // c10::cuda::CUDACachingAllocator (1.13) to c10::CachingAllocator (2.x).
  constexpr size_t kAggregate = 0;
  return {stats.allocated_bytes[kAggregate].current, stats.allocated_bytes[kAggregate].peak,
          stats.reserved_bytes[kAggregate].current};
}
// Makes `device` the calling thread's current CUDA device (c10's, which NCCL's communicators and
// the default streams follow).
inline void setCurrentCudaDevice(int device) { c10::cuda::set_device(static_cast<c10::DeviceIndex>(device)); }
#endif

}  // namespace pm::compat
