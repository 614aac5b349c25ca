#pragma once
// Dataset readers (no LibTorch): Fashion-MNIST from gzipped IDX files, a byte-level text corpus,
// and a synthetic generator for tests. Corrupt input throws DataError naming the file and problem.
#include <cstdint>
#include <string>
#include <vector>

namespace pm {

// One IDX array (http://yann.lecun.com/exdb/mnist/ format): unsigned-byte data only.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // row-major, size == product(dims)
};

// Reads an IDX file, gzipped (.gz, detected by magic bytes) or plain. Checks the magic number
// (0x00000800 | rank), the data type (0x08, unsigned byte), the dimensions and that the payload
// has exactly product(dims) bytes. Throws DataError(path, problem).
IdxArray readIdxFile(const std::string& path);
// Writes an IDX ubyte array, gzipped when the name ends in ".gz" (for tests and tools).
void writeIdxFile(const std::string& path, const IdxArray& array);

struct ImageDataset {
  int64_t count = 0;
  int rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols
  std::vector<uint8_t> labels;  // count, values 0..9
};

// Images in Fashion-MNIST's training split as published (train-images-idx3-ubyte): the size of
// an epoch where the files are not read (the planner's warm-up share).
constexpr int64_t kFashionMnistTrainSamples = 60000;

// split: "train" or "test". Looks for <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
// Checks image/label counts agree and labels are < 10. dir "" = defaultFashionMnistDir().
ImageDataset loadFashionMnist(const std::string& dir, const std::string& split);
// The split's image and label files, found as loadFashionMnist finds them, without reading them:
// a check before a run is recorded. Throws the same DataError when one is missing.
std::vector<std::string> locateFashionMnist(const std::string& dir, const std::string& split);

struct TextCorpus {
  std::vector<uint8_t> train;
  std::vector<uint8_t> valid;
  std::vector<std::string> files;  // files read, in order
};

// path: a file, or a directory whose regular files are read in sorted order (files named
// *.dat / *.u8 and hidden files are skipped: for the 'fortunes' package these are indexes and
// duplicates). The last `evalFraction` of each file's bytes makes the validation split (of the
// whole corpus when that leaves a split shorter than one sequence).
// Throws DataError when nothing is readable or the corpus is shorter than 2*(context+1) bytes.
// The validation split is clamped so that each split holds at least context+1 bytes; evalFraction
// must be in (0, 1). path "" = defaultTextCorpusPath().
TextCorpus loadTextCorpus(const std::string& path, double evalFraction, int context);

struct SyntheticDataset {
  int64_t count = 0;
  int features = 0;              // 784 (viewed as 1x28x28 by image models)
  int classes = 0;               // classification: 10
  std::vector<float> x;          // count * features
  std::vector<int64_t> labels;   // classification
  std::vector<float> targets;    // regression: one target per sample
};

// Learnable synthetic data: classification samples are class prototypes plus Gaussian noise;
// regression targets are a fixed random linear function of x plus noise. Deterministic in seed.
// The problem (prototypes, linear function) depends only on task/features/classes and `seed` picks
// the samples, so sets made with different seeds (train vs eval) are samples of the same problem.
// Regression datasets have classes == 0 and no labels. Invalid arguments throw DataError("synthetic", ...).
SyntheticDataset makeSyntheticDataset(int64_t count, const std::string& task, uint64_t seed, int features = 784,
                                      int classes = 10);

// A permutation of 0..n-1 that depends only on (seed, epoch).
std::vector<int64_t> shuffledIndices(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace pm
