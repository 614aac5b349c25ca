#include <gtest/gtest.h>

#include "core/util/strings.h"

using namespace pm;

TEST(Strings, EditDistance) {
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("same", "same"), 0u);
}

TEST(Strings, DidYouMeanFindsCloseAndRejectsFar) {
  EXPECT_EQ(didYouMean("microbatch", {"stages", "microbatches", "schedule"}), "microbatches");
  EXPECT_EQ(didYouMean("zzzzzzzz", {"stages", "microbatches"}), "");
}

TEST(Strings, SplitJoinTrim) {
  auto parts = split("a,b,,c", ',');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[2], "");
  EXPECT_EQ(join(parts, "+"), "a+b++c");
  EXPECT_EQ(trim("  x y \n"), "x y");
}

TEST(Strings, Formatting) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatDuration(75), "1m15s");
}

TEST(Strings, FitTextKeepsHeadAndTail) {
  EXPECT_EQ(fitText("short", 10), "short");
  const std::string sweepPoint = "study-resnet20-t1t2 [optimizer.lr=0.3]";
  const std::string fitted = fitText(sweepPoint, 24);
  EXPECT_EQ(fitted.size(), 24u);
  EXPECT_EQ(fitted, "study-resnet~zer.lr=0.3]");
  EXPECT_NE(fitText("study-resnet20-t1t2 [optimizer.lr=0.1]", 24), fitted);  // sweep points stay apart
  // Multi-byte characters are never split: "✓" is 3 bytes.
  const std::string tick = "aaaa✓✓✓✓bbbb";
  const std::string cut = fitText(tick, 9);
  EXPECT_LE(cut.size(), 9u);
  for (size_t i = 0; i < cut.size(); ++i)
    if ((static_cast<unsigned char>(cut[i]) & 0xC0) == 0x80) {
      ASSERT_GT(i, 0u);
      EXPECT_TRUE((static_cast<unsigned char>(cut[i - 1]) & 0x80) != 0) << "a continuation byte after an ASCII one at " << i;
    }
}

TEST(Strings, NaturalLessComparesDigitRunsAsNumbers) {
  EXPECT_TRUE(pm::naturalLess("stage2/tau", "stage10/tau"));
  EXPECT_FALSE(pm::naturalLess("stage10/tau", "stage2/tau"));
  EXPECT_TRUE(pm::naturalLess("stage1/mem/peak", "stage1/tau"));
  EXPECT_TRUE(pm::naturalLess("a", "ab"));
  EXPECT_FALSE(pm::naturalLess("ab", "ab"));
  EXPECT_TRUE(pm::naturalLess("x07", "x8"));
  EXPECT_TRUE(pm::naturalLess("eval/accuracy", "train/loss"));
}
