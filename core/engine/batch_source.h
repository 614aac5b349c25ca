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

struct TensorFile;

// Builds the train / held-out source of an experiment (reads files; throws DataError).
std::unique_ptr<BatchSource> makeBatchSource(const Experiment& e, bool train);
// The same for tensor data (data.dataset = tensors) from files already read: `file` is data.path's,
// `evalFile` data.eval_path's (needed for the held-out split when the experiment names one; else
// the held-out split is the last data.eval_fraction of `file`). Throws DataError naming the file.
std::unique_ptr<BatchSource> makeTensorSource(const Experiment& e, bool train, const TensorFile& file,
                                              const TensorFile* evalFile);
// `n` samples cut to data.train_limit / eval_limit `limit` (0: all of them).
int64_t limitedCount(int64_t n, int64_t limit);
// `n` samples of the experiment's input as its first stage receives them: the first samples of
// the training file (repeated when it has fewer) for tensor data, random ones of the dataset's
// shape otherwise (from the global generator). For profiling and partitioning by time.
torch::Tensor exampleInput(const Experiment& e, int64_t n);

// Splits a minibatch into n microbatches along dimension 0 (sizes differ by at most one;
// fewer than n when the batch has fewer than n samples).
std::vector<Batch> splitMicrobatches(const Batch& b, int n);

// Loss of a model output against the batch target, averaged over the batch.
torch::Tensor computeLoss(const torch::Tensor& output, const torch::Tensor& target, Task task);
// Number of correct predictions (classification), 0 otherwise.
int64_t countCorrect(const torch::Tensor& output, const torch::Tensor& target, Task task);

}  // namespace pm
