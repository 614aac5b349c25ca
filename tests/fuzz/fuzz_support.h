#pragma once
// Shared by the libFuzzer targets: a per-process scratch file for readers that take a path, and
// the rule every target enforces: a rejected input is a pm::Error with a place and a message;
// any other exception escapes, and libFuzzer reports it as a crash.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/util/errors.h"

namespace pmfuzz {

// Writes the input to a file that belongs to this fuzzing process and returns its path.
inline std::string scratchFile(const uint8_t* data, size_t size, const char* suffix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/pipemare-fuzz-" + std::to_string(getpid()) + suffix;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// A rejection must say what is wrong and where.
inline void checkRejection(const pm::Error& e) {
  if (e.problem().empty() || e.place().empty() || std::string(e.what()).empty()) {
    std::fprintf(stderr, "rejected input without a complete message: '%s'\n", e.what());
    std::abort();
  }
}

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "property violated: %s\n", why.c_str());
  std::abort();
}

}  // namespace pmfuzz
