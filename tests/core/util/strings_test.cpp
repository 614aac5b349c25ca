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

// Widths are characters (UTF-8 code points), not bytes: "ü" is 2 bytes, "🚀" 4.
TEST(Strings, TextIsMeasuredAndCutInCharacters) {
  const std::string u = "\xC3\xBC", rocket = "\xF0\x9F\x9A\x80";
  EXPECT_EQ(textLength(""), 0u);
  EXPECT_EQ(textLength(u + rocket), 2u);
  EXPECT_EQ(textLength("ab" + u), 3u);
  EXPECT_EQ(firstChars(u + rocket + "x", 2), u + rocket);
  EXPECT_EQ(firstChars(u + rocket, 0), "");
  EXPECT_EQ(firstChars(u + rocket, 5), u + rocket);
  EXPECT_EQ(padText(u + rocket, 4), u + rocket + "  ");
  EXPECT_EQ(padText("long", 2), "long");
  // A tag of two multi-byte characters fits a width of 2 whole.
  EXPECT_EQ(fitText(u + rocket, 2), u + rocket);
  // 60 characters in 48: the head's 24 and the tail's 23 characters around "~".
  std::string name;
  for (int i = 0; i < 30; ++i) name += u + rocket;
  std::string expected;
  for (int i = 0; i < 12; ++i) expected += u + rocket;
  expected += "~" + rocket;
  for (int i = 0; i < 11; ++i) expected += u + rocket;
  EXPECT_EQ(fitText(name, 48), expected);
  EXPECT_EQ(textLength(fitText(name, 48)), 48u);
  EXPECT_EQ(fitText(name, 1), "~");
  EXPECT_EQ(fitText(name, 0), "");
}

TEST(Strings, EscapeForTerminalEscapesControlsAndBidiOnly) {
  // Ordinary text, unicode and backslashes are kept as they are.
  const std::string plain = "it's \"quoted\" \xC3\xBC\xF0\x9F\x9A\x80 \xE6\xBC\xA2 %s \\x00";
  EXPECT_EQ(escapeForTerminal(plain), plain);
  // C0 controls, DEL and the common ones by their usual names.
  EXPECT_EQ(escapeForTerminal("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(escapeForTerminal("red \x1b[31mX"), "red \\x1b[31mX");
  EXPECT_EQ(escapeForTerminal(std::string("nul\0!", 5)), "nul\\x00!");
  EXPECT_EQ(escapeForTerminal("del\x7f"), "del\\x7f");
  // C1 controls (U+0080..U+009F, two bytes each in UTF-8).
  EXPECT_EQ(escapeForTerminal("csi\xC2\x9B" "2J"), "csi\\u009B2J");
  EXPECT_EQ(escapeForTerminal("\xC2\x85"), "\\u0085");
  // Bidirectional controls and the line and paragraph separators.
  EXPECT_EQ(escapeForTerminal("safe\xE2\x80\xAEtxt.exe"), "safe\\u202Etxt.exe");
  EXPECT_EQ(escapeForTerminal("\xE2\x80\x8E\xE2\x80\x8F"), "\\u200E\\u200F");
  EXPECT_EQ(escapeForTerminal("\xE2\x80\xAA\xE2\x81\xA6\xE2\x81\xA9\xD8\x9C"), "\\u202A\\u2066\\u2069\\u061C");
  EXPECT_EQ(escapeForTerminal("\xE2\x80\xA8\xE2\x80\xA9"), "\\u2028\\u2029");
  // Neighbours of the escaped ranges stay.
  EXPECT_EQ(escapeForTerminal("\xC2\xA0\xE2\x80\x8D\xE2\x81\xAA"), "\xC2\xA0\xE2\x80\x8D\xE2\x81\xAA");
  // Bytes that are not UTF-8: a stray continuation byte, a lone lead byte, an overlong form, a
  // surrogate, a sequence cut short.
  EXPECT_EQ(escapeForTerminal("a\x9B" "b"), "a\\x9bb");
  EXPECT_EQ(escapeForTerminal("\xC3" "x"), "\\xc3x");
  EXPECT_EQ(escapeForTerminal("\xC0\xAF"), "\\xc0\\xaf");
  EXPECT_EQ(escapeForTerminal("\xED\xA0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(escapeForTerminal("\xF0\x9F\x9A"), "\\xf0\\x9f\\x9a");
  // What comes out holds no control character and is valid UTF-8 (escaping it again changes nothing).
  const std::string nasty = "\x1b]0;title\x07\xE2\x80\xAE\xFF\n";
  const std::string once = escapeForTerminal(nasty);
  EXPECT_EQ(escapeForTerminal(once), once);
  for (char c : once) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << once;
}

TEST(Strings, ParseRunIdTakesPositiveWholeNumbersOnly) {
  int64_t id = 0;
  EXPECT_EQ(parseRunId("1", id), "");
  EXPECT_EQ(id, 1);
  EXPECT_EQ(parseRunId("0042", id), "");
  EXPECT_EQ(id, 42);
  EXPECT_EQ(parseRunId("9223372036854775807", id), "");
  EXPECT_EQ(id, INT64_MAX);
  id = 7;
  for (const std::string bad : {"1abc", "", "0", "000", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "abc"}) {
    EXPECT_EQ(parseRunId(bad, id), "expected a run id (a positive whole number), found \"" + bad + "\"") << bad;
    EXPECT_EQ(id, 7) << bad;
  }
  EXPECT_EQ(parseRunId("9223372036854775808", id),
            "run id 9223372036854775808 is out of range (run ids go up to 9223372036854775807)");
  EXPECT_EQ(parseRunId("99999999999999999999", id),
            "run id 99999999999999999999 is out of range (run ids go up to 9223372036854775807)");
  EXPECT_EQ(id, 7);
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
