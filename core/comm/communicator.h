#pragma once
// Point-to-point tensor messages between pipeline stages. Implementations: InProcessComm
// (channels inside one process, for single-process execution and tests) and GlooComm
// (torch.distributed c10d ProcessGroupGloo over a TCPStore; NCCL where LibTorch has CUDA).
// Shapes and dtypes travel with the tensors. Messages between a pair of ranks with the same tag
// arrive in the order they were sent. One Communicator per stage; not shared between threads.
#include <torch/torch.h>

#include <string>

#include "core/util/errors.h"

namespace pm {

class CommError : public Error {
 public:
  CommError(std::string place, const std::string& problem) : Error(ErrorKind::Comm, std::move(place), problem) {}
};

// Message tags: training activations, gradients, and evaluation activations travel separately.
enum CommTag : int { kTagActivation = 1, kTagGradient = 2, kTagEval = 3 };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts sending; returns without waiting for the receiver. The tensor is copied or kept alive
  // until delivered, so the caller may reuse its own tensor.
  virtual void send(const torch::Tensor& t, int dst, int tag) = 0;
  // Blocks until the next message from `src` with `tag` arrives; throws CommError naming the
  // peer after the timeout.
  virtual torch::Tensor recv(int src, int tag) = 0;
  // A message whose shape both sides can tell apart by a key they both know (training sends key
  // them by the microbatch's rows: a stage's output has one shape per microbatch size). A
  // transport that carries shapes apart from payloads (NCCL: a header on a host group, the payload
  // on the GPU) agrees on a key's dtype and shape with the channel's first message of that key and
  // sends the payload alone after it: no header and no host round per message. A message whose
  // shape differs from the one its key agreed is refused (CommError). Keys are >= 0. Every message of a (peer,
  // tag) channel goes through sendKeyed/recvKeyed or none does. Others send as send/recv do.
  virtual void sendKeyed(const torch::Tensor& t, int dst, int tag, int64_t key) { send(t, dst, tag); }
  virtual torch::Tensor recvKeyed(int src, int tag, int64_t key) { return recv(src, tag); }
  // Header messages this communicator has sent (shape agreements); 0 where none travel apart.
  virtual int64_t headersSent() const { return 0; }
  // Whether recv(src, tag) would return without blocking. Implementations that cannot tell
  // return true (the caller then simply blocks in recv).
  virtual bool poll(int src, int tag) { return true; }
  // Waits until every started send has been delivered.
  virtual void finish() {}
  // Waits for the sends, then ends the communicators (NCCL's); nothing is sent after it.
  virtual void shutdown() { finish(); }
  // A small shared key-value side channel (the c10d store): used to agree on where to stop.
  // Implementations without one ignore puts and never find a key.
  virtual void putControl(const std::string& key, int64_t value) {}
  virtual bool getControl(const std::string& key, int64_t& value) { return false; }
  // Whether putControl / getControl reach the other stages (a real, multi-process run).
  virtual bool sharedControl() const { return false; }
  virtual std::string backend() const = 0;
};

}  // namespace pm
