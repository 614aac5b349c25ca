#include "core/analysis/frontier.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace pm {
namespace {

FrontierPoint point(const char* m, bool sync, double value, double mem, std::vector<double> rounds = {}) {
  FrontierPoint p;
  p.method = m;
  p.synchronous = sync;
  p.value = value;
  p.memoryBytes = mem;
  p.rounds = std::move(rounds);
  return p;
}

// The best synchronous schedule is taken within the subject's memory: gpipe, faster here but
// heavier than pipemare, is the best at any memory and not the one held against it.
TEST(Frontier, TheBestSynchronousScheduleIsTakenWithinTheSubjectsMemory) {
  const std::vector<FrontierPoint> pts = {point("gpipe", true, 0.9, 500), point("1f1b", true, 0.5, 100), point("zb-v", true, 0.6, 110),
                                          point("pipedream", false, 1.0, 300), point("pipemare", false, 0.8, 120)};
  const FrontierComparison c = compareWithFrontier(pts, "pipemare");
  EXPECT_EQ(c.bestAtMemory, "zb-v");
  EXPECT_DOUBLE_EQ(c.ratioAtMemory, 0.8 / 0.6);
  EXPECT_EQ(c.bestOverall, "gpipe");  // asynchronous pipedream is never the frontier
  EXPECT_DOUBLE_EQ(c.ratioOverall, 0.8 / 0.9);
  EXPECT_EQ(c.advantage, Advantage::Survives);
  // With less memory than zb-v, 1f1b is the one it meets.
  const FrontierComparison tight = compareWithFrontier(
      {point("1f1b", true, 0.5, 100), point("zb-v", true, 0.6, 110), point("pipemare", false, 0.52, 105)}, "pipemare");
  EXPECT_EQ(tight.bestAtMemory, "1f1b");
  EXPECT_EQ(tight.advantage, Advantage::Even);  // 4 % over it: within the planner's 5 % margin
}

// Measured points are judged round by round: an advantage survives only when every round's ratio
// is above 1, is lost when every one is below, and is even when the rounds disagree.
TEST(Frontier, MeasuredRoundsDecideTheVerdict) {
  auto verdict = [](std::vector<double> subjectRounds) {
    return compareWithFrontier({point("1f1b", true, 100, 10, {100, 110, 90}), point("pipemare", false, 100, 10, subjectRounds)},
                               "pipemare");
  };
  EXPECT_EQ(verdict({101, 111, 91}).advantage, Advantage::Survives);
  EXPECT_EQ(verdict({99, 109, 89}).advantage, Advantage::Lost);
  const FrontierComparison even = verdict({120, 100, 95});
  EXPECT_EQ(even.advantage, Advantage::Even);
  ASSERT_EQ(even.ratioRounds.size(), 3u);
  EXPECT_DOUBLE_EQ(even.ratioRounds[1], 100.0 / 110);
}

// No synchronous schedule fits in the subject's memory: nothing to hold against it there, which
// counts as its advantage; an unknown subject is an error naming it.
TEST(Frontier, NoSynchronousScheduleWithinTheMemorySaysSo) {
  const FrontierComparison c = compareWithFrontier({point("gpipe", true, 0.9, 500), point("pipemare", false, 0.8, 100)}, "pipemare");
  EXPECT_TRUE(c.bestAtMemory.empty());
  EXPECT_TRUE(std::isnan(c.ratioAtMemory));
  EXPECT_EQ(c.bestOverall, "gpipe");
  EXPECT_EQ(c.advantage, Advantage::Survives);
  try {
    compareWithFrontier({point("gpipe", true, 0.9, 500)}, "pipemare");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pipemare"), std::string::npos);
  }
  EXPECT_STREQ(advantageName(Advantage::Lost), "lost");
}

}  // namespace
}  // namespace pm
