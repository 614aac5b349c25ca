// zipBombProblem: a zip archive's directory read before LibTorch inflates any record.
#include "core/util/zip_check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace {

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}
void put64(std::string& s, uint64_t v) {
  put32(s, static_cast<uint32_t>(v));
  put32(s, static_cast<uint32_t>(v >> 32));
}

struct Entry {
  std::string name;
  uint16_t method;     // 0 stored, 8 deflated
  uint64_t packed;     // bytes in the file
  uint64_t inflated;   // bytes once read
};

// A zip archive of `entries`: local headers followed by `packed` filler bytes each, the central
// directory and its end record; with `zip64`, the sizes go in ZIP64 extra fields and 64-bit end
// records (as PyTorch's writer does for large files).
std::string zipOf(const std::vector<Entry>& entries, bool zip64 = false) {
  std::string out, dir;
  for (const auto& e : entries) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    put32(out, 0x04034b50);
    put16(out, 20), put16(out, 0), put16(out, e.method), put16(out, 0), put16(out, 0);
    put32(out, 0), put32(out, static_cast<uint32_t>(e.packed)), put32(out, static_cast<uint32_t>(e.inflated));
    put16(out, static_cast<uint32_t>(e.name.size())), put16(out, 0);
    out += e.name;
    out += std::string(static_cast<size_t>(e.packed), 'z');
    put32(dir, 0x02014b50);
    put16(dir, 45), put16(dir, 20), put16(dir, 0), put16(dir, e.method), put16(dir, 0), put16(dir, 0);
    put32(dir, 0);
    put32(dir, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(e.packed));
    put32(dir, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(e.inflated));
    put16(dir, static_cast<uint32_t>(e.name.size())), put16(dir, zip64 ? 20 : 0), put16(dir, 0);
    put16(dir, 0), put16(dir, 0), put32(dir, 0), put32(dir, offset);
    dir += e.name;
    if (zip64) {
      put16(dir, 0x0001), put16(dir, 16);
      put64(dir, e.inflated), put64(dir, e.packed);
    }
  }
  const uint64_t dirOffset = out.size();
  out += dir;
  if (zip64) {
    const uint64_t end64 = out.size();
    put32(out, 0x06064b50), put64(out, 44), put16(out, 45), put16(out, 45), put32(out, 0), put32(out, 0);
    put64(out, entries.size()), put64(out, entries.size()), put64(out, dir.size()), put64(out, dirOffset);
    put32(out, 0x07064b50), put32(out, 0), put64(out, end64), put32(out, 1);
  }
  put32(out, 0x06054b50), put16(out, 0), put16(out, 0);
  put16(out, zip64 ? 0xFFFF : static_cast<uint32_t>(entries.size())), put16(out, zip64 ? 0xFFFF : static_cast<uint32_t>(entries.size()));
  put32(out, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(dir.size()));
  put32(out, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(dirOffset));
  put16(out, 0);
  return out;
}

std::string written(const pm::test::TempDir& tmp, const std::string& name, const std::string& bytes) {
  const std::string path = tmp.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

// PyTorch's archives (records stored as they are) and small deflated records pass; a record
// announced to inflate 1000-fold to 3 GiB is named, in a plain archive and in a ZIP64 one.
TEST(ZipCheck, ARecordThatInflatesAThousandFoldIsRefusedByName) {
  const pm::test::TempDir tmp;
  const std::vector<Entry> fine{{"model/data.pkl", 0, 4096, 4096}, {"model/data/0", 0, 100000, 100000},
                                {"model/code/x.py", 8, 1000, 50000}};
  EXPECT_EQ(pm::zipBombProblem(written(tmp, "fine.pt", zipOf(fine))), "");
  EXPECT_EQ(pm::zipBombProblem(written(tmp, "fine64.pt", zipOf(fine, true))), "");
  std::vector<Entry> bomb = fine;
  bomb.push_back({"model/data/1", 8, 3u << 20, 3ull << 30});
  for (bool zip64 : {false, true}) {
    const std::string problem = pm::zipBombProblem(written(tmp, zip64 ? "bomb64.pt" : "bomb.pt", zipOf(bomb, zip64)));
    EXPECT_NE(problem.find("record model/data/1 inflates from 3145728 to 3221225472 bytes"), std::string::npos)
        << (zip64 ? "zip64: " : "") << problem;
  }
}

// A file that is not a zip archive is left to its reader; a directory that lies about sizes is named.
TEST(ZipCheck, NotAZipIsLeftToItsReaderAndALyingDirectoryIsNamed) {
  const pm::test::TempDir tmp;
  EXPECT_EQ(pm::zipBombProblem(written(tmp, "text.pt", std::string(5000, 'x'))), "");
  EXPECT_EQ(pm::zipBombProblem(tmp.file("missing.pt")), "");
  std::vector<Entry> huge{{"model/data/0", 0, 10, 10}};
  std::string bytes = zipOf(huge, true);
  // The ZIP64 extra field's stored size (the last 8 bytes of the field) made larger than the file.
  const size_t field = bytes.find("model/data/0", bytes.find("model/data/0") + 1) + std::string("model/data/0").size();
  for (int i = 0; i < 8; ++i) bytes[field + 4 + 8 + static_cast<size_t>(i)] = static_cast<char>(0x7f);
  EXPECT_NE(pm::zipBombProblem(written(tmp, "huge.pt", bytes)).find("more than the file holds"), std::string::npos);
}
