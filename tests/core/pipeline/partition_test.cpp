#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/pipeline/partition.h"

using namespace pm;

namespace {

// The message of the std::invalid_argument thrown by f, or "" when nothing is thrown.
template <class F>
std::string invalidArgumentMessage(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Partition, Describe) {
  Partition p;
  p.begin = {0, 2, 5};
  p.end = {2, 5, 6};
  EXPECT_EQ(p.stages(), 3);
  EXPECT_EQ(p.describe(), "[0,2) [2,5) [5,6)");
  EXPECT_EQ(Partition{}.describe(), "");
}

TEST(BalancedPartition, LiteralCases) {
  EXPECT_EQ(balancedPartition({1, 1, 1, 1}, 2).describe(), "[0,2) [2,4)");
  EXPECT_EQ(balancedPartition({5, 1, 1, 1, 1, 1}, 2).describe(), "[0,1) [1,6)");
  EXPECT_EQ(balancedPartition({1, 2, 3, 4, 5, 6, 7, 8, 9}, 3).describe(), "[0,5) [5,7) [7,9)");  // 15, 13, 17
  EXPECT_EQ(balancedPartition({2, 1, 1, 2}, 3).describe(), "[0,1) [1,3) [3,4)");
  EXPECT_EQ(balancedPartition({1, 1, 1, 1}, 1).describe(), "[0,4)");
  EXPECT_EQ(balancedPartition({4}, 1).describe(), "[0,1)");
}

TEST(BalancedPartition, OneUnitPerStageWhenStagesEqualUnits) {
  EXPECT_EQ(balancedPartition({3, 1, 2}, 3).describe(), "[0,1) [1,2) [2,3)");
  EXPECT_EQ(balancedPartition({0, 0, 0, 0, 0}, 5).describe(), "[0,1) [1,2) [2,3) [3,4) [4,5)");
}

TEST(BalancedPartition, TiesGoToEarlierBoundaries) {
  // {1,1,1} into 2: [0,1)[1,3) and [0,2)[2,3) both have max 2; the earlier boundary wins.
  EXPECT_EQ(balancedPartition({1, 1, 1}, 2).describe(), "[0,1) [1,3)");
  EXPECT_EQ(balancedPartition({0, 0, 4}, 2).describe(), "[0,1) [1,3)");
  EXPECT_EQ(balancedPartition({0, 0, 0, 0}, 2).describe(), "[0,1) [1,4)");
  // Fractional costs: 0.1+0.2 (rounded above 0.3) against 0.3 still gives the best split.
  EXPECT_EQ(balancedPartition({0.1, 0.2, 0.3}, 2).describe(), "[0,2) [2,3)");
}

TEST(BalancedPartition, MatchesBruteForce) {
  // Exhaustive search over all boundary vectors (in lexicographic order, keeping the first optimum)
  // on small pseudo-random integer cost vectors (integers: sums are exact).
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % 10);
  };
  for (int trial = 0; trial < 200; ++trial) {
    const int units = 1 + trial % 9;
    std::vector<double> costs;
    for (int u = 0; u < units; ++u) costs.push_back(next());
    for (int P = 1; P <= units; ++P) {
      std::vector<int> b(static_cast<size_t>(P - 1));
      for (int i = 0; i < P - 1; ++i) b[static_cast<size_t>(i)] = i + 1;
      double bestMax = 1e300;
      std::vector<int> bestB;
      while (true) {
        double mx = 0;
        int start = 0;
        for (int s = 0; s < P; ++s) {
          int stop = s < P - 1 ? b[static_cast<size_t>(s)] : units;
          double sum = 0;
          for (int u = start; u < stop; ++u) sum += costs[static_cast<size_t>(u)];
          mx = std::max(mx, sum);
          start = stop;
        }
        if (mx < bestMax) {
          bestMax = mx;
          bestB = b;
        }
        // Next combination in lexicographic order.
        int i = P - 2;
        while (i >= 0 && b[static_cast<size_t>(i)] == units - (P - 1 - i)) --i;
        if (i < 0) break;
        ++b[static_cast<size_t>(i)];
        for (int k = i + 1; k < P - 1; ++k) b[static_cast<size_t>(k)] = b[static_cast<size_t>(k) - 1] + 1;
      }
      Partition got = balancedPartition(costs, P);
      EXPECT_EQ(got.describe(), explicitPartition(bestB, units).describe()) << "trial " << trial << " P=" << P;
    }
  }
}

TEST(BalancedPartition, Errors) {
  EXPECT_NE(invalidArgumentMessage([] { balancedPartition({1, 1}, 3); }).find("3 stages but only 2 units"),
            std::string::npos);
  EXPECT_NE(invalidArgumentMessage([] { balancedPartition({1, 1}, 0); }).find("stages must be >= 1"),
            std::string::npos);
  EXPECT_THROW(balancedPartition({1, 1}, -1), std::invalid_argument);
  EXPECT_THROW(balancedPartition({}, 1), std::invalid_argument);
  EXPECT_NE(invalidArgumentMessage([] { balancedPartition({1, -1}, 1); }).find("unit 1"), std::string::npos);
}

TEST(ExplicitPartition, Valid) {
  EXPECT_EQ(explicitPartition({2, 5}, 6).describe(), "[0,2) [2,5) [5,6)");
  EXPECT_EQ(explicitPartition({}, 3).describe(), "[0,3)");
  EXPECT_EQ(explicitPartition({1, 2}, 3, 3).describe(), "[0,1) [1,2) [2,3)");
  Partition p = explicitPartition({2, 5}, 6);
  EXPECT_EQ(p.begin, (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(p.end, (std::vector<int>{2, 5, 6}));
}

TEST(ExplicitPartition, Errors) {
  EXPECT_NE(invalidArgumentMessage([] { explicitPartition({0}, 6); }).find("outside 1..5"), std::string::npos);
  EXPECT_NE(invalidArgumentMessage([] { explicitPartition({6}, 6); }).find("outside 1..5"), std::string::npos);
  EXPECT_NE(invalidArgumentMessage([] { explicitPartition({3, 3}, 6); }).find("strictly increasing"),
            std::string::npos);
  EXPECT_NE(invalidArgumentMessage([] { explicitPartition({4, 2}, 6); }).find("strictly increasing"),
            std::string::npos);
  EXPECT_THROW(explicitPartition({}, 0), std::invalid_argument);
  EXPECT_NE(invalidArgumentMessage([] { explicitPartition({2}, 6, 3); }).find("need exactly 2 boundaries, got 1"),
            std::string::npos);
  EXPECT_THROW(explicitPartition({}, 6, 0), std::invalid_argument);
}

TEST(Imbalance, Values) {
  EXPECT_DOUBLE_EQ(imbalance(explicitPartition({2}, 4), {1, 1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(imbalance(explicitPartition({1}, 6), {5, 1, 1, 1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(imbalance(explicitPartition({3}, 6), {5, 1, 1, 1, 1, 1}), 1.4);  // 7 vs mean 5
  EXPECT_DOUBLE_EQ(imbalance(explicitPartition({5, 7}, 9), {1, 2, 3, 4, 5, 6, 7, 8, 9}), 17.0 / 15.0);
  EXPECT_DOUBLE_EQ(imbalance(explicitPartition({1}, 2), {0, 0}), 1.0);  // no cost at all: balanced
  EXPECT_THROW(imbalance(explicitPartition({2}, 4), {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(imbalance(Partition{}, {1}), std::invalid_argument);
}
