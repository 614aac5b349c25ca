#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "core/data/datasets.h"
#include "core/util/errors.h"
#include "tests/core/data/test_support.h"

using namespace pm;
using namespace pm::testing;
using ::testing::HasSubstr;

namespace {

IdxArray sampleArray() {
  IdxArray a;
  a.dims = {3, 4, 5};
  for (int i = 0; i < 60; ++i) a.data.push_back(static_cast<uint8_t>(i * 7 + 1));
  return a;
}

}  // namespace

TEST(IdxFile, RoundTripPlain) {
  TempDir tmp;
  const std::string path = tmp.file("a-idx3-ubyte");
  IdxArray a = sampleArray();
  writeIdxFile(path, a);
  // The plain file is exactly header + payload.
  std::vector<uint8_t> raw = readBytes(path);
  ASSERT_EQ(raw.size(), 4u + 3 * 4 + 60);
  EXPECT_EQ(raw[0], 0);
  EXPECT_EQ(raw[1], 0);
  EXPECT_EQ(raw[2], 0x08);
  EXPECT_EQ(raw[3], 3);
  EXPECT_EQ(raw[7], 3);
  EXPECT_EQ(raw[11], 4);
  EXPECT_EQ(raw[15], 5);
  IdxArray b = readIdxFile(path);
  EXPECT_EQ(b.dims, a.dims);
  EXPECT_EQ(b.data, a.data);
}

TEST(IdxFile, RoundTripGzip) {
  TempDir tmp;
  const std::string path = tmp.file("a-idx3-ubyte.gz");
  IdxArray a = sampleArray();
  writeIdxFile(path, a);
  std::vector<uint8_t> raw = readBytes(path);
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(raw[0], 0x1f);  // really gzipped
  EXPECT_EQ(raw[1], 0x8b);
  IdxArray b = readIdxFile(path);
  EXPECT_EQ(b.dims, a.dims);
  EXPECT_EQ(b.data, a.data);
}

TEST(IdxFile, GzipDetectedByMagicNotName) {
  TempDir tmp;
  IdxArray a = sampleArray();
  std::vector<uint8_t> plain = concat(idxHeader({3, 4, 5}), a.data);
  // Gzipped content under a plain name is inflated...
  writeBytes(tmp.file("gz-content"), gzipBytes(plain));
  EXPECT_EQ(readIdxFile(tmp.file("gz-content")).data, a.data);
  // ...and plain content under a .gz name is read as is.
  writeBytes(tmp.file("plain-content.gz"), plain);
  EXPECT_EQ(readIdxFile(tmp.file("plain-content.gz")).dims, a.dims);
}

TEST(IdxFile, LargerRoundTripAcrossChunks) {
  TempDir tmp;
  IdxArray a;
  a.dims = {3, 700, 1000};  // 2.1 MB: several read chunks
  a.data.resize(3 * 700 * 1000);
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  writeIdxFile(tmp.file("big.gz"), a);
  writeIdxFile(tmp.file("big"), a);
  EXPECT_EQ(readIdxFile(tmp.file("big.gz")).data, a.data);
  EXPECT_EQ(readIdxFile(tmp.file("big")).data, a.data);
}

TEST(IdxFile, MultiMemberGzipIsAccepted) {
  TempDir tmp;
  IdxArray a = sampleArray();
  std::vector<uint8_t> plain = concat(idxHeader({3, 4, 5}), a.data);
  std::vector<uint8_t> first(plain.begin(), plain.begin() + 10);
  std::vector<uint8_t> second(plain.begin() + 10, plain.end());
  writeBytes(tmp.file("multi.gz"), concat(gzipBytes(first), gzipBytes(second)));
  IdxArray b = readIdxFile(tmp.file("multi.gz"));
  EXPECT_EQ(b.dims, a.dims);
  EXPECT_EQ(b.data, a.data);
}

TEST(IdxFile, MissingFileNamesThePath) {
  TempDir tmp;
  const std::string path = tmp.file("does-not-exist-idx1-ubyte.gz");
  DataError e = expectDataError([&] { readIdxFile(path); });
  EXPECT_EQ(e.place(), path);
  EXPECT_THAT(e.what(), HasSubstr(path));
  EXPECT_THAT(e.problem(), HasSubstr("cannot open"));
  EXPECT_THAT(e.problem(), HasSubstr("No such file"));
  EXPECT_EQ(e.exitCode(), 2);
}

TEST(IdxFile, DirectoryIsRejected) {
  TempDir tmp;
  DataError e = expectDataError([&] { readIdxFile(tmp.path()); });
  EXPECT_THAT(e.problem(), HasSubstr("cannot open"));
}

TEST(IdxFile, ShortHeader) {
  TempDir tmp;
  writeBytes(tmp.file("short"), {0, 0, 8});
  DataError e = expectDataError([&] { readIdxFile(tmp.file("short")); });
  EXPECT_EQ(e.place(), tmp.file("short"));
  EXPECT_THAT(e.problem(), HasSubstr("3 bytes"));
  writeBytes(tmp.file("empty"), {});
  e = expectDataError([&] { readIdxFile(tmp.file("empty")); });
  EXPECT_THAT(e.problem(), HasSubstr("too short for an IDX header: 0 bytes"));
}

TEST(IdxFile, BadMagic) {
  TempDir tmp;
  writeBytes(tmp.file("bad"), concat({0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1}, {7}));
  DataError e = expectDataError([&] { readIdxFile(tmp.file("bad")); });
  EXPECT_EQ(e.place(), tmp.file("bad"));
  EXPECT_THAT(e.problem(), HasSubstr("bad magic number 0x12340801"));
  EXPECT_THAT(e.problem(), HasSubstr("not an IDX file"));
}

TEST(IdxFile, UnsupportedDataType) {
  TempDir tmp;
  writeBytes(tmp.file("float"), concat(idxHeader({2}, 0x0D), {0, 0, 0, 0, 0, 0, 0, 0}));
  DataError e = expectDataError([&] { readIdxFile(tmp.file("float")); });
  EXPECT_EQ(e.problem(), "unsupported IDX data type 0x0D; only unsigned byte (0x08) is supported");
}

TEST(IdxFile, BadRank) {
  TempDir tmp;
  writeBytes(tmp.file("rank0"), {0, 0, 8, 0});
  EXPECT_THAT(expectDataError([&] { readIdxFile(tmp.file("rank0")); }).problem(),
              HasSubstr("unsupported IDX rank 0"));
  writeBytes(tmp.file("rank5"), idxHeader({1, 1, 1, 1, 1}));
  EXPECT_THAT(expectDataError([&] { readIdxFile(tmp.file("rank5")); }).problem(),
              HasSubstr("unsupported IDX rank 5; expected 1 to 4"));
}

TEST(IdxFile, TruncatedDimensions) {
  TempDir tmp;
  writeBytes(tmp.file("dims"), {0, 0, 8, 3, 0, 0, 0, 2, 0, 0});
  DataError e = expectDataError([&] { readIdxFile(tmp.file("dims")); });
  EXPECT_THAT(e.problem(), HasSubstr("truncated header: expected 3 dimensions (12 bytes), found 6 bytes"));
}

TEST(IdxFile, ZeroDimension) {
  TempDir tmp;
  writeBytes(tmp.file("zero"), idxHeader({4, 0}));
  EXPECT_EQ(expectDataError([&] { readIdxFile(tmp.file("zero")); }).problem(), "dimension 1 is 0");
}

TEST(IdxFile, HugeDimensionsRejectedBeforeAllocating) {
  TempDir tmp;
  // 65536^3 bytes = 256 TiB: must be refused from the header alone.
  writeBytes(tmp.file("huge"), concat(idxHeader({65536, 65536, 65536}), {1, 2, 3}));
  DataError e = expectDataError([&] { readIdxFile(tmp.file("huge")); });
  EXPECT_THAT(e.problem(), HasSubstr("exceed the limit of 2147483648 bytes"));
  // Just under the limit but with a tiny payload: reported as truncated, without a 2 GiB buffer.
  writeBytes(tmp.file("big-claim"), concat(idxHeader({32768, 65536}), {1, 2, 3}));
  e = expectDataError([&] { readIdxFile(tmp.file("big-claim")); });
  EXPECT_EQ(e.problem(), "truncated: expected 2147483648 data bytes, found 3");
}

TEST(IdxFile, TruncatedPayload) {
  TempDir tmp;
  writeBytes(tmp.file("trunc"), concat(idxHeader({2, 5}), {1, 2, 3, 4, 5, 6, 7}));
  DataError e = expectDataError([&] { readIdxFile(tmp.file("trunc")); });
  EXPECT_EQ(e.place(), tmp.file("trunc"));
  EXPECT_EQ(e.problem(), "truncated: expected 10 data bytes, found 7");
  // The same inside a complete gzip stream.
  writeBytes(tmp.file("trunc.gz"), gzipBytes(concat(idxHeader({2, 5}), {1, 2, 3})));
  e = expectDataError([&] { readIdxFile(tmp.file("trunc.gz")); });
  EXPECT_EQ(e.problem(), "truncated: expected 10 data bytes, found 3");
}

TEST(IdxFile, TrailingBytes) {
  TempDir tmp;
  writeBytes(tmp.file("trail"), concat(idxHeader({3}), {1, 2, 3, 4}));
  EXPECT_EQ(expectDataError([&] { readIdxFile(tmp.file("trail")); }).problem(), "trailing bytes after data");
  writeBytes(tmp.file("trail.gz"), gzipBytes(concat(idxHeader({3}), {1, 2, 3, 4})));
  EXPECT_EQ(expectDataError([&] { readIdxFile(tmp.file("trail.gz")); }).problem(), "trailing bytes after data");
}

TEST(IdxFile, TruncatedGzipStream) {
  TempDir tmp;
  const std::string path = tmp.file("cut.gz");
  writeIdxFile(path, sampleArray());
  const auto full = std::filesystem::file_size(path);
  for (uintmax_t keep : {full - 1, full - 8, full / 2, uintmax_t{12}}) {
    std::filesystem::resize_file(path, keep);
    DataError e = expectDataError([&] { readIdxFile(path); });
    EXPECT_EQ(e.place(), path);
    EXPECT_EQ(e.problem(), "truncated gzip stream") << "kept " << keep << " of " << full << " bytes";
  }
}

TEST(IdxFile, CorruptGzipStream) {
  TempDir tmp;
  IdxArray a = sampleArray();
  std::vector<uint8_t> gz = gzipBytes(concat(idxHeader({3, 4, 5}), a.data));
  // Flip a byte of the CRC-32 in the trailer: the data inflate fine but fail the check.
  gz[gz.size() - 6] ^= 0xFF;
  writeBytes(tmp.file("crc.gz"), gz);
  EXPECT_THAT(expectDataError([&] { readIdxFile(tmp.file("crc.gz")); }).problem(),
              HasSubstr("corrupt gzip stream"));
  // Garbage after a complete member.
  writeBytes(tmp.file("garbage.gz"), concat(gzipBytes(concat(idxHeader({3, 4, 5}), a.data)), {'x', 'y'}));
  EXPECT_EQ(expectDataError([&] { readIdxFile(tmp.file("garbage.gz")); }).problem(),
            "trailing garbage after gzip stream");
}

TEST(IdxFile, WriteRejectsInconsistentArrays) {
  TempDir tmp;
  IdxArray a;
  a.dims = {2, 3};
  a.data = {1, 2, 3};
  DataError e = expectDataError([&] { writeIdxFile(tmp.file("x"), a); });
  EXPECT_THAT(e.problem(), HasSubstr("describe 6 bytes but the array holds 3"));
  a.dims = {};
  e = expectDataError([&] { writeIdxFile(tmp.file("x"), a); });
  EXPECT_THAT(e.problem(), HasSubstr("rank 0"));
  EXPECT_FALSE(std::filesystem::exists(tmp.file("x")));
  a.dims = {3};
  e = expectDataError([&] { writeIdxFile(tmp.file("no-such-dir/x.gz"), a); });
  EXPECT_THAT(e.problem(), HasSubstr("cannot open for writing"));
}
