#include "core/util/zip_check.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

namespace pm {

namespace {

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) { return static_cast<uint32_t>(le16(p)) | (static_cast<uint32_t>(le16(p + 2)) << 16); }
uint64_t le64(const unsigned char* p) { return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32); }

bool readAt(std::ifstream& f, uint64_t offset, unsigned char* out, size_t n) {
  f.clear();
  f.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(f.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n)));
}

}  // namespace

std::string zipBombProblem(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return "";
  const uint64_t size = static_cast<uint64_t>(f.tellg());
  if (size < 22) return "";
  // The end-of-central-directory record: in the last 64 KiB + 22 bytes (its comment is at most 64 KiB).
  const uint64_t tail = std::min<uint64_t>(size, 65535 + 22);
  std::vector<unsigned char> end(tail);
  if (!readAt(f, size - tail, end.data(), end.size())) return "";
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail) - 22; i >= 0; --i)
    if (le32(&end[static_cast<size_t>(i)]) == 0x06054b50u) {
      eocd = i;
      break;
    }
  if (eocd < 0) return "";  // not a zip archive
  const unsigned char* e = &end[static_cast<size_t>(eocd)];
  uint64_t entries = le16(e + 10), dirSize = le32(e + 12), dirOffset = le32(e + 16);
  // ZIP64: the locator just before the record points to the 64-bit end record.
  if (eocd >= 20 && le32(&end[static_cast<size_t>(eocd - 20)]) == 0x07064b50u) {
    unsigned char z[56];
    if (readAt(f, le64(&end[static_cast<size_t>(eocd - 20 + 8)]), z, sizeof z) && le32(z) == 0x06064b50u) {
      entries = le64(z + 32);
      dirSize = le64(z + 40);
      dirOffset = le64(z + 48);
    }
  }
  if (dirOffset > size || dirSize > size - dirOffset) return "its zip directory runs past the end of the file";
  std::vector<unsigned char> dir(static_cast<size_t>(dirSize));
  if (!readAt(f, dirOffset, dir.data(), dir.size())) return "its zip directory cannot be read";
  size_t at = 0;
  for (uint64_t n = 0; n < entries && at + 46 <= dir.size(); ++n) {
    const unsigned char* h = &dir[at];
    if (le32(h) != 0x02014b50u) return "its zip directory is damaged (entry " + std::to_string(n + 1) + ")";
    const uint16_t method = le16(h + 10);
    uint64_t packed = le32(h + 20), inflated = le32(h + 24);
    const size_t nameLen = le16(h + 28), extraLen = le16(h + 30), commentLen = le16(h + 32);
    if (at + 46 + nameLen + extraLen + commentLen > dir.size()) return "its zip directory is damaged";
    const std::string name(reinterpret_cast<const char*>(h + 46), nameLen);
    // 64-bit sizes in the ZIP64 extra field, in this order, for the fields set to 0xFFFFFFFF.
    for (size_t x = at + 46 + nameLen; x + 4 <= at + 46 + nameLen + extraLen;) {
      const uint16_t id = le16(&dir[x]), len = le16(&dir[x + 2]);
      if (id == 0x0001) {
        size_t p = x + 4;
        if (inflated == 0xFFFFFFFFu && p + 8 <= x + 4 + len) inflated = le64(&dir[p]), p += 8;
        if (packed == 0xFFFFFFFFu && p + 8 <= x + 4 + len) packed = le64(&dir[p]);
      }
      x += 4 + len;
    }
    if (packed > size) return "record " + name + " claims " + std::to_string(packed) + " stored bytes, more than the file holds";
    if (method != 0 && inflated > kMaxInflatedBytes && inflated / std::max<uint64_t>(packed, 1) > kMaxInflation)
      return "record " + name + " inflates from " + std::to_string(packed) + " to " + std::to_string(inflated) +
             " bytes (more than " + std::to_string(kMaxInflation) +
             "-fold): refused unread, as a zip bomb would be (PyTorch stores its records uncompressed)";
    at += 46 + nameLen + extraLen + commentLen;
  }
  return "";
}

}  // namespace pm
