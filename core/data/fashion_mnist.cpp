// Fashion-MNIST: <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz], as shipped by Debian's
// dataset-fashion-mnist package (gzipped) or unpacked by hand (plain).
#include <climits>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/data/datasets.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace pm {
namespace {
namespace fs = std::filesystem;

std::string withoutTrailingSlashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool isDefaultDir(const std::string& dir) {
  return withoutTrailingSlashes(fs::path(dir).lexically_normal().string()) ==
         withoutTrailingSlashes(fs::path(defaultFashionMnistDir()).lexically_normal().string());
}

bool isRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows symbolic links
}

// The gzipped file when present, else the plain one; DataError naming the expected path otherwise.
std::string locate(const std::string& dir, const std::string& base) {
  fs::path gz = fs::path(dir) / (base + ".gz");
  fs::path plain = fs::path(dir) / base;
  if (isRegularFile(gz)) return gz.string();
  if (isRegularFile(plain)) return plain.string();
  std::string problem = "Fashion-MNIST file not found (nor " + plain.string() + ")";
  if (isDefaultDir(dir))
    problem += "; install it with `apt-get install dataset-fashion-mnist`, or point data.path at a directory "
               "holding the IDX files";
  else
    problem += "; data.path must name a directory holding the Fashion-MNIST IDX files";
  throw DataError(gz.string(), problem);
}

}  // namespace

std::vector<std::string> locateFashionMnist(const std::string& dirIn, const std::string& split) {
  const std::string dir = dirIn.empty() ? defaultFashionMnistDir() : dirIn;
  std::string prefix;
  if (split == "train")
    prefix = "train";
  else if (split == "test")
    prefix = "t10k";
  else
    throw DataError(dir, "unknown Fashion-MNIST split '" + split + "'; expected \"train\" or \"test\"");
  return {locate(dir, prefix + "-images-idx3-ubyte"), locate(dir, prefix + "-labels-idx1-ubyte")};
}

ImageDataset loadFashionMnist(const std::string& dir, const std::string& split) {
  const auto files = locateFashionMnist(dir, split);
  const std::string& imagesPath = files[0];
  const std::string& labelsPath = files[1];

  IdxArray images = readIdxFile(imagesPath);
  if (images.dims.size() != 3)
    throw DataError(imagesPath, "expected a rank-3 image array (count x rows x cols), found rank " +
                                    std::to_string(images.dims.size()));
  IdxArray labels = readIdxFile(labelsPath);
  if (labels.dims.size() != 1)
    throw DataError(labelsPath, "expected a rank-1 label array, found rank " + std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw DataError(imagesPath, "image count " + std::to_string(images.dims[0]) + " does not match label count " +
                                    std::to_string(labels.dims[0]) + " (" + labelsPath + ")");
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= 10)
      throw DataError(labelsPath, "label " + std::to_string(labels.data[i]) + " at index " + std::to_string(i) +
                                      " is out of range; Fashion-MNIST labels are 0..9");
  }

  if (images.dims[1] > INT_MAX || images.dims[2] > INT_MAX)
    throw DataError(imagesPath, "image size " + std::to_string(images.dims[1]) + " x " +
                                    std::to_string(images.dims[2]) + " is too large");

  ImageDataset out;
  out.count = images.dims[0];
  out.rows = static_cast<int>(images.dims[1]);
  out.cols = static_cast<int>(images.dims[2]);
  out.pixels = std::move(images.data);
  out.labels = std::move(labels.data);
  return out;
}

}  // namespace pm
