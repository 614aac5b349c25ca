#include "core/store/run_store.h"
#include "core/store/run_checkpoints.h"

#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/store/store_internal.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/system_info.h"

// The run store: opening a store, and its runs. The SQLite helpers are in store_sqlite.cpp, the
// schema and its migrations in run_store_schema.cpp, the rows of a run in run_store_rows.cpp.
namespace pm {

using namespace store_detail;

namespace {

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
    auto part = pipe->find("partition");
    if (part != pipe->end() && part->is_object()) {
      auto m = part->find("method");
      if (m != part->end() && m->is_string()) r.partition_method = m->get<std::string>();
    }
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
    " ORDER BY m.step DESC, m.rowid DESC LIMIT 1), "
    "r.partition_units, r.halt_step, r.resume_step";

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
  r.partition = partitionFromText(q.text(15));
  r.halt_step = q.i64(16);
  r.resume_step = q.i64(17);
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

std::string likeEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    if (c == '\\' || c == '%' || c == '_') out += '\\';
    out += c;
  }
  return out;
}

void requireChanged(sqlite3* db, const std::string& place, int64_t run) {
  if (sqlite3_changes(db) == 0) throw StoreError(place, "run " + std::to_string(run) + " does not exist");
}

}  // namespace

namespace store_detail {

std::string partitionText(const std::vector<std::pair<int, int>>& stageUnits) {
  if (stageUnits.empty()) return "";
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [begin, end] : stageUnits) j.push_back(nlohmann::json::array({begin, end}));
  return j.dump();
}

std::vector<std::pair<int, int>> partitionFromText(const std::string& text) {
  std::vector<std::pair<int, int>> out;
  if (text.empty()) return out;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return out;
  for (const auto& s : j) {
    if (!s.is_array() || s.size() != 2 || !s[0].is_number_integer() || !s[1].is_number_integer()) return {};
    out.emplace_back(configInt(s[0]), configInt(s[1]));
  }
  return out;
}

}  // namespace store_detail

bool isTerminalStatus(const std::string& s) {
  const auto st = parseRunStatus(s);
  return st && isTerminal(*st);
}

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
  } catch (...) {
    pending_.reset();
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
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

// ------------------------------------------------------------------------------------------
// runs

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
  Stmt q(db_, path_, "UPDATE runs SET status = ?, started_at = ?, launcher_pid = ? WHERE id = ?");
  q.bindText(1, toString(RunStatus::Running)).bindDouble(2, wallClockSeconds()).bindInt(3, launcherPid).bindInt(4, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::markResumed(int64_t run, int64_t launcherPid, int64_t resumeStep) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_,
         "UPDATE runs SET status = ?, status_message = '', finished_at = 0, halt_step = 0, resume_step = ?, launcher_pid = ? "
         "WHERE id = ?");
  q.bindText(1, toString(RunStatus::Running)).bindInt(2, resumeStep).bindInt(3, launcherPid).bindInt(4, run).run();
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

void RunStore::deleteTraceFrom(int64_t run, int stage, double from) {
  requireWritable(readOnly_, path_);
  flush();
  Stmt q(db_, path_, "DELETE FROM trace WHERE run_id = ? AND stage = ? AND start >= ?");
  q.bindInt(1, run).bindInt(2, stage).bindDouble(3, from).run();
}

void RunStore::setStatus(int64_t run, const std::string& status, const std::string& message) {
  const auto st = parseRunStatus(status);
  if (!st) {
    requireWritable(readOnly_, path_);
    throw StoreError(path_, "unknown run status '" + status +
                                "' (expected created, running, finished, stopped, failed, diverged or interrupted)");
  }
  setStatus(run, *st, message);
}

void RunStore::setStatus(int64_t run, RunStatus status, const std::string& message) {
  requireWritable(readOnly_, path_);
  // Rows recorded before the status change become visible with it.
  flush();
  if (isTerminal(status)) {
    Stmt q(db_, path_, "UPDATE runs SET status = ?, status_message = ?, finished_at = ? WHERE id = ?");
    q.bindText(1, toString(status)).bindText(2, message).bindDouble(3, wallClockSeconds()).bindInt(4, run).run();
  } else {
    Stmt q(db_, path_, "UPDATE runs SET status = ?, status_message = ? WHERE id = ?");
    q.bindText(1, toString(status)).bindText(2, message).bindInt(3, run).run();
  }
  requireChanged(db_, path_, run);
}

void RunStore::setPartition(int64_t run, const std::vector<std::pair<int, int>>& stageUnits) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET partition_units = ? WHERE id = ?");
  q.bindText(1, partitionText(stageUnits)).bindInt(2, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::setHaltStep(int64_t run, int64_t step) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET halt_step = ? WHERE id = ?");
  q.bindInt(1, step).bindInt(2, run).run();
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
  removeCheckpoints(path_, run);  // and its checkpoints, which nothing can resume any more
}

std::vector<std::pair<int64_t, int64_t>> RunStore::importRuns(const std::string& other,
                                                            std::vector<std::pair<int64_t, int64_t>>* alreadyHere) {
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
    // A run this store already has (imported before: same name, creation time, host and
    // configuration) is not copied again.
    Stmt same(db_, path_,
              "SELECT m.id FROM main.runs m JOIN src.runs s ON s.id = ? WHERE m.name = s.name AND m.created_at = s.created_at "
              "AND m.host = s.host AND m.config_json = s.config_json ORDER BY m.id LIMIT 1");
    same.bindInt(1, id);
    if (same.step()) {
      if (alreadyHere) alreadyHere->emplace_back(id, same.i64(0));
      continue;
    }
    Stmt ins(db_, path_, ("INSERT INTO main.runs (" + runCols + ") SELECT " + runCols + " FROM src.runs WHERE id = ?").c_str());
    ins.bindInt(1, id).run();
    const int64_t fresh = sqlite3_last_insert_rowid(db_);
    for (size_t t = 0; t < rowCols.size(); ++t) {
      const char* table = kRowTables[t];
      const std::string& cols = rowCols[t];
      Stmt rows(db_, path_, (std::string("INSERT INTO main.") + table + " (run_id, " + cols + ") SELECT ?, " + cols + " FROM src." +
                             table + " WHERE run_id = ? ORDER BY rowid").c_str());  // the source's order (tags: as given, not alphabetical)
      rows.bindInt(1, fresh).bindInt(2, id).run();
    }
    Stmt fix(db_, path_,
             "UPDATE main.runs SET launcher_pid = 0, status = CASE WHEN status IN (:running, :created) THEN :interrupted ELSE status END, "
             "status_message = CASE WHEN status IN (:running, :created) THEN 'imported while ' || status ELSE status_message END "
             "WHERE id = :id");
    // Named parameters are numbered by first appearance: :running 1, :created 2, :interrupted 3, :id 4.
    fix.bindText(1, toString(RunStatus::Running))
        .bindText(2, toString(RunStatus::Created))
        .bindText(3, toString(RunStatus::Interrupted))
        .bindInt(4, fresh)
        .run();
    ids.emplace_back(id, fresh);
  }
  // The imported runs' sweep definitions (a sweep id this store already knows keeps its own).
  Stmt sweeps(db_, path_,
              "INSERT OR IGNORE INTO main.sweeps (id, created_at, definition) SELECT id, created_at, definition FROM src.sweeps "
              "WHERE id IN (SELECT sweep_id FROM src.runs WHERE sweep_id <> '')");
  sweeps.run();
  tx.commit();
  return ids;
}

void RunStore::recordSweep(const std::string& id, const std::string& definitionJson) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "INSERT OR IGNORE INTO sweeps (id, created_at, definition) VALUES (?, ?, ?)");
  q.bindText(1, id).bindDouble(2, wallClockSeconds()).bindText(3, definitionJson).run();
}

std::optional<std::string> RunStore::sweepDefinition(const std::string& id) const {
  Stmt q(db_, path_, "SELECT definition FROM sweeps WHERE id = ?");
  q.bindText(1, id);
  if (!q.step()) return std::nullopt;
  return q.text(0);
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
    Stmt q(db_, path_, "SELECT id, launcher_pid FROM runs WHERE status = ? AND host = ?");
    q.bindText(1, toString(RunStatus::Running)).bindText(2, hostName());
    while (q.step()) candidates.emplace_back(q.i64(0), q.i64(1));
  }
  int changed = 0;
  for (const auto& [run, pid] : candidates) {
    if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to signal)
    Stmt u(db_, path_,
           "UPDATE runs SET status = ?, status_message = ?, finished_at = ? "
           "WHERE id = ? AND status = ? AND launcher_pid = ?");
    u.bindText(1, toString(RunStatus::Interrupted))
        .bindText(2, "launcher process " + std::to_string(pid) + " is gone")
        .bindDouble(3, wallClockSeconds())
        .bindInt(4, run)
        .bindText(5, toString(RunStatus::Running))
        .bindInt(6, pid)
        .run();
    changed += sqlite3_changes(db_);
  }
  return changed;
}

}  // namespace pm
