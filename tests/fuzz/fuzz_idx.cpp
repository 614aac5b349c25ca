// libFuzzer target: the IDX reader (plain or gzipped; Fashion-MNIST's format).
// Properties: no crash, leak, hang or unbounded allocation; a rejected file is a pm::Error naming
// the file; an accepted array holds exactly product(dims) bytes and survives a write/read round trip.
#include <functional>
#include <numeric>

#include "core/data/datasets.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = pmfuzz::scratchFile(data, size, ".idx");
  pm::IdxArray a;
  try {
    a = pm::readIdxFile(path);
  } catch (const pm::Error& err) {
    pmfuzz::checkRejection(err);
    if (err.place().find(path) == std::string::npos) pmfuzz::fail("rejection does not name the file: " + std::string(err.what()));
    return 0;
  }
  if (a.dims.empty()) pmfuzz::fail("accepted an array without dimensions");
  int64_t n = 1;
  for (int64_t d : a.dims) {
    if (d <= 0) pmfuzz::fail("accepted a non-positive dimension");
    n *= d;
  }
  if (static_cast<int64_t>(a.data.size()) != n) pmfuzz::fail("payload size differs from the product of the dimensions");
  try {
    const std::string copy = path + ".copy";
    pm::writeIdxFile(copy, a);
    const pm::IdxArray b = pm::readIdxFile(copy);
    std::remove(copy.c_str());
    if (b.dims != a.dims || b.data != a.data) pmfuzz::fail("write/read round trip changed the array");
  } catch (const pm::Error& err) {
    pmfuzz::fail(std::string("round trip of an accepted array failed: ") + err.what());
  }
  return 0;
}
