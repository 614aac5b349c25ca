#pragma once
// One stage's device, decided in one place and handed to the executor and the communicator.
//
// execution.devices lists the devices of one node: a worker takes the entry of its *local* rank
// (its place among the stages on its node), as torchrun and Slurm number GPUs, so rank 2 of a
// 2-GPU node asks for cuda:0, not cuda:2. One entry serves every stage. The local rank comes from
// LOCAL_RANK (torchrun, and `pipemare run`, which sets it for its workers), else SLURM_LOCALID,
// else the worker's global rank (one node).
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/util/system_info.h"

namespace pm {

struct DeviceContext {
  torch::Device device{torch::kCPU};
  int localRank = 0;
  // Where the choice came from, for messages: "execution.devices[1] (LOCAL_RANK=1)".
  std::string source = "cpu (no execution.devices)";

  bool cuda() const { return device.is_cuda(); }
  // Makes the device the thread's current CUDA device: before the process group is formed, so that
  // NCCL's communicators, streams and buffers live on it, not on cuda:0. A no-op for the CPU.
  void makeCurrent() const;
};

// The local rank from the environment: LOCAL_RANK, else SLURM_LOCALID, else `fallback`. A value that
// is not a whole number in 0..65535 is a ConfigError naming the variable.
// `source` (when given) says which: "LOCAL_RANK=1", "SLURM_LOCALID=1" or "rank 1".
int localRankFromEnv(int fallback, std::string* source = nullptr);

// The device of the worker with `localRank`: devices[localRank] (devices[0] when there is one
// entry; "cpu" when none). Throws ConfigError naming execution.devices when the local rank has no
// entry, the name is not a device, or a CUDA device is asked of a build or machine without one.
DeviceContext resolveDeviceContext(const std::vector<std::string>& devices, int localRank, const std::string& localRankSource);

// What this binary was built on: the LibTorch release, the CUDA version it was compiled against
// ("" for none) and the communication backends compiled in (gloo always; nccl with CUDA).
EngineBuild engineBuild();

}  // namespace pm
