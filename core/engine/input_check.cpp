#include "core/engine/input_check.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/data/datasets.h"
#include "core/engine/batch_source.h"
#include "core/engine/tensor_data.h"
#include "core/models/model_zoo.h"
#include "core/models/torch_text.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

namespace pm {
namespace {

// The pipeline against the model's units.
void checkUnits(const Experiment& e, const std::string& modelPlace, int units) {
  const auto& p = e.pipeline;
  if (p.stages > units)
    throw ConfigError("pipeline.stages", "expected at most " + std::to_string(units) + " stages (" + modelPlace + " has " +
                                             std::to_string(units) + " partitionable units), found " + std::to_string(p.stages));
  if (modelStages(e) > units)
    throw ConfigError(takesChunks(p.schedule) ? "pipeline.chunks" : "pipeline.stages",
                      choiceName(p.schedule) + " cuts the model into chunks x stages = " + std::to_string(pipelineChunks(e)) + " x " +
                          std::to_string(p.stages) + " = " + std::to_string(modelStages(e)) + " stages, but " + modelPlace + " has " +
                          std::to_string(units) + " partitionable units");
  const auto& b = p.partition.boundaries;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] > units - 1)
      throw ConfigError("pipeline.partition.boundaries[" + std::to_string(i) + "]",
                        "expected an integer 1.." + std::to_string(units - 1) + " (" + modelPlace + " has " +
                            std::to_string(units) + " units), found " + std::to_string(b[i]));
}

// The model's output for one sample against the labels the loss compares it with.
void checkOutput(const torch::Tensor& out, Task task, const torch::Tensor& y, const std::string& dataPlace,
                 const std::string& modelPlace) {
  const std::string outText = modelPlace + "'s output for one sample has shape " + shapeText(out.sizes());
  if (task == Task::Regression) {
    const int64_t per = y.dim() > 1 ? y[0].numel() : 1;
    if (out.numel() != per)
      throw DataError(dataPlace, outText + " (" + std::to_string(out.numel()) + " values), but each target of \"y\" has " +
                                     std::to_string(per) + " (regression compares them one to one)");
    return;
  }
  if (!out.is_floating_point())
    throw DataError(dataPlace, outText + " of integers: the " +
                                   std::string(task == Task::Classification ? "classification" : "language-model") +
                                   " loss needs floating-point logits");
  const bool lm = task == Task::LanguageModel;
  const int64_t wantDim = lm ? 3 : 2;
  if (out.dim() != wantDim)
    throw DataError(dataPlace, outText + ": the " + std::string(lm ? "language-model" : "classification") + " loss needs logits of shape " +
                                   (lm ? "[1, T, V]" : "[1, C]"));
  if (lm && y.dim() >= 2 && out.size(1) != y.size(1))
    throw DataError(dataPlace, outText + ", but \"y\" holds " + std::to_string(y.size(1)) + " next tokens per sample");
  const int64_t classes = out.size(-1);
  const int64_t lo = y.min().item<int64_t>(), hi = y.max().item<int64_t>();
  if (lo < 0 || hi >= classes)
    throw DataError(dataPlace, "tensor \"y\" holds labels " + std::to_string(lo) + ".." + std::to_string(hi) + ", outside the " +
                                   std::to_string(classes) + " classes of " + modelPlace + "'s output (shape " +
                                   shapeText(out.sizes()) + "): labels must be 0.." + std::to_string(classes - 1));
}

// data.eval_path's tensor file, read when first asked for (nullptr without one), so that its
// errors come after those of the training file and the model, as the run meets them.
using EvalFile = std::function<const TensorFile*()>;

// checkModelOnData with data.path's tensor file already read (`train`; nullptr, and `eval` not
// called, unless the data are tensors).
void checkModelOnFiles(const Experiment& e, const TensorFile* train, const EvalFile& eval) {
  const auto& d = e.data;
  const bool tensors = train != nullptr;
  if (!e.model.fromFile() && !tensors) return;
  torch::NoGradGuard noGrad;
  auto units = buildModel(e.model, e.training.seed);  // ConfigError naming the model file
  const std::string modelPlace = e.model.fromFile() ? "the model in " + e.model.path : "model " + e.model.name;
  checkUnits(e, modelPlace, static_cast<int>(units.size()));

  // One sample, and the labels the loss will compare the model's output with.
  torch::Tensor x, y;
  Task task = Task::Classification;
  std::string dataPlace = "data.dataset=" + choiceName(d.dataset);
  if (tensors) {
    task = taskOfLabels(*train, e.model.task);
    x = train->x.narrow(0, 0, 1);
    y = train->y;
    dataPlace = d.path;
  } else {
    x = exampleInput(e, 1);
    if (d.dataset == DatasetKind::Text) {
      task = Task::LanguageModel;
      y = torch::tensor({int64_t{0}, int64_t{255}}).view({1, 2});  // bytes
    } else if (d.dataset == DatasetKind::Synthetic && d.synthetic_task == SyntheticTask::Regression) {
      task = Task::Regression;
      y = torch::zeros({1});
    } else {
      y = torch::tensor({int64_t{0}, int64_t{9}});  // Fashion-MNIST and synthetic: 10 classes
    }
  }
  if (!e.model.fromFile()) {  // the zoo says what it takes
    const auto want = sampleShape(e.model.name, d.context);
    const bool tokens = modelTakesTokens(e.model.name);
    if (x.sizes().slice(1).vec() != want || tokens == x.is_floating_point())
      throw DataError(dataPlace, "tensor \"x\" holds samples of shape " + shapeText(x.sizes().slice(1)) + " (" +
                                     c10::toString(x.scalar_type()) + "); model " + e.model.name + " takes " + shapeText(want) +
                                     (tokens ? " (integer tokens)" : " (floating point)"));
  }
  torch::Tensor h = x;
  for (size_t i = 0; i < units.size(); ++i) {
    auto& u = units[i];
    u.module.ptr()->eval();
    try {
      h = u.module.forward(h);
    } catch (const std::exception& ex) {
      throw DataError(dataPlace, "one sample of " + std::string(tensors ? "tensor \"x\"" : "the data") + " (shape " +
                                     shapeText(x.sizes().slice(1)) + ", " + c10::toString(x.scalar_type()) +
                                     ") does not fit " + modelPlace + ": unit " + std::to_string(i) + " (\"" + u.name +
                                     "\") took an input of shape " + shapeText(h.sizes()) + " and failed: " + errorFirstLine(ex));
    }
  }
  if (task == Task::LanguageModel && !tensors) y = y.narrow(1, 0, 1).expand({1, h.dim() >= 2 ? h.size(1) : 1});
  checkOutput(h, task, y, dataPlace, modelPlace);
  if (!tensors) return;
  if (const TensorFile* ev = eval()) checkOutput(h, task, ev->y, d.eval_path, modelPlace);
}

// Reads data.eval_path once, on the first call.
EvalFile evalFileOf(const Experiment& e, std::optional<TensorFile>& cache) {
  return [&e, &cache]() -> const TensorFile* {
    if (e.data.eval_path.empty()) return nullptr;
    if (!cache) cache = loadTensorFile(e.data.eval_path);
    return &*cache;
  };
}

}  // namespace

void checkModelOnData(const Experiment& e) {
  const auto& d = e.data;
  if (d.dataset != DatasetKind::Tensors) return checkModelOnFiles(e, nullptr, {});
  const TensorFile train = loadTensorFile(d.path);
  std::optional<TensorFile> evalCache;
  checkModelOnFiles(e, &train, evalFileOf(e, evalCache));
}

void checkDataAvailable(const Experiment& e) {
  const auto& d = e.data;
  int64_t trainSamples = -1;  // -1: not known
  if (d.dataset == DatasetKind::FashionMnist) {
    // Read whole, as the run will (about 50 MB for both splits): a truncated file, absurd
    // dimensions or a label out of range is an error here (exit 2, nothing recorded), not a run
    // that fails after it was recorded.
    trainSamples = limitedCount(loadFashionMnist(d.path, "train").count, d.train_limit);
    loadFashionMnist(d.path, choiceName(d.eval_split));
  } else if (d.dataset == DatasetKind::Text) {
    const TextCorpus corpus = loadTextCorpus(d.path, d.eval_fraction, d.context);  // a few MB at most: read it once
    trainSamples = limitedCount((static_cast<int64_t>(corpus.train.size()) - 1) / std::max(1, d.context), d.train_limit);
  } else if (d.dataset == DatasetKind::Synthetic) {
    trainSamples = limitedCount(d.synthetic_samples, d.train_limit);
  }
  if (d.dataset == DatasetKind::Tensors) {
    // Each file read once, and split as the run will split it.
    const TensorFile train = loadTensorFile(d.path);
    std::optional<TensorFile> evalCache;
    const EvalFile eval = evalFileOf(e, evalCache);
    trainSamples = makeTensorSource(e, true, train, nullptr)->size();
    checkModelOnFiles(e, &train, eval);
    makeTensorSource(e, false, train, eval());
  } else {
    checkModelOnFiles(e, nullptr, {});
  }
  // What the training plan would refuse at the start of the run (a failed run, exit 1).
  if (trainSamples >= 0 && trainSamples < e.pipeline.microbatches)
    throw ConfigError("data", "the training split has " + std::to_string(trainSamples) + " samples, fewer than pipeline.microbatches = " +
                                  std::to_string(e.pipeline.microbatches) + " (data.train_limit, data.synthetic_samples)");
  for (const auto& dev : e.execution.devices)
    if (dev != "cpu" && !torch::cuda::is_available())
      throw ConfigError("execution.devices", "device \"" + dev + "\" requested, but this LibTorch has no CUDA (or no GPU is visible)");
}

}  // namespace pm
