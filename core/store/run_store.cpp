#include "core/store/run_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/system_info.h"

namespace pm {

// ------------------------------------------------------------------------------------------
// Schema
//
// Version 1 is the historical schema: runs kept their tags as a JSON array in runs.tags and
// had no sweep / launcher / status-message columns and no indexes. A new store is created by
// running this DDL and then every migration, so there is exactly one way to reach the current
// schema. The last statement records the version (schema_version holds one row; readers take
// MAX(version) so an extra INSERT by hand does no harm).
const char* storeSchemaV1() {
  return R"SQL(
CREATE TABLE schema_version (
  version INTEGER NOT NULL
);
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT NOT NULL,
  created_at  REAL NOT NULL DEFAULT 0,
  started_at  REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  status      TEXT NOT NULL DEFAULT 'created',
  config_json TEXT NOT NULL DEFAULT '{}',
  host        TEXT NOT NULL DEFAULT '',
  revision    TEXT NOT NULL DEFAULT '',
  notes       TEXT NOT NULL DEFAULT '',
  tags        TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE metrics (
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key       TEXT NOT NULL,
  step      INTEGER NOT NULL,
  wall_time REAL,
  value     REAL
);
CREATE TABLE stage_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key    TEXT NOT NULL,
  stage  INTEGER NOT NULL,
  step   INTEGER NOT NULL,
  value  REAL
);
CREATE TABLE trace (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  stage      INTEGER NOT NULL,
  action     TEXT NOT NULL,
  microbatch INTEGER NOT NULL,
  start      REAL,
  "end"      REAL
);
CREATE TABLE logs (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  time    REAL,
  level   TEXT NOT NULL,
  message TEXT NOT NULL
);
INSERT INTO schema_version (version) VALUES (1);
)SQL";
}

namespace {

// Version 1 -> 2: sweep / launcher / status message columns, tags in their own table (the JSON
// column is copied over in C++ after this DDL), and the indexes the queries use. The old
// runs.tags column stays (SQLite cannot drop it cheaply) but is no longer read or written.
const char* kMigrationV2 = R"SQL(
ALTER TABLE runs ADD COLUMN sweep_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN launcher_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN status_message TEXT NOT NULL DEFAULT '';
CREATE TABLE run_tags (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag    TEXT NOT NULL,
  UNIQUE (run_id, tag)
);
CREATE INDEX run_tags_by_tag ON run_tags(tag);
CREATE INDEX runs_by_sweep ON runs(sweep_id);
CREATE INDEX metrics_by_run_key_step ON metrics(run_id, key, step);
CREATE INDEX stage_metrics_by_run_key_stage_step ON stage_metrics(run_id, key, stage, step);
CREATE INDEX trace_by_run_stage_start ON trace(run_id, stage, start);
CREATE INDEX logs_by_run_time ON logs(run_id, time);
)SQL";

constexpr size_t kAutoFlushRows = 5000;
// How long a writer waits for another process's lock before giving up (rows stay buffered and a
// later flush tries again): 10 s, or PIPEMARE_STORE_BUSY_TIMEOUT_S (0.1..3600) on slow shared disks.
int busyTimeoutMs() {
  static const int ms = [] {
    const char* v = std::getenv("PIPEMARE_STORE_BUSY_TIMEOUT_S");
    if (!v || !*v) return 10000;
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(s >= 0.1 && s <= 3600)) return 10000;
    return static_cast<int>(s * 1000);
  }();
  return ms;
}

std::string heldMessage() {
  const int ms = busyTimeoutMs();
  char buf[96];
  std::snprintf(buf, sizeof buf, " (another process held the store for more than %g s)", ms / 1000.0);
  return buf;
}

double nan() { return std::numeric_limits<double>::quiet_NaN(); }

bool isKnownStatus(const std::string& s) { return s == "created" || s == "running" || isTerminalStatus(s); }

// A damaged file is bad input (exit 2), like a file that is not a store at all.
bool isDamage(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

// SQLite's message for `rc`, explained: how long another process held a busy store, and that a
// damaged file was left as it is.
std::string explain(std::string msg, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) msg += heldMessage();
  if (isDamage(rc)) msg = "the run store is damaged (" + msg + "); it was left as it is";
  return msg;
}

std::string describe(sqlite3* db, int rc) { return explain(db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), rc); }

constexpr const char* kReadOnlyFileProblem =
    "the file is read-only (permissions or file system), so runs cannot be recorded into it; "
    "it can still be read (pipemare runs list, runs show, compare, export)";

void execSql(sqlite3* db, const std::string& place, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string msg = explain(err ? err : sqlite3_errstr(rc), rc);
    sqlite3_free(err);
    throw StoreError(place, msg, isDamage(rc));
  }
}

// A prepared statement. Text is bound SQLITE_TRANSIENT unless the caller guarantees the
// string outlives the step (bindTextStatic).
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& place, const char* sql, bool persistent = false) : db_(db), place_(place) {
    int rc = sqlite3_prepare_v3(db, sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0, &s_, nullptr);
    if (rc != SQLITE_OK) throw StoreError(place_, "cannot prepare statement: " + describe(db_, rc), isDamage(rc));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bindInt(int i, int64_t v) {
    check(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  Stmt& bindDouble(int i, double v) {
    // SQLite stores NaN as NULL; reads map NULL back to NaN.
    check(sqlite3_bind_double(s_, i, v));
    return *this;
  }
  Stmt& bindText(int i, const std::string& v) {
    check(sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
  }
  Stmt& bindTextStatic(int i, const std::string& v) {
    check(sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8));
    return *this;
  }
  // true: a row is available; false: done.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    std::string msg = describe(db_, rc);
    sqlite3_reset(s_);
    throw StoreError(place_, msg, isDamage(rc));
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  // For statements whose every parameter is bound again before the next step.
  void rewind() { sqlite3_reset(s_); }
  bool isNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  int i32(int c) const { return sqlite3_column_int(s_, c); }
  double dbl(int c) const { return isNull(c) ? nan() : sqlite3_column_double(s_, c); }
  std::string text(int c) const {
    const unsigned char* p = sqlite3_column_text(s_, c);
    int n = sqlite3_column_bytes(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw StoreError(place_, "cannot bind parameter: " + describe(db_, rc));
  }
  sqlite3* db_;
  const std::string& place_;
  sqlite3_stmt* s_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when left without commit().
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& place) : db_(db), place_(place) {
    execSql(db_, place_, "BEGIN IMMEDIATE");
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    execSql(db_, place_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& place_;
  bool done_ = false;
};

struct TableInfo {
  bool hasSchemaVersion = false;
  std::vector<std::string> others;  // tables other than schema_version and sqlite_*
};

TableInfo readTables(sqlite3* db, const std::string& place) {
  TableInfo info;
  Stmt q(db, place, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (q.step()) {
    std::string name = q.text(0);
    if (name == "schema_version") info.hasSchemaVersion = true;
    else if (name.rfind("sqlite_", 0) != 0) info.others.push_back(name);
  }
  return info;
}

int readVersion(sqlite3* db, const std::string& place) {
  Stmt q(db, place, "SELECT MAX(version) FROM schema_version");
  if (!q.step() || q.isNull(0)) return 0;
  return q.i32(0);
}

std::string notOurStoreMessage(const TableInfo& t) {
  std::string list;
  for (size_t i = 0; i < t.others.size() && i < 5; ++i) list += (i ? ", " : "") + t.others[i];
  if (t.others.size() > 5) list += ", ...";
  return "not a PipeMare run store (it has tables [" + list + "] but no schema_version table)";
}

std::string newerVersionMessage(int version) {
  return "the store has schema version " + std::to_string(version) + ", newer than version " +
         std::to_string(kStoreSchemaVersion) + " which this build of PipeMare supports; use a newer PipeMare";
}

// Returns "" when the file looks like SQLite (or is empty / absent), else the reason it does not.
// POSIX advisory locks belong to the process, not to a descriptor: closing any descriptor of a
// file drops every lock this process holds on it, SQLite's included. Another process may then
// take the file as its own, checkpoint and delete the WAL under a connection still open here,
// which goes on reading a stale snapshot (seen: the GUI's runs browser stopped seeing new runs
// once another view of the GUI opened the store) or worse (sqlite.org/howtocorrupt.html, 2.2).
// So the header is read by hand only while no connection of this process has the file open.
class OpenStoreFiles {
 public:
  static OpenStoreFiles& instance() {
    static OpenStoreFiles files;
    return files;
  }
  bool isOpen(const std::pair<uint64_t, uint64_t>& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return count_.count(id) > 0;
  }
  void add(const std::pair<uint64_t, uint64_t>& id) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_[id];
  }
  void remove(const std::pair<uint64_t, uint64_t>& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = count_.find(id);
    if (it != count_.end() && --it->second == 0) count_.erase(it);
  }

 private:
  std::mutex mu_;
  std::map<std::pair<uint64_t, uint64_t>, int> count_;  // (device, inode) -> open connections
};

// The file's (device, inode), or nothing when it does not exist.
std::optional<std::pair<uint64_t, uint64_t>> fileIdentity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
}

std::string headerProblem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISREG(st.st_mode) || st.st_size == 0) return "";
  const auto id = fileIdentity(path);
  if (id && OpenStoreFiles::instance().isOpen(*id)) return "";  // open here already: a store, and its locks must stay
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";  // unreadable: sqlite3_open reports it
  char header[16] = {0};
  f.read(header, sizeof header);
  static const char kMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  if (f.gcount() != 16 || std::memcmp(header, kMagic, 16) != 0) return "its header is not 'SQLite format 3'";
  return "";
}

// An integer field of the config, or 0 when it is not a number that fits in an int.
int configInt(const nlohmann::json& v) {
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max())) return 0;
    return i >= std::numeric_limits<int>::min() && i <= std::numeric_limits<int>::max() ? static_cast<int>(i) : 0;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    return std::isfinite(d) && std::fabs(d) < 2e9 ? static_cast<int>(d) : 0;
  }
  return 0;
}

void fillFromConfig(RunRecord& r) {
  auto j = nlohmann::json::parse(r.config_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return;
  auto pipe = j.find("pipeline");
  if (pipe != j.end() && pipe->is_object()) {
    auto s = pipe->find("schedule");
    if (s != pipe->end() && s->is_string()) r.schedule = s->get<std::string>();
    auto st = pipe->find("stages");
    if (st != pipe->end()) r.stages = configInt(*st);
    auto mb = pipe->find("microbatches");
    if (mb != pipe->end()) r.microbatches = configInt(*mb);
  }
  auto model = j.find("model");
  if (model != j.end() && model->is_object()) {
    auto n = model->find("name");
    if (n != model->end() && n->is_string()) r.model = n->get<std::string>();
  }
}

// Columns read by readRun(); final metrics are the value at the highest step (latest row on ties).
const char* kRunColumns =
    "r.id, r.name, r.created_at, r.started_at, r.finished_at, r.status, r.status_message, r.config_json, "
    "r.host, r.revision, r.notes, r.sweep_id, r.launcher_pid, "
    "(SELECT m.value FROM metrics m WHERE m.run_id = r.id AND m.key = 'train/loss' "
    " ORDER BY m.step DESC, m.rowid DESC LIMIT 1), "
    "(SELECT m.value FROM metrics m WHERE m.run_id = r.id AND m.key = 'eval/accuracy' "
    " ORDER BY m.step DESC, m.rowid DESC LIMIT 1)";

RunRecord readRun(const Stmt& q) {
  RunRecord r;
  r.id = q.i64(0);
  r.name = q.text(1);
  r.created_at = q.dbl(2);
  r.started_at = q.dbl(3);
  r.finished_at = q.dbl(4);
  r.status = q.text(5);
  r.status_message = q.text(6);
  r.config_json = q.text(7);
  r.host = q.text(8);
  r.revision = q.text(9);
  r.notes = q.text(10);
  r.sweep_id = q.text(11);
  r.launcher_pid = q.i64(12);
  r.final_loss = q.dbl(13);
  r.final_accuracy = q.dbl(14);
  fillFromConfig(r);
  return r;
}

std::vector<std::string> loadTags(sqlite3* db, const std::string& place, Stmt* reuse, int64_t run) {
  std::vector<std::string> tags;
  std::unique_ptr<Stmt> own;
  if (!reuse) {
    own = std::make_unique<Stmt>(db, place, "SELECT tag FROM run_tags WHERE run_id = ? ORDER BY rowid");
    reuse = own.get();
  }
  reuse->reset();
  reuse->bindInt(1, run);
  while (reuse->step()) tags.push_back(reuse->text(0));
  reuse->reset();
  return tags;
}

void insertTags(sqlite3* db, const std::string& place, int64_t run, const std::vector<std::string>& tags) {
  Stmt ins(db, place, "INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)");
  for (const auto& t : tags) {
    if (t.empty()) continue;
    ins.reset();
    ins.bindInt(1, run).bindText(2, t).run();
  }
}

// Per table: a statement inserting kRowsPerInsert rows at once (far less per-row overhead in
// SQLite) and a single-row one for the remainder; prepared on first use, reused afterwards.
struct Inserter {
  std::unique_ptr<Stmt> many, one;
};

std::string likeEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    if (c == '\\' || c == '%' || c == '_') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

bool isTerminalStatus(const std::string& s) {
  return s == "finished" || s == "stopped" || s == "failed" || s == "diverged" || s == "interrupted";
}

// ------------------------------------------------------------------------------------------
// Buffered rows and the statements that write them (prepared once, reused by every flush).
struct RunStore::Pending {
  struct Metric {
    int64_t run;
    std::string key;
    int64_t step;
    double wall, value;
  };
  struct Stage {
    int64_t run;
    int stage;
    int64_t step;
    std::string key;
    double value;
  };
  struct Trace {
    int64_t run;
    TraceRecord rec;
  };
  struct Log {
    int64_t run;
    double time;
    std::string level, message;
  };
  std::vector<Metric> metrics;
  std::vector<Stage> stages;
  std::vector<Trace> traces;
  std::vector<Log> logs;
  Inserter insMetric, insStage, insTrace, insLog;

  size_t rows() const { return metrics.size() + stages.size() + traces.size() + logs.size(); }
  void clear() {
    metrics.clear();
    stages.clear();
    traces.clear();
    logs.clear();
  }
  void dropRun(int64_t run) {
    auto pred = [run](const auto& r) { return r.run == run; };
    metrics.erase(std::remove_if(metrics.begin(), metrics.end(), pred), metrics.end());
    stages.erase(std::remove_if(stages.begin(), stages.end(), pred), stages.end());
    traces.erase(std::remove_if(traces.begin(), traces.end(), pred), traces.end());
    logs.erase(std::remove_if(logs.begin(), logs.end(), pred), logs.end());
  }
};

// ------------------------------------------------------------------------------------------
RunStore::RunStore(const std::string& path, bool readOnly)
    : path_(path), readOnly_(readOnly), pending_(std::make_unique<Pending>()) {
  const bool memory = path_ == ":memory:" || path_.empty();
  if (!memory) {
    std::string problem = headerProblem(path_);
    if (!problem.empty()) throw StoreError(path_, "not a SQLite database (" + problem + ")", true);
    if (readOnly_ && !fileExists(path_)) throw StoreError(path_, "no run store here (the file does not exist)", true);
    if (!readOnly_) ensureParentDirectory(path_);
  }
  const bool created = !memory && !readOnly_ && !fileExists(path_);
  int flags = (readOnly_ ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  try {
    if (rc != SQLITE_OK) throw StoreError(path_, "cannot open the run store: " + describe(db_, rc));
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busyTimeoutMs());

    // Look before writing anything: a foreign or newer file must stay untouched.
    {
      char* err = nullptr;
      int prc = sqlite3_exec(db_, "SELECT COUNT(*) FROM sqlite_master", nullptr, nullptr, &err);
      std::string msg = err ? err : sqlite3_errstr(prc);
      sqlite3_free(err);
      if ((prc & 0xff) == SQLITE_NOTADB) throw StoreError(path_, "not a SQLite database (" + msg + ")", true);
      if (prc != SQLITE_OK)
        throw StoreError(path_, isDamage(prc) ? explain(msg, prc) : "cannot read the run store: " + explain(msg, prc), isDamage(prc));
    }
    if (!readOnly_ && sqlite3_db_readonly(db_, "main") == 1)
      throw StoreError(path_, kReadOnlyFileProblem, true);
    TableInfo tables = readTables(db_, path_);
    if (!tables.hasSchemaVersion && !tables.others.empty()) throw StoreError(path_, notOurStoreMessage(tables), true);
    int version = tables.hasSchemaVersion ? readVersion(db_, path_) : 0;
    if (version > kStoreSchemaVersion) throw StoreError(path_, newerVersionMessage(version), true);

    if (readOnly_) {
      if (!tables.hasSchemaVersion)
        throw StoreError(path_, "not a PipeMare run store (empty database; opened read-only, so not created)", true);
      if (version < kStoreSchemaVersion)
        throw StoreError(path_, "the store has schema version " + std::to_string(version) + ", older than version " +
                                    std::to_string(kStoreSchemaVersion) +
                                    "; open it once for writing (any pipemare command) to migrate it",
                         true);
      exec("PRAGMA foreign_keys = ON");
      registerOpenFile();
      return;
    }

    // WAL is persistent in the file; switching needs a moment of exclusive access, so retry
    // while a concurrent opener holds it.
    {
      double deadline = monotonicSeconds() + busyTimeoutMs() / 1000.0;
      for (;;) {
        char* err = nullptr;
        int prc = sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, &err);
        if (prc == SQLITE_OK) break;
        std::string msg = err ? err : sqlite3_errstr(prc);
        sqlite3_free(err);
        int primary = prc & 0xff;
        if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || monotonicSeconds() > deadline)
          throw StoreError(path_, "cannot switch to WAL mode: " + msg);
        sqlite3_sleep(20);
      }
    }
    exec("PRAGMA synchronous = NORMAL");
    exec("PRAGMA foreign_keys = ON");
    if (version < kStoreSchemaVersion) migrate();
    if (created)
      for (const char* suffix : {"", "-wal", "-shm"}) dropWorldWritable(path_ + suffix);
    registerOpenFile();
  } catch (...) {
    pending_.reset();
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

std::unique_ptr<RunStore> RunStore::openForReading(const std::string& path) {
  try {
    return std::make_unique<RunStore>(path);
  } catch (const StoreError& e) {
    if (e.problem() != kReadOnlyFileProblem) throw;
    return std::make_unique<RunStore>(path, /*readOnly=*/true);
  }
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
  if (fileId_) OpenStoreFiles::instance().remove(*fileId_);
}

void RunStore::registerOpenFile() {
  if (path_ == ":memory:" || path_.empty()) return;
  fileId_ = fileIdentity(path_);
  if (fileId_) OpenStoreFiles::instance().add(*fileId_);
}

void RunStore::exec(const std::string& sql) const { execSql(db_, path_, sql.c_str()); }

void RunStore::migrate() {
  Transaction tx(db_, path_);
  // Re-check inside the write transaction: another process may have created or migrated the
  // store since we looked.
  TableInfo tables = readTables(db_, path_);
  if (!tables.hasSchemaVersion && !tables.others.empty()) throw StoreError(path_, notOurStoreMessage(tables), true);
  int version = 0;
  if (!tables.hasSchemaVersion) {
    exec(storeSchemaV1());
    version = 1;
  } else {
    version = readVersion(db_, path_);
    if (version == 0) throw StoreError(path_, "damaged run store: the schema_version table is empty", true);
  }
  if (version > kStoreSchemaVersion) throw StoreError(path_, newerVersionMessage(version), true);
  const int found = tables.hasSchemaVersion ? version : 0;
  if (found == kStoreSchemaVersion) return;  // another process got here first; nothing to write

  if (version < 2) {
    exec(kMigrationV2);
    // Tags: JSON array in runs.tags -> run_tags rows (strings verbatim, other JSON values as JSON text).
    Stmt sel(db_, path_, "SELECT id, tags FROM runs ORDER BY id");
    Stmt ins(db_, path_, "INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)");
    while (sel.step()) {
      int64_t id = sel.i64(0);
      auto j = nlohmann::json::parse(sel.text(1), nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) continue;
      if (!j.is_array()) j = nlohmann::json::array({j});
      for (const auto& t : j) {
        if (t.is_null()) continue;
        std::string tag;
        try {
          tag = t.is_string() ? t.get<std::string>() : t.dump();
        } catch (const nlohmann::json::exception&) {
          continue;  // e.g. invalid UTF-8 inside a non-string value: nothing sensible to keep
        }
        if (tag.empty()) continue;
        ins.reset();
        ins.bindInt(1, id).bindText(2, tag).run();
      }
    }
    version = 2;
  }

  Stmt del(db_, path_, "DELETE FROM schema_version");
  del.run();
  Stmt set(db_, path_, "INSERT INTO schema_version (version) VALUES (?)");
  set.bindInt(1, version).run();
  tx.commit();
}

int RunStore::schemaVersion() const { return readVersion(db_, path_); }

// ------------------------------------------------------------------------------------------
// runs

namespace {
void requireWritable(bool readOnly, const std::string& place) {
  if (readOnly) throw StoreError(place, "the run store was opened read-only");
}
void requireChanged(sqlite3* db, const std::string& place, int64_t run) {
  if (sqlite3_changes(db) == 0) throw StoreError(place, "run " + std::to_string(run) + " does not exist");
}
}  // namespace

int64_t RunStore::createRun(const std::string& name, const std::string& configJson, const std::vector<std::string>& tags,
                            const std::string& notes, const std::string& sweepId) {
  requireWritable(readOnly_, path_);
  Transaction tx(db_, path_);
  Stmt ins(db_, path_,
           "INSERT INTO runs (name, created_at, status, config_json, host, revision, notes, sweep_id) "
           "VALUES (?, ?, 'created', ?, ?, ?, ?, ?)");
  ins.bindText(1, name)
      .bindDouble(2, wallClockSeconds())
      .bindText(3, configJson)
      .bindText(4, hostName())
      .bindText(5, projectRevision())
      .bindText(6, notes)
      .bindText(7, sweepId)
      .run();
  int64_t id = sqlite3_last_insert_rowid(db_);
  insertTags(db_, path_, id, tags);
  tx.commit();
  return id;
}

void RunStore::markRunning(int64_t run, int64_t launcherPid) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET status = 'running', started_at = ?, launcher_pid = ? WHERE id = ?");
  q.bindDouble(1, wallClockSeconds()).bindInt(2, launcherPid).bindInt(3, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::markResumed(int64_t run, int64_t launcherPid) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET status = 'running', status_message = '', finished_at = 0, launcher_pid = ? WHERE id = ?");
  q.bindInt(1, launcherPid).bindInt(2, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::truncateAfterStep(int64_t run, int64_t step) {
  requireWritable(readOnly_, path_);
  flush();
  exec("BEGIN IMMEDIATE");
  try {
    Stmt m(db_, path_, "DELETE FROM metrics WHERE run_id = ? AND (step > ? OR (step = ? AND key LIKE 'eval/%'))");
    m.bindInt(1, run).bindInt(2, step).bindInt(3, step).run();
    Stmt s(db_, path_, "DELETE FROM stage_metrics WHERE run_id = ? AND step > ?");
    s.bindInt(1, run).bindInt(2, step).run();
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void RunStore::setStatus(int64_t run, const std::string& status, const std::string& message) {
  requireWritable(readOnly_, path_);
  if (!isKnownStatus(status))
    throw StoreError(path_, "unknown run status '" + status +
                                "' (expected created, running, finished, stopped, failed, diverged or interrupted)");
  // Rows recorded before the status change become visible with it.
  flush();
  if (isTerminalStatus(status)) {
    Stmt q(db_, path_, "UPDATE runs SET status = ?, status_message = ?, finished_at = ? WHERE id = ?");
    q.bindText(1, status).bindText(2, message).bindDouble(3, wallClockSeconds()).bindInt(4, run).run();
  } else {
    Stmt q(db_, path_, "UPDATE runs SET status = ?, status_message = ? WHERE id = ?");
    q.bindText(1, status).bindText(2, message).bindInt(3, run).run();
  }
  requireChanged(db_, path_, run);
}

void RunStore::setNotes(int64_t run, const std::string& notes) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET notes = ? WHERE id = ?");
  q.bindText(1, notes).bindInt(2, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::setTags(int64_t run, const std::vector<std::string>& tags) {
  requireWritable(readOnly_, path_);
  Transaction tx(db_, path_);
  {
    Stmt exists(db_, path_, "SELECT 1 FROM runs WHERE id = ?");
    exists.bindInt(1, run);
    if (!exists.step()) throw StoreError(path_, "run " + std::to_string(run) + " does not exist");
  }
  Stmt del(db_, path_, "DELETE FROM run_tags WHERE run_id = ?");
  del.bindInt(1, run).run();
  insertTags(db_, path_, run, tags);
  tx.commit();
}

void RunStore::deleteRun(int64_t run) {
  requireWritable(readOnly_, path_);
  pending_->dropRun(run);
  Stmt q(db_, path_, "DELETE FROM runs WHERE id = ?");  // ON DELETE CASCADE removes the rows
  q.bindInt(1, run).run();
}

std::vector<std::pair<int64_t, int64_t>> RunStore::importRuns(const std::string& other) {
  requireWritable(readOnly_, path_);
  {
    RunStore src(other, /*readOnly=*/true);  // missing, damaged or foreign files fail here, naming `other`
    const int v = src.schemaVersion();
    if (v != kStoreSchemaVersion)
      throw StoreError(other, "store schema version " + std::to_string(v) + ", this one has " + std::to_string(kStoreSchemaVersion) +
                                  (v < kStoreSchemaVersion ? " (open it once with `pipemare --db FILE runs list` to upgrade it)" : ""),
                       true);
    std::error_code ec;
    if (std::filesystem::equivalent(other, path_, ec)) throw StoreError(other, "cannot import a run store into itself", true);
  }
  flush();
  {
    Stmt attach(db_, path_, "ATTACH DATABASE ? AS src");
    attach.bindText(1, other).run();  // only read from: every statement below writes to main
  }
  struct Detach {
    sqlite3* db;
    ~Detach() { sqlite3_exec(db, "DETACH DATABASE src", nullptr, nullptr, nullptr); }
  } detach{db_};
  // Column lists from this schema (the same version on both sides), run_id / id first.
  auto columns = [&](const char* table, const char* skip) {
    std::string cols;
    Stmt q(db_, path_, (std::string("SELECT name FROM pragma_table_info('") + table + "')").c_str());
    while (q.step()) {
      const std::string c = q.text(0);
      if (c == skip) continue;
      cols += (cols.empty() ? "\"" : ", \"") + c + "\"";
    }
    return cols;
  };
  const std::string runCols = columns("runs", "id");
  static const char* kRowTables[] = {"metrics", "stage_metrics", "trace", "logs", "run_tags"};
  std::vector<std::string> rowCols;
  for (const char* table : kRowTables) rowCols.push_back(columns(table, "run_id"));
  std::vector<std::pair<int64_t, int64_t>> ids;
  Transaction tx(db_, path_);
  std::vector<int64_t> old;
  {
    Stmt q(db_, path_, "SELECT id FROM src.runs ORDER BY id");
    while (q.step()) old.push_back(q.i64(0));
  }
  for (const int64_t id : old) {
    Stmt ins(db_, path_, ("INSERT INTO main.runs (" + runCols + ") SELECT " + runCols + " FROM src.runs WHERE id = ?").c_str());
    ins.bindInt(1, id).run();
    const int64_t fresh = sqlite3_last_insert_rowid(db_);
    for (size_t t = 0; t < rowCols.size(); ++t) {
      const char* table = kRowTables[t];
      const std::string& cols = rowCols[t];
      Stmt rows(db_, path_, (std::string("INSERT INTO main.") + table + " (run_id, " + cols + ") SELECT ?, " + cols + " FROM src." +
                             table + " WHERE run_id = ?").c_str());
      rows.bindInt(1, fresh).bindInt(2, id).run();
    }
    Stmt fix(db_, path_,
             "UPDATE main.runs SET launcher_pid = 0, status = CASE WHEN status IN ('running', 'created') THEN 'interrupted' ELSE status END, "
             "status_message = CASE WHEN status IN ('running', 'created') THEN 'imported while ' || status ELSE status_message END "
             "WHERE id = ?");
    fix.bindInt(1, fresh).run();
    ids.emplace_back(id, fresh);
  }
  tx.commit();
  return ids;
}

std::optional<RunRecord> RunStore::getRun(int64_t run) const {
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs r WHERE r.id = ?";
  Stmt q(db_, path_, sql.c_str());
  q.bindInt(1, run);
  if (!q.step()) return std::nullopt;
  RunRecord r = readRun(q);
  r.tags = loadTags(db_, path_, nullptr, r.id);
  return r;
}

std::vector<RunRecord> RunStore::listRuns(const RunFilter& filter) const {
  // Only fixed SQL fragments are concatenated; every value is a bound parameter.
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs r WHERE 1";
  if (!filter.status.empty()) sql += " AND r.status = :status";
  if (!filter.tag.empty()) sql += " AND r.id IN (SELECT t.run_id FROM run_tags t WHERE t.tag = :tag)";
  if (!filter.sweep_id.empty()) sql += " AND r.sweep_id = :sweep";
  if (!filter.text.empty()) sql += " AND r.name LIKE :text ESCAPE '\\'";
  sql += " ORDER BY r.created_at DESC, r.id DESC";
  Stmt q(db_, path_, sql.c_str());
  // Parameters are numbered in order of appearance.
  int i = 1;
  if (!filter.status.empty()) q.bindText(i++, filter.status);
  if (!filter.tag.empty()) q.bindText(i++, filter.tag);
  if (!filter.sweep_id.empty()) q.bindText(i++, filter.sweep_id);
  if (!filter.text.empty()) q.bindText(i++, "%" + likeEscape(filter.text) + "%");
  std::vector<RunRecord> out;
  Stmt tagQ(db_, path_, "SELECT tag FROM run_tags WHERE run_id = ? ORDER BY rowid");
  while (q.step()) {
    RunRecord r = readRun(q);
    r.tags = loadTags(db_, path_, &tagQ, r.id);
    out.push_back(std::move(r));
  }
  return out;
}

int RunStore::markDeadRunsInterrupted() {
  if (readOnly_) return 0;
  std::vector<std::pair<int64_t, int64_t>> candidates;  // run, pid
  {
    Stmt q(db_, path_, "SELECT id, launcher_pid FROM runs WHERE status = 'running' AND host = ?");
    q.bindText(1, hostName());
    while (q.step()) candidates.emplace_back(q.i64(0), q.i64(1));
  }
  int changed = 0;
  for (const auto& [run, pid] : candidates) {
    if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to signal)
    Stmt u(db_, path_,
           "UPDATE runs SET status = 'interrupted', status_message = ?, finished_at = ? "
           "WHERE id = ? AND status = 'running' AND launcher_pid = ?");
    u.bindText(1, "launcher process " + std::to_string(pid) + " is gone")
        .bindDouble(2, wallClockSeconds())
        .bindInt(3, run)
        .bindInt(4, pid)
        .run();
    changed += sqlite3_changes(db_);
  }
  return changed;
}

// ------------------------------------------------------------------------------------------
// batched writes

void RunStore::appendMetric(int64_t run, const std::string& key, int64_t step, double wallTime, double value) {
  requireWritable(readOnly_, path_);
  pending_->metrics.push_back({run, key, step, wallTime, value});
  if (pending_->rows() >= kAutoFlushRows) flush();
}

void RunStore::appendStageMetric(int64_t run, int stage, int64_t step, const std::string& key, double value) {
  requireWritable(readOnly_, path_);
  pending_->stages.push_back({run, stage, step, key, value});
  if (pending_->rows() >= kAutoFlushRows) flush();
}

void RunStore::appendTrace(int64_t run, const TraceRecord& rec) {
  requireWritable(readOnly_, path_);
  pending_->traces.push_back({run, rec});
  if (pending_->rows() >= kAutoFlushRows) flush();
}

void RunStore::appendLog(int64_t run, double time, const std::string& level, const std::string& message) {
  requireWritable(readOnly_, path_);
  pending_->logs.push_back({run, time, level, message});
  if (pending_->rows() >= kAutoFlushRows) flush();
}

size_t RunStore::pendingRows() const { return pending_ ? pending_->rows() : 0; }

namespace {

constexpr int kRowsPerInsert = 64;  // 64 rows x at most 6 columns stays under SQLite's 999-parameter floor

// "INSERT INTO <table> (<columns>) VALUES (?, ...), (?, ...), ..." with `rows` tuples.
std::string multiRowInsert(const char* head, int columns, int rows) {
  std::string tuple = "(";
  for (int c = 0; c < columns; ++c) tuple += c ? ", ?" : "?";
  tuple += ")";
  std::string sql = head;
  sql += " VALUES ";
  for (int r = 0; r < rows; ++r) {
    if (r) sql += ", ";
    sql += tuple;
  }
  return sql;
}

// Writes `rows` with `ins` (preparing its statements on first use); bind(stmt, firstParam, row)
// binds one row's `columns` parameters starting at firstParam.
template <typename Row, typename Bind>
void insertAll(sqlite3* db, const std::string& place, Inserter& ins, const char* head, int columns,
               const std::vector<Row>& rows, Bind bind) {
  if (rows.empty()) return;
  size_t i = 0;
  if (rows.size() >= static_cast<size_t>(kRowsPerInsert)) {
    if (!ins.many) ins.many = std::make_unique<Stmt>(db, place, multiRowInsert(head, columns, kRowsPerInsert).c_str(), true);
    for (; i + kRowsPerInsert <= rows.size(); i += kRowsPerInsert) {
      for (int r = 0; r < kRowsPerInsert; ++r) bind(*ins.many, 1 + r * columns, rows[i + static_cast<size_t>(r)]);
      ins.many->run();
      ins.many->rewind();
    }
    ins.many->reset();  // drop the (now dangling) static text bindings
  }
  if (i < rows.size()) {
    if (!ins.one) ins.one = std::make_unique<Stmt>(db, place, multiRowInsert(head, columns, 1).c_str(), true);
    for (; i < rows.size(); ++i) {
      bind(*ins.one, 1, rows[i]);
      ins.one->run();
      ins.one->rewind();
    }
    ins.one->reset();
  }
}

}  // namespace

void RunStore::flush() {
  Pending& p = *pending_;
  if (p.rows() == 0) return;
  requireWritable(readOnly_, path_);
  // If the transaction cannot start (store busy) the rows stay buffered for the next flush;
  // if writing them fails (e.g. their run was deleted) they are dropped, so that one bad row
  // cannot block every later flush.
  Transaction tx(db_, path_);
  try {
    insertAll(db_, path_, p.insMetric, "INSERT INTO metrics (run_id, key, step, wall_time, value)", 5, p.metrics,
              [](Stmt& s, int k, const Pending::Metric& m) {
                s.bindInt(k, m.run).bindTextStatic(k + 1, m.key).bindInt(k + 2, m.step).bindDouble(k + 3, m.wall)
                    .bindDouble(k + 4, m.value);
              });
    insertAll(db_, path_, p.insStage, "INSERT INTO stage_metrics (run_id, key, stage, step, value)", 5, p.stages,
              [](Stmt& s, int k, const Pending::Stage& m) {
                s.bindInt(k, m.run).bindTextStatic(k + 1, m.key).bindInt(k + 2, m.stage).bindInt(k + 3, m.step)
                    .bindDouble(k + 4, m.value);
              });
    insertAll(db_, path_, p.insTrace, "INSERT INTO trace (run_id, stage, action, microbatch, start, \"end\")", 6,
              p.traces, [](Stmt& s, int k, const Pending::Trace& t) {
                s.bindInt(k, t.run).bindInt(k + 1, t.rec.stage).bindTextStatic(k + 2, t.rec.action)
                    .bindInt(k + 3, t.rec.microbatch).bindDouble(k + 4, t.rec.start).bindDouble(k + 5, t.rec.end);
              });
    insertAll(db_, path_, p.insLog, "INSERT INTO logs (run_id, time, level, message)", 4, p.logs,
              [](Stmt& s, int k, const Pending::Log& l) {
                s.bindInt(k, l.run).bindDouble(k + 1, l.time).bindTextStatic(k + 2, l.level)
                    .bindTextStatic(k + 3, l.message);
              });
    tx.commit();
  } catch (const StoreError& e) {
    size_t n = p.rows();
    p.clear();
    throw StoreError(path_, "could not save " + std::to_string(n) + " buffered rows: " + e.problem());
  }
  p.clear();
}

// ------------------------------------------------------------------------------------------
// reads

std::vector<std::string> RunStore::metricKeys(int64_t run) const {
  Stmt q(db_, path_, "SELECT DISTINCT key FROM metrics WHERE run_id = ? ORDER BY key");
  q.bindInt(1, run);
  std::vector<std::string> out;
  while (q.step()) out.push_back(q.text(0));
  return out;
}

std::vector<MetricPoint> RunStore::loadMetric(int64_t run, const std::string& key) const {
  Stmt q(db_, path_,
         "SELECT step, wall_time, value FROM metrics WHERE run_id = ? AND key = ? ORDER BY step, rowid");
  q.bindInt(1, run).bindText(2, key);
  std::vector<MetricPoint> out;
  while (q.step()) out.push_back({q.i64(0), q.dbl(1), q.dbl(2)});
  return out;
}

std::vector<std::string> RunStore::stageMetricKeys(int64_t run) const {
  Stmt q(db_, path_, "SELECT DISTINCT key FROM stage_metrics WHERE run_id = ? ORDER BY key");
  q.bindInt(1, run);
  std::vector<std::string> out;
  while (q.step()) out.push_back(q.text(0));
  return out;
}

std::vector<StageMetricPoint> RunStore::loadStageMetric(int64_t run, const std::string& key) const {
  Stmt q(db_, path_,
         "SELECT stage, step, value FROM stage_metrics WHERE run_id = ? AND key = ? ORDER BY stage, step, rowid");
  q.bindInt(1, run).bindText(2, key);
  std::vector<StageMetricPoint> out;
  while (q.step()) out.push_back({q.i32(0), q.i64(1), q.dbl(2)});
  return out;
}

std::vector<TraceRecord> RunStore::loadTrace(int64_t run) const {
  Stmt q(db_, path_,
         "SELECT stage, action, microbatch, start, \"end\" FROM trace WHERE run_id = ? ORDER BY stage, start, rowid");
  q.bindInt(1, run);
  std::vector<TraceRecord> out;
  while (q.step()) out.push_back({q.i32(0), q.text(1), q.i32(2), q.dbl(3), q.dbl(4)});
  return out;
}

std::vector<LogRecord> RunStore::loadLog(int64_t run) const {
  Stmt q(db_, path_, "SELECT time, level, message FROM logs WHERE run_id = ? ORDER BY time, rowid");
  q.bindInt(1, run);
  std::vector<LogRecord> out;
  while (q.step()) out.push_back({q.dbl(0), q.text(1), q.text(2)});
  return out;
}

int64_t RunStore::countRows(const std::string& table, int64_t run) const {
  // Whitelisted: the table name selects one of these fixed statements.
  const char* sql = nullptr;
  if (table == "metrics") sql = "SELECT COUNT(*) FROM metrics WHERE run_id = ?";
  else if (table == "stage_metrics") sql = "SELECT COUNT(*) FROM stage_metrics WHERE run_id = ?";
  else if (table == "trace") sql = "SELECT COUNT(*) FROM trace WHERE run_id = ?";
  else if (table == "logs") sql = "SELECT COUNT(*) FROM logs WHERE run_id = ?";
  else throw StoreError(path_, "countRows: unknown table '" + table + "' (expected metrics, stage_metrics, trace or logs)");
  Stmt q(db_, path_, sql);
  q.bindInt(1, run);
  return q.step() ? q.i64(0) : 0;
}

}  // namespace pm
