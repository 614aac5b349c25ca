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

void ensureParentDirectory(const std::string& filePath, const std::string& place) {
  const std::string where = place.empty() ? filePath : place;
  const fs::path parent = fs::path(filePath).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  const fs::file_status st = fs::status(parent, ec);
  if (fs::is_directory(st)) return;
  if (fs::exists(st)) throw StoreError(where, parent.string() + " is not a folder", true);
  // The data folder follows the XDG base directory specification: made with its missing parents
  // (a fresh account has no ~/.local/share). Any other folder is a path the user typed.
  const bool dataHome = parent.lexically_normal() == fs::path(dataHomeDir()).lexically_normal();
  if (!dataHome) {
    // A path that cannot be examined (no permission) counts as there: creating the folder then
    // reports the real reason.
    const auto present = [](const fs::path& p) {
      std::error_code e;
      return fs::exists(p, e) || static_cast<bool>(e);
    };
    fs::path missing = parent;
    while (missing.has_parent_path() && missing.parent_path() != missing && !present(missing.parent_path()))
      missing = missing.parent_path();
    if (missing != parent)
      throw StoreError(where, "the folder " + missing.string() + " does not exist (only the last folder of the path is created)",
                       true);
  }
  ec.clear();
  if (dataHome)
    fs::create_directories(parent, ec);
  else
    fs::create_directory(parent, ec);
  if (ec) throw StoreError(where, "cannot create the folder " + parent.string() + ": " + ec.message(), true);
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
