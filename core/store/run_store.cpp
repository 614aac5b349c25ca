#include "core/store/run_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "core/store/store_internal.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/system_info.h"

// The run store: opening and closing a store file. Its runs are in run_store_runs.cpp, importing
// another store's runs in run_store_import.cpp, the rows of a run in run_store_rows.cpp, the schema
// and its migrations in run_store_schema.cpp, the SQLite helpers in store_sqlite.cpp.
namespace pm {

using namespace store_detail;

namespace {

// Reads the file before anything is written to it: a foreign or newer file must stay untouched.
void probeReadable(sqlite3* db, const std::string& path) {
  char* err = nullptr;
  int prc = sqlite3_exec(db, "SELECT COUNT(*) FROM sqlite_master", nullptr, nullptr, &err);
  std::string msg = err ? err : sqlite3_errstr(prc);
  sqlite3_free(err);
  if ((prc & 0xff) == SQLITE_NOTADB) throw StoreError(path, "not a SQLite database (" + msg + ")", true);
  // Cannot open, or an I/O error before anything was read: a read-only connection could not make
  // or grow the log's index (-shm) beside the store (a read-only file system, a full disk).
  if ((prc & 0xff) == SQLITE_CANTOPEN || (prc & 0xff) == SQLITE_IOERR)
    throw StoreOpenError(StoreOpenError::Reason::CannotOpen, path, "cannot read the run store: " + explain(msg, prc), false);
  if (prc != SQLITE_OK)
    throw StoreError(path, isDamage(prc) ? explain(msg, prc) : "cannot read the run store: " + explain(msg, prc), isDamage(prc));
}

// A store opened read-only can be neither created nor migrated: it must be one of this version.
void requireCurrentSchema(const TableInfo& tables, int version, const std::string& path) {
  if (!tables.hasSchemaVersion)
    throw StoreError(path, "not a PipeMare run store (empty database; opened read-only, so not created)", true);
  if (version < kStoreSchemaVersion)
    throw StoreOpenError(StoreOpenError::Reason::OlderSchema, path, "the store has schema version " + std::to_string(version) + ", older than version " +
                               std::to_string(kStoreSchemaVersion) +
                               "; open it once for writing (any pipemare command) to migrate it",
                     true);
}

// WAL is persistent in the file; switching needs a moment of exclusive access, so retry
// while a concurrent opener holds it.
void switchToWal(sqlite3* db, const std::string& path) {
  double deadline = monotonicSeconds() + busyTimeoutMs() / 1000.0;
  for (;;) {
    char* err = nullptr;
    int prc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, &err);
    if (prc == SQLITE_OK) break;
    std::string msg = err ? err : sqlite3_errstr(prc);
    sqlite3_free(err);
    int primary = prc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || monotonicSeconds() > deadline)
      throw StoreError(path, "cannot switch to WAL mode: " + msg);
    sqlite3_sleep(20);
  }
}

// A URI naming `path` with immutable=1 (file: URIs escape %, ? and #).
std::string immutableUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

RunStore::RunStore(const std::string& path, bool readOnly)
    : path_(path), readOnly_(readOnly), pending_(std::make_unique<Pending>()) {
  openFile();
}

RunStore::RunStore(const std::string& path, ReadMode mode)
    : path_(path), readOnly_(true), immutable_(mode == ReadMode::Immutable), pending_(std::make_unique<Pending>()) {
  openFile();
}

void RunStore::openFile() {
  const bool memory = path_ == ":memory:" || path_.empty();
  if (!memory) {
    std::string problem = headerProblem(path_);
    if (!problem.empty()) throw StoreError(path_, "not a SQLite database (" + problem + ")", true);
    if (readOnly_ && !fileExists(path_)) throw StoreError(path_, "no run store here (the file does not exist)", true);
    if (!readOnly_) ensureParentDirectory(path_);
  }
  const bool created = !memory && !readOnly_ && !fileExists(path_);
  int flags = (readOnly_ ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX;
  if (immutable_) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(immutable_ ? immutableUri(path_).c_str() : path_.c_str(), &db_, flags, nullptr);
  try {
    if ((rc & 0xff) == SQLITE_CANTOPEN)
      throw StoreOpenError(StoreOpenError::Reason::CannotOpen, path_, "cannot open the run store: " + describe(db_, rc), false);
    if (rc != SQLITE_OK) throw StoreError(path_, "cannot open the run store: " + describe(db_, rc));
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busyTimeoutMs());

    probeReadable(db_, path_);  // before writing anything
    if (!readOnly_ && sqlite3_db_readonly(db_, "main") == 1)
      throw StoreError(path_, kReadOnlyFileProblem, true);
    TableInfo tables = readTables(db_, path_);
    if (!tables.hasSchemaVersion && !tables.others.empty()) throw StoreError(path_, notOurStoreMessage(tables), true);
    int version = tables.hasSchemaVersion ? readVersion(db_, path_) : 0;
    if (version > kStoreSchemaVersion) throw StoreError(path_, newerVersionMessage(version), true);

    struct stat st {};
    if (!memory && ::stat(path_.c_str(), &st) == 0) {
      fileDev_ = static_cast<unsigned long long>(st.st_dev);
      fileIno_ = static_cast<unsigned long long>(st.st_ino);
    }
    if (readOnly_) {
      requireCurrentSchema(tables, version, path_);
      exec("PRAGMA foreign_keys = ON");
      return;
    }

    switchToWal(db_, path_);
    exec("PRAGMA synchronous = NORMAL");
    exec("PRAGMA foreign_keys = ON");
    if (version < kStoreSchemaVersion) migrate();
    if (created)
      for (const char* suffix : {"", "-wal", "-shm"}) dropWorldWritable(path_ + suffix);
  } catch (...) {
    pending_.reset();
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

void RunStore::migrateIfOlder(const std::string& path) {
  try {
    RunStore probe(path, /*readOnly=*/true);
  } catch (const StoreOpenError& e) {
    if (e.reason() != StoreOpenError::Reason::OlderSchema) return;  // the reader says what is wrong
    try {
      RunStore migrated(path);
    } catch (const StoreError& w) {
      throw StoreError(path, e.problem() + "; it cannot be migrated here: " + w.problem(), true);
    }
  } catch (const std::exception&) {
    // not a store, damaged, missing: the reader's own open says so
  }
}

std::unique_ptr<RunStore> RunStore::openReadOnly(const std::string& path) {
  if (!fileExists(path)) throw StoreError(path, "no run store here (the file does not exist)", true);
  migrateIfOlder(path);
  try {
    return std::make_unique<RunStore>(path, /*readOnly=*/true);
  } catch (const StoreOpenError& e) {
    if (e.reason() != StoreOpenError::Reason::CannotOpen) throw;
  }
  // SQLite could not open it read-only: on a read-only file system or a full disk a
  // write-ahead-log store's index (-shm) cannot be made. The file is read as it stands; a log
  // beside it (runs recorded since its last checkpoint) cannot be read that way, and is named.
  auto store = std::make_unique<RunStore>(path, ReadMode::Immutable);
  std::error_code ec;
  const auto walBytes = std::filesystem::file_size(path + "-wal", ec);
  if (!ec && walBytes > 0)
    std::fprintf(stderr,
                 "pipemare: note: %s is read without its write-ahead log (%s-wal, %llu bytes: what was recorded since its last "
                 "checkpoint), which cannot be read here (a read-only file system or a full disk)\n",
                 path.c_str(), path.c_str(), static_cast<unsigned long long>(walBytes));
  return store;
}

std::unique_ptr<RunStore> RunStore::openForReading(const std::string& path) {
  // Reading a store that is not there would create an empty one (a mistyped --db then looks like
  // a store whose runs are gone).
  if (!fileExists(path)) throw StoreError(path, "no run store here (the file does not exist)", true);
  try {
    return std::make_unique<RunStore>(path);
  } catch (const StoreError& e) {
    if (e.problem() != kReadOnlyFileProblem) throw;
    return std::make_unique<RunStore>(path, /*readOnly=*/true);
  }
}

bool RunStore::compactLog() {
  if (readOnly_ || !db_) return false;
  int logFrames = -1, checkpointed = -1;
  const int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, &logFrames, &checkpointed);
  return rc == SQLITE_OK;
}

std::string RunStore::fileProblem() const {
  if (fileIno_ == 0) return "";
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return "was deleted";
  if (static_cast<unsigned long long>(st.st_dev) != fileDev_ || static_cast<unsigned long long>(st.st_ino) != fileIno_)
    return "was replaced by another file";
  return "";
}

RunStore::~RunStore() {
  if (pending_ && db_) {
    try {
      flush();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pipemare: %s (rows not saved)\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "pipemare: %s: unknown error while saving buffered rows\n", path_.c_str());
    }
  }
  pending_.reset();  // finalizes the cached statements before the connection closes
  if (db_) sqlite3_close_v2(db_);
}

void RunStore::exec(const std::string& sql) const { execSql(db_, path_, sql.c_str()); }

}  // namespace pm
