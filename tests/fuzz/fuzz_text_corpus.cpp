// libFuzzer target: the byte-level text corpus reader (charlm's data).
// Input: byte 0 picks the context (1..256), byte 1 the validation fraction (1..255 / 256), the
// rest is the corpus file. Properties: no crash, leak or hang; a rejection is a pm::Error with a
// message; an accepted corpus splits the file's bytes in order, each split holding at least
// context + 1 bytes.
#include "core/data/datasets.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int context = 1 + data[0];
  const double fraction = (data[1] == 0 ? 1 : data[1]) / 256.0;
  const std::string path = pmfuzz::scratchFile(data + 2, size - 2, ".txt");
  pm::TextCorpus c;
  try {
    c = pm::loadTextCorpus(path, fraction, context);
  } catch (const pm::Error& err) {
    pmfuzz::checkRejection(err);
    return 0;
  }
  const size_t body = size - 2;
  if (c.train.size() + c.valid.size() != body) pmfuzz::fail("splits do not add up to the file's size");
  if (c.train.size() < static_cast<size_t>(context) + 1 || c.valid.size() < static_cast<size_t>(context) + 1)
    pmfuzz::fail("a split is shorter than context + 1 bytes");
  for (size_t i = 0; i < c.train.size(); ++i)
    if (c.train[i] != data[2 + i]) pmfuzz::fail("train split is not the file's prefix");
  for (size_t i = 0; i < c.valid.size(); ++i)
    if (c.valid[i] != data[2 + c.train.size() + i]) pmfuzz::fail("validation split is not the file's suffix");
  return 0;
}
