#pragma once
// Helpers for the data tests: byte-level file writing and reading, gzip compression (zlib) for
// hand-made .gz files, IDX headers, and DataError checks. The temporary folder is the shared
// pm::test::TempDir (tests/support/test_support.h).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/errors.h"
#include "tests/support/test_support.h"

namespace pm::testing {

using pm::test::TempDir;

inline void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  pm::test::writeFile(path, std::string(bytes.begin(), bytes.end()));
}

inline void writeText(const std::string& path, const std::string& text) { pm::test::writeFile(path, text); }

inline std::vector<uint8_t> readBytes(const std::string& path) {
  const std::string bytes = pm::test::readFile(path);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// One complete gzip member holding `bytes`.
inline std::vector<uint8_t> gzipBytes(const std::vector<uint8_t>& bytes) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(bytes.size())) + 64);
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// IDX ubyte header: 00 00 08 rank, then big-endian dims.
inline std::vector<uint8_t> idxHeader(const std::vector<uint32_t>& dims, uint8_t type = 0x08) {
  std::vector<uint8_t> h{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<uint8_t>(d >> s));
  return h;
}

inline std::vector<uint8_t> concat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs `f`, expects a DataError, and returns it (place and problem) for further checks.
template <typename F>
pm::DataError expectDataError(F&& f) {
  try {
    f();
  } catch (const pm::DataError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected DataError, got another exception: " << e.what();
    return pm::DataError("", "");
  }
  ADD_FAILURE() << "expected DataError, nothing was thrown";
  return pm::DataError("", "");
}

}  // namespace pm::testing
