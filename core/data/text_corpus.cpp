// Byte-level text corpus: one file, or the regular files of one directory (not recursive) in sorted
// order. In a directory, hidden files, *.dat and *.u8 (the 'fortunes' package's indexes and UTF-8
// duplicates), files over 64 MiB, unreadable files and second names for an already-read file
// (symbolic links) are skipped.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <system_error>
#include <vector>

#include "core/data/datasets.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace pm {
namespace {
namespace fs = std::filesystem;

constexpr uintmax_t kMaxDirectoryFileBytes = uintmax_t{64} << 20;  // 64 MiB
constexpr uintmax_t kMaxSingleFileBytes = uintmax_t{1} << 31;      // 2 GiB

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Appends the bytes of `path` to `out`. Returns false (with `error` set) when the file cannot be read.
bool appendFile(const std::string& path, std::vector<uint8_t>& out, std::string& error) {
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = std::string("cannot open: ") + std::strerror(errno ? errno : ENOENT);
    return false;
  }
  const size_t start = out.size();
  uint8_t buf[64 * 1024];
  bool ok = true;
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    out.insert(out.end(), buf, buf + n);
    if (n < sizeof buf) {
      if (std::ferror(f)) {
        error = std::string("read error: ") + std::strerror(errno ? errno : EIO);
        ok = false;
      }
      break;
    }
  }
  std::fclose(f);
  if (!ok) out.resize(start);
  return ok;
}

}  // namespace

TextCorpus loadTextCorpus(const std::string& pathIn, double evalFraction, int context) {
  const std::string path = pathIn.empty() ? defaultTextCorpusPath() : pathIn;
  if (!(evalFraction > 0.0 && evalFraction < 1.0))
    throw DataError(path, "the validation fraction must be between 0 and 1 (exclusive), got " +
                              std::to_string(evalFraction));
  if (context < 0) throw DataError(path, "context must be >= 0, got " + std::to_string(context));

  TextCorpus corpus;
  std::vector<uint8_t> bytes;
  std::vector<int64_t> fileEnds;  // where each file's bytes end in `bytes`
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw DataError(path, "cannot open: " + (ec ? ec.message() : std::string(std::strerror(ENOENT))));
  }

  if (fs::is_directory(st)) {
    std::vector<fs::path> entries;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
    if (ec) throw DataError(path, "cannot list directory: " + ec.message());
    std::sort(entries.begin(), entries.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });

    std::set<std::string> seen;  // canonical paths already read
    for (const fs::path& entry : entries) {
      const std::string name = entry.filename().string();
      if (name.empty() || name[0] == '.' || endsWith(name, ".dat") || endsWith(name, ".u8")) continue;
      std::error_code fec;
      if (!fs::is_regular_file(entry, fec)) continue;  // follows links; skips directories, devices, broken links
      uintmax_t size = fs::file_size(entry, fec);
      if (fec || size > kMaxDirectoryFileBytes) continue;
      std::string canonical = fs::canonical(entry, fec).string();
      if (fec) continue;
      if (!seen.insert(canonical).second) continue;
      std::string error;
      if (!appendFile(entry.string(), bytes, error)) continue;
      corpus.files.push_back(entry.string());
      fileEnds.push_back(static_cast<int64_t>(bytes.size()));
    }
    if (corpus.files.empty())
      throw DataError(path, "no readable text files in this directory (hidden files, *.dat, *.u8, "
                            "sub-directories and files over 64 MiB are skipped)");
  } else if (fs::is_regular_file(st)) {
    uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > kMaxSingleFileBytes)
      throw DataError(path, "file too large for a text corpus: " + std::to_string(size) + " bytes (limit " +
                                std::to_string(kMaxSingleFileBytes) + ")");
    std::string error;
    if (!appendFile(path, bytes, error)) throw DataError(path, error);
    corpus.files.push_back(path);
    fileEnds.push_back(static_cast<int64_t>(bytes.size()));
  } else {
    throw DataError(path, "not a regular file or directory");
  }

  const int64_t total = static_cast<int64_t>(bytes.size());
  if (total == 0) throw DataError(path, "the text corpus is empty");
  const int64_t minSplit = int64_t{context} + 1;
  if (total < 2 * minSplit)
    throw DataError(path, "corpus too small: " + std::to_string(total) + " bytes, need at least " +
                              std::to_string(2 * minSplit) + " (context + 1 = " + std::to_string(minSplit) +
                              " bytes for each of the training and validation splits)");

  // The last evalFraction of every file is held out (the last evalFraction of the corpus would be
  // the alphabetically last files, a narrow slice of the text, as the whole validation split).
  // Then, if a split comes out shorter than one sequence, the split point of the whole corpus,
  // clamped to [context+1, total-(context+1)].
  std::vector<uint8_t> train, valid;
  int64_t begin = 0;
  for (const int64_t end : fileEnds) {
    const int64_t held = static_cast<int64_t>(std::llround(static_cast<double>(end - begin) * evalFraction));
    train.insert(train.end(), bytes.begin() + begin, bytes.begin() + (end - held));
    valid.insert(valid.end(), bytes.begin() + (end - held), bytes.begin() + end);
    begin = end;
  }
  if (static_cast<int64_t>(valid.size()) < minSplit || static_cast<int64_t>(train.size()) < minSplit) {
    int64_t validBytes = static_cast<int64_t>(std::llround(static_cast<double>(total) * evalFraction));
    validBytes = std::clamp(validBytes, minSplit, total - minSplit);
    const int64_t trainBytes = total - validBytes;
    valid.assign(bytes.begin() + trainBytes, bytes.end());
    train.assign(bytes.begin(), bytes.begin() + trainBytes);
  }
  corpus.train = std::move(train);
  corpus.valid = std::move(valid);
  return corpus;
}

}  // namespace pm
