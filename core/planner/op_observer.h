#pragma once
// Operator-level observation of a forward pass (the C++ counterpart of forward hooks): runs a
// function with a LibTorch RecordFunction callback installed on this thread and returns the
// top-level operations it dispatched (operations called from inside other operations are not
// listed), each with its input and output tensors. Plain data; no LibTorch in this header.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pm {

struct ObservedTensor {
  const void* storage = nullptr;  // identity of the tensor's storage (aliasing and weight matching)
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t bytes = 0;
};

struct ObservedOp {
  std::string name;  // e.g. "aten::conv2d"
  std::vector<ObservedTensor> inputs, outputs;
  // True when an output shares storage with an input (views, in-place operations).
  bool aliases() const;
  int64_t outputBytes() const;
  int64_t outputNumel() const;
};

// Not reentrant: one observation per thread at a time. Exceptions from fn propagate.
std::vector<ObservedOp> observeOps(const std::function<void()>& fn);

}  // namespace pm
