#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/data/datasets.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "tests/core/data/test_support.h"

using namespace pm;
using namespace pm::testing;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

// count images of rows x cols; pixel (i, r, c) = i + r * cols + c (mod 256); label i % 10.
void writeSplit(const TempDir& dir, const std::string& prefix, int64_t count, int64_t rows, int64_t cols,
                bool gz, int64_t labelCount = -1) {
  IdxArray images, labels;
  images.dims = {count, rows, cols};
  for (int64_t i = 0; i < count; ++i)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) images.data.push_back(static_cast<uint8_t>(i + r * cols + c));
  if (labelCount < 0) labelCount = count;
  labels.dims = {labelCount};
  for (int64_t i = 0; i < labelCount; ++i) labels.data.push_back(static_cast<uint8_t>(i % 10));
  const std::string ext = gz ? ".gz" : "";
  writeIdxFile(dir.file(prefix + "-images-idx3-ubyte" + ext), images);
  writeIdxFile(dir.file(prefix + "-labels-idx1-ubyte" + ext), labels);
}

}  // namespace

TEST(FashionMnist, LoadsTinyTrainAndTestSplits) {
  TempDir dir;
  writeSplit(dir, "train", 20, 6, 5, true);
  writeSplit(dir, "t10k", 10, 6, 5, true);

  ImageDataset train = loadFashionMnist(dir.path(), "train");
  EXPECT_EQ(train.count, 20);
  EXPECT_EQ(train.rows, 6);
  EXPECT_EQ(train.cols, 5);
  ASSERT_EQ(train.pixels.size(), 20u * 6 * 5);
  ASSERT_EQ(train.labels.size(), 20u);
  EXPECT_EQ(train.labels[13], 3);
  EXPECT_EQ(train.pixels[(13 * 6 + 2) * 5 + 4], static_cast<uint8_t>(13 + 2 * 5 + 4));

  ImageDataset test = loadFashionMnist(dir.path() + "/", "test");
  EXPECT_EQ(test.count, 10);
  ASSERT_EQ(test.labels.size(), 10u);
  EXPECT_EQ(test.labels[9], 9);
  EXPECT_EQ(test.pixels.size(), 10u * 6 * 5);
}

TEST(FashionMnist, FallsBackToPlainFilesAndPrefersGzip) {
  TempDir dir;
  writeSplit(dir, "t10k", 10, 4, 4, false);
  EXPECT_EQ(loadFashionMnist(dir.path(), "test").count, 10);
  // With both present the .gz files win.
  writeSplit(dir, "t10k", 12, 4, 4, true);
  EXPECT_EQ(loadFashionMnist(dir.path(), "test").count, 12);
}

TEST(FashionMnist, UnknownSplit) {
  TempDir dir;
  DataError e = expectDataError([&] { loadFashionMnist(dir.path(), "validation"); });
  EXPECT_THAT(e.problem(), HasSubstr("unknown Fashion-MNIST split 'validation'"));
}

TEST(FashionMnist, MissingFilesNameTheExpectedPath) {
  TempDir dir;
  DataError e = expectDataError([&] { loadFashionMnist(dir.path(), "train"); });
  EXPECT_EQ(e.place(), dir.file("train-images-idx3-ubyte.gz"));
  EXPECT_THAT(e.problem(), HasSubstr(dir.file("train-images-idx3-ubyte")));
  EXPECT_THAT(e.problem(), Not(HasSubstr("apt-get")));  // not the default directory
  EXPECT_EQ(e.exitCode(), 2);

  // Images present, labels missing: the labels path is named.
  writeSplit(dir, "train", 3, 2, 2, true);
  std::filesystem::remove(dir.file("train-labels-idx1-ubyte.gz"));
  e = expectDataError([&] { loadFashionMnist(dir.path(), "train"); });
  EXPECT_EQ(e.place(), dir.file("train-labels-idx1-ubyte.gz"));
}

TEST(FashionMnist, MissingDefaultDirectorySuggestsThePackage) {
  if (isDirectory(defaultFashionMnistDir())) GTEST_SKIP() << "the Fashion-MNIST package is installed";
  DataError e = expectDataError([&] { loadFashionMnist(defaultFashionMnistDir(), "test"); });
  EXPECT_THAT(e.what(), HasSubstr(defaultFashionMnistDir() + "/t10k-images-idx3-ubyte.gz"));
  EXPECT_THAT(e.problem(), HasSubstr("apt-get install dataset-fashion-mnist"));
}

TEST(FashionMnist, MismatchedCounts) {
  TempDir dir;
  writeSplit(dir, "train", 20, 3, 3, true, 19);
  DataError e = expectDataError([&] { loadFashionMnist(dir.path(), "train"); });
  EXPECT_EQ(e.place(), dir.file("train-images-idx3-ubyte.gz"));
  EXPECT_THAT(e.problem(), HasSubstr("image count 20 does not match label count 19"));
}

TEST(FashionMnist, LabelOutOfRange) {
  TempDir dir;
  writeSplit(dir, "t10k", 10, 3, 3, true);
  IdxArray labels;
  labels.dims = {10};
  labels.data = {0, 1, 2, 3, 4, 5, 6, 12, 8, 9};
  writeIdxFile(dir.file("t10k-labels-idx1-ubyte.gz"), labels);
  DataError e = expectDataError([&] { loadFashionMnist(dir.path(), "test"); });
  EXPECT_EQ(e.place(), dir.file("t10k-labels-idx1-ubyte.gz"));
  EXPECT_THAT(e.problem(), HasSubstr("label 12 at index 7"));
}

TEST(FashionMnist, WrongRanks) {
  TempDir dir;
  writeSplit(dir, "t10k", 4, 2, 2, true);
  IdxArray flat;
  flat.dims = {4, 4};
  flat.data.assign(16, 1);
  writeIdxFile(dir.file("t10k-images-idx3-ubyte.gz"), flat);
  DataError e = expectDataError([&] { loadFashionMnist(dir.path(), "test"); });
  EXPECT_EQ(e.place(), dir.file("t10k-images-idx3-ubyte.gz"));
  EXPECT_THAT(e.problem(), HasSubstr("rank-3"));
  EXPECT_THAT(e.problem(), HasSubstr("found rank 2"));

  writeSplit(dir, "t10k", 4, 2, 2, true);
  IdxArray labels2d;
  labels2d.dims = {4, 1};
  labels2d.data = {1, 2, 3, 4};
  writeIdxFile(dir.file("t10k-labels-idx1-ubyte.gz"), labels2d);
  e = expectDataError([&] { loadFashionMnist(dir.path(), "test"); });
  EXPECT_EQ(e.place(), dir.file("t10k-labels-idx1-ubyte.gz"));
  EXPECT_THAT(e.problem(), HasSubstr("rank-1"));
}

TEST(FashionMnist, CorruptFileErrorNamesTheFile) {
  TempDir dir;
  writeSplit(dir, "t10k", 10, 3, 3, true);
  const std::string images = dir.file("t10k-images-idx3-ubyte.gz");
  std::filesystem::resize_file(images, std::filesystem::file_size(images) - 3);
  DataError e = expectDataError([&] { loadFashionMnist(dir.path(), "test"); });
  EXPECT_EQ(e.place(), images);
  EXPECT_EQ(e.problem(), "truncated gzip stream");
}

TEST(FashionMnist, RealTestSplitWhenInstalled) {
  const std::string dir = defaultFashionMnistDir();
  if (!fileExists(dir)) GTEST_SKIP() << dir << " is not installed (apt-get install dataset-fashion-mnist)";
  ImageDataset test = loadFashionMnist(dir, "test");
  EXPECT_EQ(test.count, 10000);
  EXPECT_EQ(test.rows, 28);
  EXPECT_EQ(test.cols, 28);
  ASSERT_EQ(test.pixels.size(), 10000u * 28 * 28);
  ASSERT_EQ(test.labels.size(), 10000u);
  // The test split has exactly 1000 images of each class.
  std::vector<int> perClass(10, 0);
  for (uint8_t l : test.labels) perClass.at(l)++;
  for (int c = 0; c < 10; ++c) EXPECT_EQ(perClass[c], 1000) << "class " << c;
  // Images are not blank.
  std::set<uint8_t> values(test.pixels.begin(), test.pixels.begin() + 28 * 28);
  EXPECT_GT(values.size(), 10u);
}
