#pragma once
// A look at a zip archive's directory before LibTorch reads it: PyTorch's files (torch.jit.save,
// torch.save) are zip archives whose records LibTorch inflates whole into memory. A small file
// whose directory announces a record far larger than its stored bytes (a "zip bomb": a 3 MB
// TorchScript file with a 3 GiB deflated record) would make a reader take gigabytes before any
// check could see the model. PyTorch writes its records stored, uncompressed.
#include <cstdint>
#include <string>

namespace pm {

// The first record that inflates more than kMaxInflation-fold to over kMaxInflatedBytes, or whose
// sizes run past the file, described ("" when there is none, or when the file is not a zip
// archive at all: whoever reads it next says what it is).
inline constexpr uint64_t kMaxInflation = 100;
inline constexpr uint64_t kMaxInflatedBytes = 64ull << 20;
std::string zipBombProblem(const std::string& path);

}  // namespace pm
