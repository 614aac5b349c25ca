// Synthetic datasets and epoch shuffles. Only std::mt19937_64 (whose output the standard fixes) is
// used from <random>; Gaussian draws (Box-Muller) and bounded integers are computed here, so the
// numbers are the same with every standard library.
//
// Classification: K class prototypes p_k with ||p_k|| ~ 6; a sample of class k is
//   x = (p_k + n) / sqrt(1 + 36/F),  n ~ N(0, I_F)
// so each feature has unit variance, the prototypes are ~8.5 noise standard deviations apart (the
// classes are learnable to near-perfect accuracy), but no single feature separates them.
// Regression: x ~ N(0, I_F), y = w.x / sqrt(F) + 0.1 * N(0, 1) with w ~ N(0, I_F) (Var y ~ 1.01).
//
// The problem itself (prototypes, w) depends only on the task, features and classes; `seed` picks
// the samples. Datasets made with different seeds (a training and an evaluation set) are therefore
// samples of the same problem. Sample i does not depend on `count` (a smaller count gives a prefix).
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/data/datasets.h"
#include "core/util/errors.h"

namespace pm {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kPrototypeNorm = 6.0;
constexpr double kRegressionNoise = 0.1;
constexpr int64_t kMaxElements = int64_t{1} << 30;  // count * features (4 GiB of floats)
constexpr uint64_t kProblemSeed = 0x5049504D41524531ull;  // "PIPMARE1"

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t mixSeeds(uint64_t a, uint64_t b) { return splitmix64(splitmix64(a) ^ (b + 0x632BE59BD9B4E019ull)); }

// Uniform in (0, 1): 53 random bits, centred in their cell so 0 and 1 never occur.
double uniformOpen01(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53; }

// Unbiased integer in [0, bound), bound > 0 (rejection of the short top range).
uint64_t uniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

class Gaussian {
 public:
  explicit Gaussian(std::mt19937_64& rng) : rng_(rng) {}
  double operator()() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniformOpen01(rng_)));
    const double theta = kTwoPi * uniformOpen01(rng_);
    spare_ = r * std::sin(theta);
    hasSpare_ = true;
    return r * std::cos(theta);
  }

 private:
  std::mt19937_64& rng_;
  double spare_ = 0.0;
  bool hasSpare_ = false;
};

}  // namespace

SyntheticDataset makeSyntheticDataset(int64_t count, const std::string& task, uint64_t seed, int features,
                                      int classes) {
  const bool classification = task == "classification";
  if (!classification && task != "regression")
    throw DataError("synthetic", "unknown task '" + task + "'; expected \"classification\" or \"regression\"");
  if (count <= 0) throw DataError("synthetic", "sample count must be positive, got " + std::to_string(count));
  if (features <= 0) throw DataError("synthetic", "feature count must be positive, got " + std::to_string(features));
  if (classification && classes < 2)
    throw DataError("synthetic", "classification needs at least 2 classes, got " + std::to_string(classes));
  if (count > kMaxElements / features)
    throw DataError("synthetic", std::to_string(count) + " samples x " + std::to_string(features) +
                                     " features is more than the limit of " + std::to_string(kMaxElements) +
                                     " values");

  const size_t F = static_cast<size_t>(features);
  SyntheticDataset out;
  out.count = count;
  out.features = features;
  out.classes = classification ? classes : 0;
  out.x.resize(static_cast<size_t>(count) * F);

  // The problem: fixed for (task, features, classes), independent of seed.
  std::mt19937_64 problemRng(mixSeeds(kProblemSeed, (uint64_t(classification) << 40) ^
                                                        (uint64_t(uint32_t(features)) << 8) ^ uint64_t(classes)));
  Gaussian problemNormal(problemRng);
  std::mt19937_64 rng(mixSeeds(seed, kProblemSeed));
  Gaussian normal(rng);

  if (classification) {
    const double protoScale = kPrototypeNorm / std::sqrt(static_cast<double>(F));
    const double norm = 1.0 / std::sqrt(1.0 + protoScale * protoScale);
    std::vector<double> prototypes(static_cast<size_t>(classes) * F);
    for (double& v : prototypes) v = protoScale * problemNormal();
    out.labels.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t label = uniformBelow(rng, static_cast<uint64_t>(classes));
      out.labels[static_cast<size_t>(i)] = static_cast<int64_t>(label);
      const double* p = prototypes.data() + label * F;
      float* x = out.x.data() + static_cast<size_t>(i) * F;
      for (size_t j = 0; j < F; ++j) x[j] = static_cast<float>((p[j] + normal()) * norm);
    }
  } else {
    std::vector<double> w(F);
    for (double& v : w) v = problemNormal();
    const double scale = 1.0 / std::sqrt(static_cast<double>(F));
    out.targets.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      float* x = out.x.data() + static_cast<size_t>(i) * F;
      double dot = 0.0;
      for (size_t j = 0; j < F; ++j) {
        x[j] = static_cast<float>(normal());
        dot += w[j] * static_cast<double>(x[j]);
      }
      out.targets[static_cast<size_t>(i)] = static_cast<float>(dot * scale + kRegressionNoise * normal());
    }
  }
  return out;
}

std::vector<int64_t> shuffledIndices(int64_t n, uint64_t seed, int64_t epoch) {
  if (n < 0) throw DataError("shuffle", "index count must be >= 0, got " + std::to_string(n));
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(mixSeeds(seed, static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const int64_t j = static_cast<int64_t>(uniformBelow(rng, static_cast<uint64_t>(i) + 1));
    std::swap(idx[static_cast<size_t>(i)], idx[static_cast<size_t>(j)]);
  }
  return idx;
}

}  // namespace pm
