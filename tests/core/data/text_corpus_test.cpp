#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/data/datasets.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "tests/core/data/test_support.h"

using namespace pm;
using namespace pm::testing;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

std::string str(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

std::string repeated(const std::string& unit, int times) {
  std::string s;
  for (int i = 0; i < times; ++i) s += unit;
  return s;
}

}  // namespace

TEST(TextCorpus, SingleFileSplitsAtTheEnd) {
  TempDir tmp;
  std::string text;
  for (int i = 0; i < 100; ++i) text += static_cast<char>('a' + i % 26);  // 100 bytes
  writeText(tmp.file("corpus.txt"), text);
  TextCorpus c = loadTextCorpus(tmp.file("corpus.txt"), 0.2, 8);
  EXPECT_THAT(c.files, ElementsAre(tmp.file("corpus.txt")));
  ASSERT_EQ(c.train.size(), 80u);
  ASSERT_EQ(c.valid.size(), 20u);
  EXPECT_EQ(str(c.train) + str(c.valid), text);
  EXPECT_EQ(str(c.valid), text.substr(80));
}

TEST(TextCorpus, DirectoryReadsSortedFilesAndSkipsIndexesDuplicatesAndHidden) {
  TempDir tmp;
  writeText(tmp.file("b"), "BBBBBBBBBB");
  writeText(tmp.file("a"), "AAAAAAAAAA");
  writeText(tmp.file("a.dat"), "index-bytes");
  writeText(tmp.file("b.u8"), "duplicate!");
  writeText(tmp.file(".hidden"), "secret");
  writeText(tmp.file("c"), "CCCCCCCCCC");
  std::filesystem::create_directory(tmp.file("sub"));
  writeText(tmp.file("sub/d"), "DDDDDDDDDD");  // no recursion
  std::filesystem::create_symlink(tmp.file("c"), tmp.file("c-link"));  // same file under a second name

  TextCorpus c = loadTextCorpus(tmp.path(), 0.5, 4);
  EXPECT_THAT(c.files, ElementsAre(tmp.file("a"), tmp.file("b"), tmp.file("c")));
  // The last half of every file is held out (not the last files of the corpus).
  EXPECT_EQ(str(c.train), "AAAAABBBBBCCCCC");
  EXPECT_EQ(str(c.valid), "AAAAABBBBBCCCCC");
  c = loadTextCorpus(tmp.path(), 0.2, 4);
  EXPECT_EQ(str(c.train), "AAAAAAAABBBBBBBBCCCCCCCC");
  EXPECT_EQ(str(c.valid), "AABBCC");
  // A split shorter than one sequence: the corpus's own tail, clamped (5 bytes each side).
  c = loadTextCorpus(tmp.path(), 0.05, 4);
  EXPECT_EQ(c.valid.size(), 5u);
  EXPECT_EQ(str(c.valid), "CCCCC");
}

TEST(TextCorpus, ValidationSplitIsClampedToOneContextEachSide) {
  TempDir tmp;
  writeText(tmp.file("t"), repeated("x", 100));
  // 1% of 100 bytes would be 1 byte; each split needs context + 1 = 11 bytes.
  TextCorpus c = loadTextCorpus(tmp.file("t"), 0.01, 10);
  EXPECT_EQ(c.valid.size(), 11u);
  EXPECT_EQ(c.train.size(), 89u);
  c = loadTextCorpus(tmp.file("t"), 0.99, 10);
  EXPECT_EQ(c.train.size(), 11u);
  EXPECT_EQ(c.valid.size(), 89u);
  // Exactly 2 * (context + 1) bytes is enough.
  c = loadTextCorpus(tmp.file("t"), 0.5, 49);
  EXPECT_EQ(c.train.size(), 50u);
  EXPECT_EQ(c.valid.size(), 50u);
}

TEST(TextCorpus, TooSmall) {
  TempDir tmp;
  writeText(tmp.file("t"), repeated("y", 99));
  DataError e = expectDataError([&] { loadTextCorpus(tmp.file("t"), 0.5, 49); });
  EXPECT_EQ(e.place(), tmp.file("t"));
  EXPECT_THAT(e.problem(), HasSubstr("corpus too small: 99 bytes, need at least 100"));
}

TEST(TextCorpus, EmptyCorpus) {
  TempDir tmp;
  writeText(tmp.file("empty"), "");
  DataError e = expectDataError([&] { loadTextCorpus(tmp.file("empty"), 0.1, 8); });
  EXPECT_EQ(e.place(), tmp.file("empty"));
  EXPECT_THAT(e.problem(), HasSubstr("empty"));

  // A directory with only skipped files has nothing readable.
  std::filesystem::create_directory(tmp.file("dir"));
  writeText(tmp.file("dir/x.dat"), repeated("z", 1000));
  writeText(tmp.file("dir/.x"), repeated("z", 1000));
  e = expectDataError([&] { loadTextCorpus(tmp.file("dir"), 0.1, 8); });
  EXPECT_EQ(e.place(), tmp.file("dir"));
  EXPECT_THAT(e.problem(), HasSubstr("no readable text files"));

  // An empty file in a directory is read but adds nothing.
  writeText(tmp.file("dir/y"), "");
  e = expectDataError([&] { loadTextCorpus(tmp.file("dir"), 0.1, 8); });
  EXPECT_THAT(e.problem(), HasSubstr("empty"));
}

TEST(TextCorpus, MissingPath) {
  TempDir tmp;
  const std::string path = tmp.file("nowhere");
  DataError e = expectDataError([&] { loadTextCorpus(path, 0.1, 8); });
  EXPECT_EQ(e.place(), path);
  EXPECT_THAT(e.what(), HasSubstr(path));
  EXPECT_THAT(e.problem(), HasSubstr("cannot open"));
}

TEST(TextCorpus, BadArguments) {
  TempDir tmp;
  writeText(tmp.file("t"), repeated("x", 100));
  EXPECT_THAT(expectDataError([&] { loadTextCorpus(tmp.file("t"), 0.0, 8); }).problem(), HasSubstr("fraction"));
  EXPECT_THAT(expectDataError([&] { loadTextCorpus(tmp.file("t"), 1.0, 8); }).problem(), HasSubstr("fraction"));
  EXPECT_THAT(expectDataError([&] { loadTextCorpus(tmp.file("t"), 0.1, -1); }).problem(), HasSubstr("context"));
}

TEST(TextCorpus, FortunesPackageWhenInstalled) {
  const std::string dir = defaultTextCorpusPath();
  if (!isDirectory(dir)) GTEST_SKIP() << dir << " is not installed (apt-get install fortunes)";
  TextCorpus c = loadTextCorpus(dir, 0.1, 128);
  ASSERT_FALSE(c.files.empty());
  for (const std::string& f : c.files) {
    const std::string name = std::filesystem::path(f).filename().string();
    EXPECT_NE(name.substr(name.size() >= 4 ? name.size() - 4 : 0), ".dat") << f;
    EXPECT_NE(name.substr(name.size() >= 3 ? name.size() - 3 : 0), ".u8") << f;
  }
  const size_t total = c.train.size() + c.valid.size();
  EXPECT_GT(total, 100000u);
  EXPECT_NEAR(static_cast<double>(c.valid.size()) / static_cast<double>(total), 0.1, 0.001);
}
