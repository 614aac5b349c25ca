#pragma once
// Internal to core/store (included by its source files only): the SQLite helpers that the run
// store's files share, and the buffer of rows not yet written.
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/store/run_store.h"
#include "core/util/errors.h"

namespace pm::store_detail {

inline constexpr size_t kAutoFlushRows = 5000;
// How long a writer waits for another process's lock before giving up (rows stay buffered and a
// later flush tries again): 10 s, or PIPEMARE_STORE_BUSY_TIMEOUT_S (0.1..3600) on slow shared disks.
int busyTimeoutMs();
std::string heldMessage();  // " (another process held the store for more than N s)"
inline double nan() { return std::numeric_limits<double>::quiet_NaN(); }
// A damaged file is bad input (exit 2), like a file that is not a store at all.
bool isDamage(int rc);
// SQLite's message for `rc`, explained: how long another process held a busy store, and that a
// damaged file was left as it is.
std::string explain(std::string msg, int rc);
std::string describe(sqlite3* db, int rc);
inline constexpr const char* kReadOnlyFileProblem =
    "the file is read-only (permissions or file system), so runs cannot be recorded into it; "
    "it can still be read (pipemare runs list, runs show, compare, export)";
// Why a store did not open, for the openers that try another way (RunStore::openReadOnly).
class StoreOpenError : public StoreError {
 public:
  enum class Reason { CannotOpen, OlderSchema };
  StoreOpenError(Reason reason, std::string place, const std::string& problem, bool usage)
      : StoreError(std::move(place), problem, usage), reason_(reason) {}
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};
void execSql(sqlite3* db, const std::string& place, const char* sql);
void requireWritable(bool readOnly, const std::string& place);
// runs.partition_units: a JSON array of each stage's [begin, end) units, "[[0,2],[2,6]]"; "" for
// no partition. Text that is not such an array reads as no partition.
std::string partitionText(const std::vector<std::pair<int, int>>& stageUnits);
std::vector<std::pair<int, int>> partitionFromText(const std::string& text);
// runs.stage_ranks: a JSON array of each stage's rank, "[0,1,1,0]"; "" for none. Text that is not
// such an array reads as none.
std::string stageRanksText(const std::vector<int>& ranks);
std::vector<int> stageRanksFromText(const std::string& text);
// runs.model_file: JSON {"path": ..., "size": N, "sha256": "..."}; "" for none (an empty path).
// Text that is not such an object (a store edited by hand) reads as none.
std::string modelFileText(const FileDigest& file);
FileDigest modelFileFromText(const std::string& text);

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
TableInfo readTables(sqlite3* db, const std::string& place);
int readVersion(sqlite3* db, const std::string& place);
std::string notOurStoreMessage(const TableInfo& t);
std::string newerVersionMessage(int version);

// Returns "" when the file may be a SQLite database (or is absent), else the reason it is not.
// Decided from stat() alone: POSIX advisory locks belong to the process, not to a descriptor, so
// opening and closing the file outside SQLite would drop every lock this process's connections
// hold on it; another process may then checkpoint and delete the WAL under a connection still
// open here (sqlite.org/howtocorrupt.html, 2.2). Nothing in the program opens a store file but
// SQLite.
std::string headerProblem(const std::string& path);

// Per table: a statement inserting kRowsPerInsert rows at once (far less per-row overhead in
// SQLite) and a single-row one for the remainder; prepared on first use, reused afterwards.
struct Inserter {
  std::unique_ptr<Stmt> many, one;
};

}  // namespace pm::store_detail

namespace pm {

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
  store_detail::Inserter insMetric, insStage, insTrace, insLog;

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

}  // namespace pm
