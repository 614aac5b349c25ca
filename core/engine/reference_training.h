#pragma once
// Non-pipelined training of an experiment: the whole model in one module, each minibatch split
// into the same N microbatches with gradient accumulation, one optimizer step per minibatch (base
// learning rate), with the intra-op and BLAS threads of one stage. The reference the pipelined schedules are checked against, and the plain
// LibTorch loop the engine is benchmarked against.
#include <torch/torch.h>

#include <vector>

#include "core/config/experiment.h"

namespace pm {

struct ReferenceResult {
  std::vector<torch::Tensor> state;  // parameters then buffers, in unit order
  double samplesPerSecond = 0;       // over the steps after `warmupSteps`
};

// The order in which a minibatch's microbatch gradients are summed. Float addition is not
// associative, so a reference meant to equal a schedule bit for bit sums in that schedule's order:
// InOrder (each microbatch's backward right after its forward, as 1f1b's and a plain loop's), or
// Reversed (all forwards, then the backwards last to first, as gpipe's).
enum class BackwardOrder { InOrder, Reversed };

ReferenceResult trainWithoutPipeline(const Experiment& e, int64_t warmupSteps = 2, BackwardOrder order = BackwardOrder::InOrder);

}  // namespace pm
