#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/data/datasets.h"
#include "core/util/errors.h"
#include "tests/core/data/test_support.h"

using namespace pm;
using namespace pm::testing;
using ::testing::HasSubstr;

TEST(Synthetic, ClassificationShapesAndLabelRange) {
  SyntheticDataset d = makeSyntheticDataset(500, "classification", 7);
  EXPECT_EQ(d.count, 500);
  EXPECT_EQ(d.features, 784);
  EXPECT_EQ(d.classes, 10);
  ASSERT_EQ(d.x.size(), 500u * 784);
  ASSERT_EQ(d.labels.size(), 500u);
  EXPECT_TRUE(d.targets.empty());
  for (int64_t l : d.labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 10);
  }
  for (float v : d.x) ASSERT_TRUE(std::isfinite(v));
}

TEST(Synthetic, DeterministicInSeed) {
  SyntheticDataset a = makeSyntheticDataset(200, "classification", 42, 32);
  SyntheticDataset b = makeSyntheticDataset(200, "classification", 42, 32);
  SyntheticDataset c = makeSyntheticDataset(200, "classification", 43, 32);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.x, c.x);
  EXPECT_NE(a.labels, c.labels);

  SyntheticDataset r1 = makeSyntheticDataset(100, "regression", 5, 16);
  SyntheticDataset r2 = makeSyntheticDataset(100, "regression", 5, 16);
  SyntheticDataset r3 = makeSyntheticDataset(100, "regression", 6, 16);
  EXPECT_EQ(r1.x, r2.x);
  EXPECT_EQ(r1.targets, r2.targets);
  EXPECT_NE(r1.targets, r3.targets);
}

TEST(Synthetic, SmallerCountIsAPrefix) {
  SyntheticDataset big = makeSyntheticDataset(100, "classification", 3, 20);
  SyntheticDataset small = makeSyntheticDataset(40, "classification", 3, 20);
  EXPECT_TRUE(std::equal(small.x.begin(), small.x.end(), big.x.begin()));
  EXPECT_TRUE(std::equal(small.labels.begin(), small.labels.end(), big.labels.begin()));
}

TEST(Synthetic, ClassesAreBalancedAndFeaturesNormalised) {
  SyntheticDataset d = makeSyntheticDataset(10000, "classification", 11, 64);
  std::vector<int> perClass(10, 0);
  for (int64_t l : d.labels) perClass.at(static_cast<size_t>(l))++;
  for (int c = 0; c < 10; ++c) {
    EXPECT_GT(perClass[c], 850) << "class " << c;
    EXPECT_LT(perClass[c], 1150) << "class " << c;
  }
  double sum = 0, sumSq = 0;
  for (float v : d.x) {
    sum += v;
    sumSq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(d.x.size());
  EXPECT_NEAR(sum / n, 0.0, 0.1);
  EXPECT_NEAR(sumSq / n, 1.0, 0.15);
}

// Class means estimated on one set classify a set drawn with another seed well: the classes are
// learnable, and train/eval sets made with different seeds share the same problem.
TEST(Synthetic, ClassificationIsLearnableAcrossSeeds) {
  const int F = 784, K = 10;
  SyntheticDataset train = makeSyntheticDataset(2000, "classification", 1, F, K);
  SyntheticDataset eval = makeSyntheticDataset(500, "classification", 2, F, K);
  std::vector<double> means(static_cast<size_t>(K) * F, 0.0);
  std::vector<int> counts(K, 0);
  for (int64_t i = 0; i < train.count; ++i) {
    const size_t k = static_cast<size_t>(train.labels[static_cast<size_t>(i)]);
    counts[k]++;
    for (int j = 0; j < F; ++j) means[k * F + j] += train.x[static_cast<size_t>(i) * F + j];
  }
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < F; ++j) means[static_cast<size_t>(k) * F + j] /= std::max(counts[k], 1);

  int correct = 0;
  for (int64_t i = 0; i < eval.count; ++i) {
    int best = -1;
    double bestDist = 1e300;
    for (int k = 0; k < K; ++k) {
      double dist = 0;
      for (int j = 0; j < F; ++j) {
        const double diff = eval.x[static_cast<size_t>(i) * F + j] - means[static_cast<size_t>(k) * F + j];
        dist += diff * diff;
      }
      if (dist < bestDist) {
        bestDist = dist;
        best = k;
      }
    }
    if (best == eval.labels[static_cast<size_t>(i)]) ++correct;
  }
  EXPECT_GT(correct, 450) << "nearest class mean accuracy " << correct << "/500";

  // Not trivial: no single feature separates two classes.
  for (int j = 0; j < 5; ++j) {
    const double gap = std::abs(means[static_cast<size_t>(0) * F + j] - means[static_cast<size_t>(1) * F + j]);
    EXPECT_LT(gap, 2.0) << "feature " << j;
  }
}

TEST(Synthetic, RegressionTargetsFollowALinearFunction) {
  const int F = 8;
  SyntheticDataset d = makeSyntheticDataset(4000, "regression", 9, F);
  EXPECT_EQ(d.classes, 0);
  EXPECT_TRUE(d.labels.empty());
  ASSERT_EQ(d.targets.size(), 4000u);
  // Least squares through the normal equations (8x8): residual variance ~ 0.1^2, var(y) ~ 1.
  std::vector<double> A(F * F, 0.0), b(F, 0.0);
  for (int64_t i = 0; i < d.count; ++i) {
    const float* x = d.x.data() + i * F;
    for (int r = 0; r < F; ++r) {
      b[r] += x[r] * d.targets[static_cast<size_t>(i)];
      for (int c = 0; c < F; ++c) A[r * F + c] += static_cast<double>(x[r]) * x[c];
    }
  }
  for (int col = 0; col < F; ++col) {  // Gaussian elimination
    for (int r = col + 1; r < F; ++r) {
      const double f = A[r * F + col] / A[col * F + col];
      for (int c = col; c < F; ++c) A[r * F + c] -= f * A[col * F + c];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> w(F);
  for (int r = F - 1; r >= 0; --r) {
    double s = b[r];
    for (int c = r + 1; c < F; ++c) s -= A[r * F + c] * w[c];
    w[r] = s / A[r * F + r];
  }
  double resid = 0, var = 0;
  for (int64_t i = 0; i < d.count; ++i) {
    const float* x = d.x.data() + i * F;
    double pred = 0;
    for (int j = 0; j < F; ++j) pred += w[j] * x[j];
    const double y = d.targets[static_cast<size_t>(i)];
    resid += (y - pred) * (y - pred);
    var += y * y;
  }
  resid /= static_cast<double>(d.count);
  var /= static_cast<double>(d.count);
  EXPECT_NEAR(resid, 0.01, 0.003);
  EXPECT_NEAR(var, 1.01, 0.25);
}

TEST(Synthetic, BadArguments) {
  DataError e = expectDataError([] { makeSyntheticDataset(10, "segmentation", 1); });
  EXPECT_EQ(e.place(), "synthetic");
  EXPECT_THAT(e.problem(), HasSubstr("unknown task 'segmentation'"));
  e = expectDataError([] { makeSyntheticDataset(0, "classification", 1); });
  EXPECT_EQ(e.place(), "synthetic");
  EXPECT_THAT(e.problem(), HasSubstr("count must be positive, got 0"));
  e = expectDataError([] { makeSyntheticDataset(-5, "regression", 1); });
  EXPECT_THAT(e.problem(), HasSubstr("got -5"));
  e = expectDataError([] { makeSyntheticDataset(10, "classification", 1, 0); });
  EXPECT_THAT(e.problem(), HasSubstr("feature count"));
  e = expectDataError([] { makeSyntheticDataset(10, "classification", 1, 784, 1); });
  EXPECT_THAT(e.problem(), HasSubstr("at least 2 classes"));
  e = expectDataError([] { makeSyntheticDataset(int64_t{1} << 40, "classification", 1); });
  EXPECT_THAT(e.problem(), HasSubstr("more than the limit"));
}

TEST(ShuffledIndices, IsAPermutation) {
  std::vector<int64_t> p = shuffledIndices(1000, 17, 3);
  ASSERT_EQ(p.size(), 1000u);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(p, identity);  // actually shuffled
  EXPECT_TRUE(shuffledIndices(0, 1, 0).empty());
  EXPECT_EQ(shuffledIndices(1, 1, 0), std::vector<int64_t>{0});
}

TEST(ShuffledIndices, DependsOnlyOnSeedAndEpoch) {
  EXPECT_EQ(shuffledIndices(500, 17, 3), shuffledIndices(500, 17, 3));
  EXPECT_NE(shuffledIndices(500, 17, 3), shuffledIndices(500, 17, 4));
  EXPECT_NE(shuffledIndices(500, 17, 3), shuffledIndices(500, 18, 3));
  // Every epoch of a run differs from the others.
  std::set<std::vector<int64_t>> epochs;
  for (int64_t e = 0; e < 20; ++e) epochs.insert(shuffledIndices(50, 1, e));
  EXPECT_EQ(epochs.size(), 20u);
}

TEST(ShuffledIndices, RoughlyUniform) {
  // Position of element 0 over many epochs: each of 4 positions about a quarter of the time.
  std::vector<int> where(4, 0);
  for (int64_t e = 0; e < 4000; ++e) {
    std::vector<int64_t> p = shuffledIndices(4, 99, e);
    where[static_cast<size_t>(std::find(p.begin(), p.end(), 0) - p.begin())]++;
  }
  for (int k = 0; k < 4; ++k) {
    EXPECT_GT(where[k], 850) << k;
    EXPECT_LT(where[k], 1150) << k;
  }
}

TEST(ShuffledIndices, NegativeCountIsAnError) {
  EXPECT_THAT(expectDataError([] { shuffledIndices(-1, 1, 0); }).problem(), HasSubstr("got -1"));
}
