#pragma once
// The arithmetic of a run that every stage must agree on: minibatches per epoch, total steps,
// which samples form minibatch k (a seeded shuffle per epoch), when to evaluate and log.
// Pure and deterministic; no LibTorch.
#include <cstdint>
#include <vector>

#include "core/config/experiment.h"

namespace pm {

class TrainingPlan {
 public:
  TrainingPlan(const Experiment& e, int64_t trainSamples);

  int64_t batchSize() const { return batch_; }
  int microbatches() const { return n_; }
  int64_t stepsPerEpoch() const { return stepsPerEpoch_; }
  int64_t totalSteps() const { return totalSteps_; }
  // Sample indices of minibatch k (0-based). A last partial batch with fewer than N samples is
  // dropped so that every minibatch splits into exactly N non-empty microbatches.
  std::vector<int64_t> minibatchIndices(int64_t k) const;
  // Samples in minibatch k, and in microbatch mb (minibatch mb / N split as tensor_split splits
  // it: the first size % N microbatches one sample larger), without drawing the shuffle.
  int64_t minibatchSize(int64_t k) const;
  int64_t microbatchSize(int64_t mb) const;
  // Evaluate after `done` minibatches (1-based count)?
  bool evalDue(int64_t done) const;
  bool logDue(int64_t done) const;
  bool traceDue(int64_t minibatch) const;  // record the trace of minibatch k?
  // PipeMare's synchronous warm-up: warmupEpochs epochs rounded to whole minibatches, at most the run.
  int64_t warmupMinibatches(double warmupEpochs) const;
  double epochAt(int64_t done) const { return static_cast<double>(done) / static_cast<double>(stepsPerEpoch_); }

 private:
  int64_t samples_, batch_;
  int n_;
  int64_t stepsPerEpoch_, totalSteps_;
  int64_t evalInterval_, logInterval_, traceSteps_;
  uint64_t seed_;
  bool shuffle_;
  mutable int64_t cachedEpoch_ = -1;
  mutable std::vector<int64_t> order_;
};

}  // namespace pm
