#include "core/cli/export_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/util/atomic_file.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

namespace fs = std::filesystem;

// Writes `text` to `path`: "" when done, else why not, in the system's words.
std::string writeText(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return std::strerror(errno);
  int err = 0;
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0) err = errno ? errno : EIO;
  if (std::fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  return err == 0 ? std::string() : std::strerror(err);
}

void removeParts(const std::vector<std::string>& parts) {
  std::error_code ec;
  for (const auto& p : parts)
    if (!p.empty()) fs::remove(p, ec);
}

// An exported file's mode: readable by all, written by its owner alone, whatever the umask.
constexpr mode_t kExportMode = 0644;

// The first pass: each regular (or missing) target's text into a temporary beside it. Returns the
// temporaries' paths, "" for a target written through later (a device: /dev/stdout). On a failure
// no temporary is left.
std::vector<std::string> writeParts(const std::vector<ExportFile>& files) {
  std::vector<std::string> parts(files.size());
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      const ExportFile& f = files[i];
      std::error_code ec;
      const auto st = fs::symlink_status(f.path, ec);
      if (!ec && fs::exists(st) && !fs::is_regular_file(st)) continue;  // written through in the second pass
      // A temporary of a random name created exclusively beside the target, never through a link
      // planted there; 0644 whatever the umask.
      try {
        parts[i] = writeTemporaryBeside(f.path, f.text, kExportMode);
      } catch (const FileError& ex) {
        throw StoreError(f.option, "cannot write " + f.what + ": " + ex.problem() + "; nothing exported", true);
      }
    }
  } catch (...) {
    removeParts(parts);
    throw;
  }
  return parts;
}

}  // namespace

void writeAllOrNothing(const std::vector<ExportFile>& files) {
  std::vector<std::string> parts = writeParts(files);
  std::vector<std::string> done;
  for (size_t i = 0; i < files.size(); ++i) {
    const ExportFile& f = files[i];
    std::string problem;
    if (parts[i].empty()) {
      problem = writeText(f.path, f.text);
      if (!problem.empty()) problem = "cannot write " + f.what + ": " + problem;
    } else {
      std::error_code ec;
      fs::rename(parts[i], f.path, ec);
      if (ec) {
        problem = "cannot put " + f.what + " in place: " + ec.message();
      } else {
        parts[i].clear();
      }
    }
    if (!problem.empty()) {
      removeParts(parts);
      throw StoreError(f.option, problem + (done.empty() ? "; nothing exported" : "; already written: " + join(done, ", ")),
                       true);
    }
    done.push_back(f.path);
  }
}

}  // namespace pm::cli
