#pragma once
// Helpers for the data tests: a temporary directory removed at the end of the test, byte-level
// file writing, and gzip compression (zlib) for hand-made .gz files.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/util/errors.h"

namespace pm::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "pipemare_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    if (info) name += std::string("_") + info->name();
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(f) << path;
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f) << path;
}

inline void writeText(const std::string& path, const std::string& text) {
  writeBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline std::vector<uint8_t> readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
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
