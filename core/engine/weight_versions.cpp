#include "core/engine/weight_versions.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/engine/memory_accounting.h"

namespace pm {

void WeightVersions::onForward(int64_t mb) {
  versionOfMb_[mb] = version_;
  ++refs_[version_];
}

int64_t WeightVersions::versionOf(int64_t mb) const {
  auto it = versionOfMb_.find(mb);
  if (it == versionOfMb_.end()) throw std::logic_error("weight versions: microbatch " + std::to_string(mb) + " has no forward");
  return it->second;
}

void WeightVersions::beforeStep(const std::vector<torch::Tensor>& current) {
  auto it = refs_.find(version_);
  if (it != refs_.end() && it->second > 0 && !stash_.count(version_)) stash_[version_] = cloneAll(current);
}

void WeightVersions::adopt(std::vector<torch::Tensor> copy) {
  if (!stash_.count(version_)) stash_[version_] = std::move(copy);
}

const std::vector<torch::Tensor>* WeightVersions::weightsFor(int64_t mb) const {
  const int64_t v = versionOf(mb);
  if (v == version_) return nullptr;
  auto it = stash_.find(v);
  if (it == stash_.end()) throw std::logic_error("weight versions: version " + std::to_string(v) + " was not stashed");
  return &it->second;
}

void WeightVersions::onBackwardDone(int64_t mb) {
  const int64_t v = versionOf(mb);
  versionOfMb_.erase(mb);
  if (--refs_[v] <= 0) {
    refs_.erase(v);
    stash_.erase(v);
  }
}

int64_t WeightVersions::stashBytes() const {
  int64_t n = 0;
  for (const auto& kv : stash_) n += tensorBytes(kv.second);
  return n;
}

namespace {

// Maps of integers travel as one int64 tensor of (key, value) pairs.
template <class V>
torch::Tensor pairsTensor(const std::map<int64_t, V>& m) {
  std::vector<int64_t> flat;
  for (const auto& kv : m) {
    flat.push_back(kv.first);
    flat.push_back(static_cast<int64_t>(kv.second));
  }
  return torch::tensor(flat, torch::kLong);
}

template <class V>
std::map<int64_t, V> pairsFromTensor(const torch::Tensor& t) {
  std::map<int64_t, V> m;
  auto c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  for (int64_t i = 0; i + 1 < c.numel(); i += 2) m[p[i]] = static_cast<V>(p[i + 1]);
  return m;
}

void writeTensors(torch::serialize::OutputArchive& a, const std::string& prefix, const std::vector<torch::Tensor>& ts) {
  a.write(prefix + "_count", torch::tensor(static_cast<int64_t>(ts.size())));
  for (size_t i = 0; i < ts.size(); ++i) a.write(prefix + "_" + std::to_string(i), ts[i].detach().clone());
}

std::vector<torch::Tensor> readTensors(torch::serialize::InputArchive& a, const std::string& prefix) {
  torch::Tensor n;
  a.read(prefix + "_count", n);
  std::vector<torch::Tensor> ts(static_cast<size_t>(n.item<int64_t>()));
  for (size_t i = 0; i < ts.size(); ++i) a.read(prefix + "_" + std::to_string(i), ts[i]);
  return ts;
}

}  // namespace

void WeightVersions::save(torch::serialize::OutputArchive& a) const {
  a.write("version", torch::tensor(version_));
  a.write("version_of_mb", pairsTensor(versionOfMb_));
  a.write("refs", pairsTensor(refs_));
  std::vector<int64_t> keys;
  for (const auto& kv : stash_) {
    keys.push_back(kv.first);
    writeTensors(a, "stash_" + std::to_string(kv.first), kv.second);
  }
  a.write("stash_versions", torch::tensor(keys, torch::kLong));
}

void WeightVersions::load(torch::serialize::InputArchive& a) {
  torch::Tensor v, mbs, refs, keys;
  a.read("version", v);
  a.read("version_of_mb", mbs);
  a.read("refs", refs);
  a.read("stash_versions", keys);
  version_ = v.item<int64_t>();
  versionOfMb_ = pairsFromTensor<int64_t>(mbs);
  refs_ = pairsFromTensor<int>(refs);
  stash_.clear();
  auto k = keys.contiguous();
  for (int64_t i = 0; i < k.numel(); ++i) {
    const int64_t key = k.data_ptr<int64_t>()[i];
    stash_[key] = readTensors(a, "stash_" + std::to_string(key));
  }
}

void DiscrepancyCorrector::save(torch::serialize::OutputArchive& a) const { writeTensors(a, "delta", delta_); }

void DiscrepancyCorrector::load(torch::serialize::InputArchive& a) { delta_ = readTensors(a, "delta"); }

DiscrepancyCorrector::DiscrepancyCorrector(double decayD, double stageDelay)
    : gamma_(stageDelay > 0 ? std::pow(decayD, 1.0 / stageDelay) : 0.0) {}

void DiscrepancyCorrector::update(const std::vector<torch::Tensor>& before, const std::vector<torch::Tensor>& after) {
  torch::NoGradGuard ng;
  if (delta_.empty())
    for (const auto& t : after) delta_.push_back(torch::zeros_like(t));
  for (size_t i = 0; i < delta_.size(); ++i) delta_[i].mul_(gamma_).add_(after[i] - before[i], 1.0 - gamma_);
}

std::vector<torch::Tensor> DiscrepancyCorrector::estimate(const std::vector<torch::Tensor>& w, int64_t lag) const {
  torch::NoGradGuard ng;
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < w.size(); ++i)
    out.push_back(delta_.empty() ? w[i].detach().clone() : w[i].detach() - static_cast<double>(lag) * delta_[i]);
  return out;
}

int64_t DiscrepancyCorrector::bytes() const { return tensorBytes(delta_); }

std::vector<torch::Tensor> cloneAll(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

void assignAll(std::vector<torch::Tensor>& dst, const std::vector<torch::Tensor>& src) {
  torch::NoGradGuard ng;
  // Through .data(): the values change but the parameters' version counters do not, so the kept
  // graphs of other in-flight microbatches stay usable. Callers swap weights in for a recompute
  // and restore the exact same values before any of those graphs is used.
  for (size_t i = 0; i < dst.size(); ++i) dst[i].data().copy_(src[i]);
}

double relativeGap(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  torch::NoGradGuard ng;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).pow(2).sum().item<double>();
    den += a[i].to(torch::kDouble).pow(2).sum().item<double>();
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

}  // namespace pm
