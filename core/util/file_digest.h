#pragma once
// A file's identity for the run store: its size and SHA-256 (OpenSSL), so that a later run or
// another node can tell whether it reads the same bytes.
#include <cstdint>
#include <string>

namespace pm {

struct FileDigest {
  std::string path;
  int64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// Reads the whole file. Throws ConfigError(path, "cannot open: ...") when it cannot be read.
FileDigest digestFile(const std::string& path);
// SHA-256 of a byte string, as 64 lowercase hex digits.
std::string sha256Hex(const std::string& bytes);

}  // namespace pm
