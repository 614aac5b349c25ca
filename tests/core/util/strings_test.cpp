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
