#pragma once
// torch.distributed (c10d) point-to-point over ProcessGroupGloo and a TCPStore (rank 0 hosts the
// store). Every blocking call has a timeout; a dead or silent peer ends in a CommError naming it.
// Messages carry a header (rank, dtype, shape) then the payload, each with its own Gloo tag.
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"

namespace pm {

// One stream of payloads on NCCL's layout (headers on a Gloo group, payloads on the GPU): the
// messages with wire tag `tag` from rank `from` to rank `to`, on a two-rank group of their own.
struct PayloadChannel {
  int tag = 0;
  int from = 0;
  int to = 0;
};
// A pipeline of `ranks` ranks with one stage each: activations and evaluations down, gradients up.
std::vector<PayloadChannel> plainPipelineChannels(int ranks);

struct DistributedOptions {
  std::string masterAddr = "127.0.0.1";  // TCPStore address (rank 0 listens here)
  int masterPort = 0;                     // TCPStore port
  int rank = 0;
  int worldSize = 1;
  std::string backend = "gloo";           // gloo | nccl
  double timeoutS = 60.0;                 // every blocking call
  std::string interfaceHost;              // host name/address for Gloo's device ("" = masterAddr for loopback)
  // Single-node runs: a c10d FileStore at this path (in a private directory) instead of the
  // TCPStore, so that nothing listens beyond Gloo's loopback sockets. "" = TCPStore.
  std::string storeFile;
  // The stage's CUDA device index (DeviceContext), -1 for the CPU: NCCL payloads live there, and
  // with Gloo a CUDA stage's messages are staged through pinned host memory.
  int cudaDevice = -1;
  // NCCL's layout (headers on a Gloo group, payloads on a group per channel) with Gloo payload
  // groups: the protocol tested without a GPU. Always on for nccl.
  bool payloadChannelsOnGloo = false;
  // That layout's channels, every message that will travel between two ranks (all ranks pass the
  // same list); empty = plainPipelineChannels(worldSize). A payload on another is refused.
  std::vector<PayloadChannel> payloadChannels;
  // Under torchrun the agent already serves the TCPStore at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank joins it as a client, rank 0 included.
  bool joinAgentStore = false;
};

// Creates the communicator for `opts.backend`. Throws CommError for nccl when LibTorch was
// built without CUDA/NCCL, and when the store or the group cannot be formed in time.
std::unique_ptr<Communicator> makeDistributedComm(const DistributedOptions& opts);

// A free TCP port on the given address (bind to port 0 and read it back).
int findFreePort(const std::string& addr = "127.0.0.1");

// Whether this LibTorch build has the NCCL backend compiled in.
bool ncclAvailable();

}  // namespace pm
