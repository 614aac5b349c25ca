#include "core/util/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/util/errors.h"

namespace pm {

void dropWorldWritable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_uid != ::getuid() || !(st.st_mode & S_IWOTH)) return;
  ::chmod(path.c_str(), st.st_mode & 07777 & ~static_cast<mode_t>(S_IWOTH));
}
namespace fs = std::filesystem;

static std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

std::string dataHomeDir() {
  std::string xdg = envOr("XDG_DATA_HOME", "");
  if (xdg.empty()) xdg = envOr("HOME", "/tmp") + "/.local/share";
  return xdg + "/pipemare";
}

std::string defaultDatabasePath() { return envOr("PIPEMARE_DB", dataHomeDir() + "/runs.db"); }
std::string defaultFashionMnistDir() { return "/usr/share/datasets/fashion-mnist"; }
std::string defaultTextCorpusPath() { return "/usr/share/games/fortunes"; }

void ensureParentDirectory(const std::string& filePath) {
  fs::path parent = fs::path(filePath).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (fs::exists(parent, ec)) return;
  fs::create_directories(parent, ec);
  if (ec) throw StoreError(parent.string(), "cannot create directory: " + ec.message());
  fs::permissions(parent, fs::perms::owner_all, fs::perm_options::replace, ec);
}

bool fileExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}
bool isDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

}  // namespace pm
