#pragma once
// Training and held-out data as tensors, sliced into minibatches by sample index.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment.h"

namespace pm {

struct Batch {
  torch::Tensor x;  // [B, ...] float images or int64 tokens
  torch::Tensor y;  // [B] int64 labels, [B] float targets, or [B, T] int64 next tokens
  int64_t size() const { return x.size(0); }
};

enum class Task { Classification, Regression, LanguageModel };

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t size() const = 0;  // number of samples
  virtual Batch get(const std::vector<int64_t>& indices) const = 0;
  virtual Task task() const = 0;
  virtual std::string describe() const = 0;
};

// Builds the train / held-out source of an experiment (reads files; throws DataError).
std::unique_ptr<BatchSource> makeBatchSource(const Experiment& e, bool train);
// Checks that the experiment's data can be found (Fashion-MNIST: the train and evaluation files
// exist; text: the corpus reads and is long enough), so that a missing dataset is a DataError
// (exit 2) before a run is recorded, not a failed run; and what the run would refuse at its
// start: fewer training samples than microbatches (synthetic data, text, train_limit), a CUDA
// device on a LibTorch without CUDA (ConfigError).
void checkDataAvailable(const Experiment& e);

// Splits a minibatch into n microbatches along dimension 0 (sizes differ by at most one;
// fewer than n when the batch has fewer than n samples).
std::vector<Batch> splitMicrobatches(const Batch& b, int n);

// Loss of a model output against the batch target, averaged over the batch.
torch::Tensor computeLoss(const torch::Tensor& output, const torch::Tensor& target, Task task);
// Number of correct predictions (classification), 0 otherwise.
int64_t countCorrect(const torch::Tensor& output, const torch::Tensor& target, Task task);

}  // namespace pm
