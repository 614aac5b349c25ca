#include "core/store/run_checkpoints.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/util/atomic_file.h"
#include "core/util/errors.h"

namespace pm {

namespace fs = std::filesystem;

std::string checkpointRoot(const std::string& storePath, int64_t run) {
  if (storePath.empty() || storePath == ":memory:") return "";
  // The store file's own path, links resolved: a store opened through a link (--db link.db for
  // real.db) keeps its checkpoints beside the file itself, where every way of naming it finds them.
  std::error_code ec;
  fs::path file = fs::weakly_canonical(fs::absolute(storePath), ec);
  if (ec) file = fs::absolute(storePath);
  return file.string() + ".checkpoints/run-" + std::to_string(run);
}

namespace {

// Whether `dir` is a symbolic link (not followed).
bool isLink(const std::string& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// `dir` as a private folder of this user: created with mode 0700 when missing; one that is a
// symbolic link, not a folder, or another user's is refused (a planted link would make a run write
// its checkpoints, and its end delete them, wherever it points).
void requirePrivateDir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw StoreError(dir, std::string("cannot create the checkpoint folder: ") + std::strerror(errno));
    if (::lstat(dir.c_str(), &st) != 0) throw StoreError(dir, std::string("cannot read the checkpoint folder: ") + std::strerror(errno));
    ::chmod(dir.c_str(), 0700);  // whatever the umask
  }
  if (S_ISLNK(st.st_mode))
    throw StoreError(dir, "is a symbolic link: checkpoints are not kept through one (remove it, or keep the store elsewhere)");
  if (!S_ISDIR(st.st_mode)) throw StoreError(dir, "is not a folder: the store's checkpoints go there");
  if (st.st_uid != ::geteuid())
    throw StoreError(dir, "belongs to another user (uid " + std::to_string(st.st_uid) + "): checkpoints are kept only in your own folder");
}

}  // namespace

void claimCheckpointRoot(const std::string& root, const std::string& storePath, const RunRecord& run) {
  if (root.empty()) return;
  requirePrivateDir(fs::path(root).parent_path().string());
  std::error_code ec;
  fs::remove_all(root, ec);  // a link named like the run's folder is removed, never followed
  requirePrivateDir(root);
  const nlohmann::json owner{{"store", fs::absolute(storePath).string()}, {"run", run.id}, {"created_at", run.created_at}};
  try {
    writeFileAtomically(root + "/owner.json", owner.dump() + "\n", 0600);
  } catch (const FileError& ex) {
    throw StoreError(ex.place(), ex.problem());
  }
}

bool ownsCheckpointRoot(const std::string& root, const RunRecord& run) {
  if (root.empty()) return false;
  std::ifstream f(root + "/owner.json");
  const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  return j.value("run", int64_t{-1}) == run.id && j.value("created_at", -1.0) == run.created_at;
}

void removeCheckpoints(const std::string& storePath, int64_t run) {
  const std::string root = checkpointRoot(storePath, run);
  std::error_code ec;
  // Never through a link: one planted as "<store>.checkpoints" would point the removal elsewhere.
  if (!root.empty() && !isLink(fs::path(root).parent_path().string())) fs::remove_all(root, ec);
}

}  // namespace pm
