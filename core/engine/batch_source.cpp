#include "core/engine/batch_source.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/data/datasets.h"
#include "core/engine/tensor_data.h"
#include "core/models/torch_text.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace pm {
namespace {

// Fashion-MNIST mean and standard deviation of pixel values / 255.
constexpr float kFmnistMean = 0.2860f;
constexpr float kFmnistStd = 0.3530f;

torch::Tensor gather(const torch::Tensor& all, const std::vector<int64_t>& idx) {
  auto index = torch::from_blob(const_cast<int64_t*>(idx.data()), {static_cast<int64_t>(idx.size())}, torch::kLong);
  return all.index_select(0, index);
}

class TensorSource : public BatchSource {
 public:
  TensorSource(torch::Tensor x, torch::Tensor y, Task task, std::string desc)
      : x_(std::move(x)), y_(std::move(y)), task_(task), desc_(std::move(desc)) {}
  int64_t size() const override { return x_.size(0); }
  Batch get(const std::vector<int64_t>& idx) const override { return {gather(x_, idx), gather(y_, idx)}; }
  Task task() const override { return task_; }
  std::string describe() const override { return desc_; }

 private:
  torch::Tensor x_, y_;
  Task task_;
  std::string desc_;
};

// Windows of context+1 bytes, consecutive ones sharing one byte (window w: inputs bytes
// [w*context, (w+1)*context), targets shifted by one). With a limit below the window count, the
// samples are windows spread evenly over the text (the first K windows would be one corner of it).
class TextSource : public BatchSource {
 public:
  TextSource(std::vector<uint8_t> bytes, int context, int64_t limit, std::string desc)
      : bytes_(std::move(bytes)), context_(context), desc_(std::move(desc)) {
    windows_ = (static_cast<int64_t>(bytes_.size()) - 1) / context_;
    count_ = limit > 0 ? std::min(windows_, limit) : windows_;
  }
  int64_t size() const override { return count_; }
  Batch get(const std::vector<int64_t>& idx) const override {
    auto x = torch::empty({static_cast<int64_t>(idx.size()), context_}, torch::kLong);
    auto y = torch::empty_like(x);
    auto xa = x.accessor<int64_t, 2>();
    auto ya = y.accessor<int64_t, 2>();
    for (size_t b = 0; b < idx.size(); ++b) {
      const int64_t window = count_ == windows_ ? idx[b] : idx[b] * windows_ / count_;  // evenly strided
      const size_t off = static_cast<size_t>(window) * static_cast<size_t>(context_);
      for (int t = 0; t < context_; ++t) {
        xa[static_cast<int64_t>(b)][t] = bytes_[off + static_cast<size_t>(t)];
        ya[static_cast<int64_t>(b)][t] = bytes_[off + static_cast<size_t>(t) + 1];
      }
    }
    return {x, y};
  }
  Task task() const override { return Task::LanguageModel; }
  std::string describe() const override { return desc_; }

 private:
  std::vector<uint8_t> bytes_;
  int64_t context_;
  int64_t windows_ = 0, count_ = 0;
  std::string desc_;
};

// Random 3x224x224 images generated per index (deterministic), labels index % 1000.
class Synthetic224Source : public BatchSource {
 public:
  Synthetic224Source(int64_t count, uint64_t seed) : count_(count), seed_(seed) {}
  int64_t size() const override { return count_; }
  Batch get(const std::vector<int64_t>& idx) const override {
    std::vector<torch::Tensor> xs;
    auto y = torch::empty({static_cast<int64_t>(idx.size())}, torch::kLong);
    for (size_t i = 0; i < idx.size(); ++i) {
      auto gen = at::detail::createCPUGenerator(seed_ * 1000003ULL + static_cast<uint64_t>(idx[i]));
      xs.push_back(at::randn({3, 224, 224}, gen));
      y[static_cast<int64_t>(i)] = idx[i] % 1000;
    }
    return {torch::stack(xs), y};
  }
  Task task() const override { return Task::Classification; }
  std::string describe() const override { return "synthetic 3x224x224, " + std::to_string(count_) + " samples"; }

 private:
  int64_t count_;
  uint64_t seed_;
};

std::string fraction(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}


}  // namespace

int64_t limitedCount(int64_t n, int64_t limit) { return limit > 0 ? std::min(n, limit) : n; }

std::unique_ptr<BatchSource> makeTensorSource(const Experiment& e, bool train, const TensorFile& f, const TensorFile* evalFile) {
  const auto& d = e.data;
  const Task task = taskOfLabels(f, e.model.task);
  torch::Tensor x = f.x, y = f.y;
  std::string from = d.path;
  if (!d.eval_path.empty()) {
    if (!train) {
      if (!evalFile) throw std::logic_error("makeTensorSource: data.eval_path is set but its file was not given");
      const TensorFile& g = *evalFile;
      if (g.x.sizes().slice(1) != f.x.sizes().slice(1) || g.x.scalar_type() != f.x.scalar_type())
        throw DataError(d.eval_path, "tensor \"x\" holds samples of shape " + shapeText(g.x.sizes().slice(1)) + " (" +
                                         std::string(c10::toString(g.x.scalar_type())) + "), the training file's are " +
                                         shapeText(f.x.sizes().slice(1)) + " (" + c10::toString(f.x.scalar_type()) + ")");
      if (g.y.sizes().slice(1) != f.y.sizes().slice(1) || g.y.scalar_type() != f.y.scalar_type())
        throw DataError(d.eval_path, "tensor \"y\" holds labels of shape " + shapeText(g.y.sizes().slice(1)) + " (" +
                                         std::string(c10::toString(g.y.scalar_type())) + "), the training file's are " +
                                         shapeText(f.y.sizes().slice(1)) + " (" + c10::toString(f.y.scalar_type()) + ")");
      x = g.x;
      y = g.y;
      from = d.eval_path;
    }
  } else {
    const int64_t n = x.size(0);
    const int64_t held = std::max<int64_t>(1, static_cast<int64_t>(std::llround(static_cast<double>(n) * d.eval_fraction)));
    if (n - held < 1)
      throw DataError(d.path, "holds " + std::to_string(n) + " sample(s): too few to hold out data.eval_fraction = " +
                                  fraction(d.eval_fraction) + " of them and train on the rest (set data.eval_path)");
    x = train ? x.narrow(0, 0, n - held) : x.narrow(0, n - held, held);
    y = train ? y.narrow(0, 0, n - held) : y.narrow(0, n - held, held);
  }
  const int64_t n = limitedCount(x.size(0), train ? d.train_limit : d.eval_limit);
  const std::string what = train ? "train" : "held-out";
  return std::make_unique<TensorSource>(x.narrow(0, 0, n).contiguous(), y.narrow(0, 0, n).contiguous(), task,
                                        "tensors " + what + ", " + std::to_string(n) + " samples of " +
                                            shapeText(x.sizes().slice(1)) + " from " + from);
}

torch::Tensor exampleInput(const Experiment& e, int64_t n) {
  const auto& d = e.data;
  if (d.dataset == DatasetKind::Tensors) {
    const TensorFile f = loadTensorFile(d.path);
    return f.x.index_select(0, torch::arange(n, torch::kLong) % f.x.size(0));
  }
  if (d.dataset == DatasetKind::Text) return torch::randint(0, 256, {n, d.context}, torch::kLong);
  if (e.model.name == "resnet50") return torch::randn({n, 3, 224, 224});
  return torch::randn({n, 1, 28, 28});
}

std::unique_ptr<BatchSource> makeBatchSource(const Experiment& e, bool train) {
  const auto& d = e.data;
  const int64_t limit = train ? d.train_limit : d.eval_limit;
  if (d.dataset == DatasetKind::FashionMnist) {
    const std::string split = train ? "train" : choiceName(d.eval_split);
    std::string dir = d.path.empty() ? defaultFashionMnistDir() : d.path;
    ImageDataset ds = loadFashionMnist(dir, split);
    int64_t n = limitedCount(ds.count, limit);
    auto pixels = torch::from_blob(ds.pixels.data(), {ds.count, 1, ds.rows, ds.cols}, torch::kUInt8).narrow(0, 0, n);
    auto x = ((pixels.to(torch::kFloat) / 255.0f) - kFmnistMean) / kFmnistStd;
    auto y = torch::from_blob(ds.labels.data(), {ds.count}, torch::kUInt8).narrow(0, 0, n).to(torch::kLong);
    return std::make_unique<TensorSource>(x.contiguous(), y.contiguous(), Task::Classification,
                                          "fashion-mnist " + split + ", " +
                                              std::to_string(n) + " samples from " + dir);
  }
  if (d.dataset == DatasetKind::Text) {
    std::string path = d.path.empty() ? defaultTextCorpusPath() : d.path;
    TextCorpus corpus = loadTextCorpus(path, d.eval_fraction, d.context);
    auto bytes = train ? std::move(corpus.train) : std::move(corpus.valid);
    size_t nbytes = bytes.size();
    return std::make_unique<TextSource>(std::move(bytes), d.context, limit,
                                        std::string("text ") + (train ? "train" : "validation") + ", " +
                                            std::to_string(nbytes) + " bytes from " + path);
  }
  if (d.dataset == DatasetKind::Tensors) {
    const TensorFile f = loadTensorFile(d.path);
    if (train || d.eval_path.empty()) return makeTensorSource(e, train, f, nullptr);
    const TensorFile g = loadTensorFile(d.eval_path);
    return makeTensorSource(e, train, f, &g);
  }
  if (d.dataset == DatasetKind::Synthetic) {
    if (e.model.name == "resnet50") {
      return std::make_unique<Synthetic224Source>(limitedCount(train ? d.synthetic_samples : d.synthetic_samples / 4 + 1, limit),
                                                  e.training.seed + (train ? 0 : 7777));
    }
    int64_t count = train ? d.synthetic_samples : std::max<int64_t>(d.synthetic_samples / 4, 1);
    SyntheticDataset s = makeSyntheticDataset(count, choiceName(d.synthetic_task), e.training.seed + (train ? 0 : 7777));
    int64_t n = limitedCount(s.count, limit);
    auto x = torch::from_blob(s.x.data(), {s.count, 1, 28, 28}, torch::kFloat).narrow(0, 0, n).clone();
    bool regression = d.synthetic_task == SyntheticTask::Regression;
    torch::Tensor y = regression ? torch::from_blob(s.targets.data(), {s.count}, torch::kFloat).narrow(0, 0, n).clone()
                                 : torch::from_blob(s.labels.data(), {s.count}, torch::kLong).narrow(0, 0, n).clone();
    return std::make_unique<TensorSource>(x, y, regression ? Task::Regression : Task::Classification,
                                          "synthetic " + choiceName(d.synthetic_task) + ", " + std::to_string(n) + " samples");
  }
  throw ConfigError("data.dataset", "unknown dataset \"" + choiceName(d.dataset) + "\"");
}

std::vector<Batch> splitMicrobatches(const Batch& b, int n) {
  std::vector<Batch> out;
  auto xs = b.x.tensor_split(n, 0);
  auto ys = b.y.tensor_split(n, 0);
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i].size(0) > 0) out.push_back({xs[i], ys[i]});
  return out;
}

torch::Tensor computeLoss(const torch::Tensor& output, const torch::Tensor& target, Task task) {
  switch (task) {
    case Task::Classification:
      return torch::nn::functional::cross_entropy(output, target);
    case Task::Regression:  // one output per target value ([B, 1] against [B], or the targets' shape)
      return torch::mse_loss(output.reshape(target.sizes()), target);
    case Task::LanguageModel:
      return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(-1)}), target.reshape({-1}));
  }
  return {};
}

int64_t countCorrect(const torch::Tensor& output, const torch::Tensor& target, Task task) {
  if (task == Task::Classification) return output.argmax(1).eq(target).sum().item<int64_t>();
  if (task == Task::LanguageModel) return output.argmax(-1).eq(target).sum().item<int64_t>();
  return 0;
}

}  // namespace pm
