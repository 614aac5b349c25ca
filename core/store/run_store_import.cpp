// Importing another store's runs into this one (RunStore::importRuns).
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/store/run_store.h"
#include "core/store/store_internal.h"
#include "core/util/errors.h"

namespace pm {

using namespace store_detail;

namespace {

// The tables that hold a run's rows (by run_id).
const char* const kRowTables[] = {"metrics", "stage_metrics", "trace", "logs", "run_tags"};

// `other` must be a store of this schema version, and not this store (`self`) itself.
void checkImportable(const std::string& other, const std::string& self) {
  RunStore src(other, /*readOnly=*/true);  // missing, damaged or foreign files fail here, naming `other`
  const int v = src.schemaVersion();
  if (v != kStoreSchemaVersion)
    throw StoreError(other, "store schema version " + std::to_string(v) + ", this one has " + std::to_string(kStoreSchemaVersion) +
                                (v < kStoreSchemaVersion ? " (open it once with `pipemare --db FILE runs list` to upgrade it)" : ""),
                     true);
  std::error_code ec;
  if (std::filesystem::equivalent(other, self, ec)) throw StoreError(other, "cannot import a run store into itself", true);
}

// A table's columns in this schema as a quoted list, without `skip`.
std::string columnList(sqlite3* db, const std::string& place, const char* table, const char* skip) {
  std::string cols;
  Stmt q(db, place, (std::string("SELECT name FROM pragma_table_info('") + table + "')").c_str());
  while (q.step()) {
    const std::string c = q.text(0);
    if (c == skip) continue;
    cols += (cols.empty() ? "\"" : ", \"") + c + "\"";
  }
  return cols;
}

// The run of this store that run `id` of src was imported as before (same name, creation time,
// host and configuration), if any.
std::optional<int64_t> importedBefore(sqlite3* db, const std::string& place, int64_t id) {
  Stmt same(db, place,
            "SELECT m.id FROM main.runs m JOIN src.runs s ON s.id = ? WHERE m.name = s.name AND m.created_at = s.created_at "
            "AND m.host = s.host AND m.config_json = s.config_json ORDER BY m.id LIMIT 1");
  same.bindInt(1, id);
  if (!same.step()) return std::nullopt;
  return same.i64(0);
}

constexpr const char* kImportedWhile = "imported while ";

// Whether run `here` is a copy of src's run `id` made while that run was still going (the message
// copyRun gives it), and src's run has ended since.
bool endedSinceCopied(sqlite3* db, const std::string& place, int64_t here, int64_t id) {
  Stmt q(db, place,
         "SELECT 1 FROM main.runs m, src.runs s WHERE m.id = ? AND s.id = ? AND m.status = ? AND "
         "substr(m.status_message, 1, length(?)) = ? AND s.status NOT IN (?, ?)");
  q.bindInt(1, here).bindInt(2, id).bindText(3, toString(RunStatus::Interrupted)).bindText(4, kImportedWhile)
      .bindText(5, kImportedWhile).bindText(6, toString(RunStatus::Running)).bindText(7, toString(RunStatus::Created));
  return q.step();
}

// Run `fresh` here takes src's run `id` rows, in the source's order (a copy's old rows go first);
// a run still going there is recorded interrupted, its launcher not ours.
void copyRows(sqlite3* db, const std::string& place, int64_t id, int64_t fresh, const std::vector<std::string>& rowCols) {
  for (size_t t = 0; t < rowCols.size(); ++t) {
    Stmt clear(db, place, (std::string("DELETE FROM main.") + kRowTables[t] + " WHERE run_id = ?").c_str());
    clear.bindInt(1, fresh).run();
  }
  for (size_t t = 0; t < rowCols.size(); ++t) {
    const char* table = kRowTables[t];
    const std::string& cols = rowCols[t];
    Stmt rows(db, place, (std::string("INSERT INTO main.") + table + " (run_id, " + cols + ") SELECT ?, " + cols + " FROM src." +
                          table + " WHERE run_id = ? ORDER BY rowid").c_str());  // the source's order (tags: as given, not alphabetical)
    rows.bindInt(1, fresh).bindInt(2, id).run();
  }
  Stmt fix(db, place,
           "UPDATE main.runs SET launcher_pid = 0, status = CASE WHEN status IN (:running, :created) THEN :interrupted ELSE status END, "
           "status_message = CASE WHEN status IN (:running, :created) THEN :while || status ELSE status_message END "
           "WHERE id = :id");
  // Named parameters are numbered by first appearance: :running 1, :created 2, :interrupted 3, :while 4, :id 5.
  fix.bindText(1, toString(RunStatus::Running))
      .bindText(2, toString(RunStatus::Created))
      .bindText(3, toString(RunStatus::Interrupted))
      .bindText(4, kImportedWhile)
      .bindInt(5, fresh)
      .run();
}

// Copies run `id` of src into this store under a new id. Returns the new id.
int64_t copyRun(sqlite3* db, const std::string& place, int64_t id, const std::string& runCols,
                const std::vector<std::string>& rowCols) {
  Stmt ins(db, place, ("INSERT INTO main.runs (" + runCols + ") SELECT " + runCols + " FROM src.runs WHERE id = ?").c_str());
  ins.bindInt(1, id).run();
  const int64_t fresh = sqlite3_last_insert_rowid(db);
  copyRows(db, place, id, fresh, rowCols);
  return fresh;
}

// Run `here`, a copy of src's run `id` made while it was going, takes its fields and rows as they
// are now.
void refreshRun(sqlite3* db, const std::string& place, int64_t id, int64_t here, const std::string& runCols,
                const std::vector<std::string>& rowCols) {
  Stmt upd(db, place, ("UPDATE main.runs SET (" + runCols + ") = (SELECT " + runCols + " FROM src.runs WHERE id = ?) WHERE id = ?").c_str());
  upd.bindInt(1, id).bindInt(2, here).run();
  copyRows(db, place, id, here, rowCols);
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> RunStore::importRuns(const std::string& other,
                                                            std::vector<std::pair<int64_t, int64_t>>* alreadyHere,
                                                            std::vector<std::pair<int64_t, int64_t>>* refreshed) {
  requireWritable(readOnly_, path_);
  checkImportable(other, path_);
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
  const std::string runCols = columnList(db_, path_, "runs", "id");
  std::vector<std::string> rowCols;
  for (const char* table : kRowTables) rowCols.push_back(columnList(db_, path_, table, "run_id"));
  std::vector<std::pair<int64_t, int64_t>> ids;
  Transaction tx(db_, path_);
  std::vector<int64_t> old;
  {
    Stmt q(db_, path_, "SELECT id FROM src.runs ORDER BY id");
    while (q.step()) old.push_back(q.i64(0));
  }
  for (const int64_t id : old) {
    // A run this store already has (imported before) is not copied again.
    if (const auto here = importedBefore(db_, path_, id)) {
      if (endedSinceCopied(db_, path_, *here, id)) {
        refreshRun(db_, path_, id, *here, runCols, rowCols);
        if (refreshed) refreshed->emplace_back(id, *here);
      } else if (alreadyHere) {
        alreadyHere->emplace_back(id, *here);
      }
      continue;
    }
    ids.emplace_back(id, copyRun(db_, path_, id, runCols, rowCols));
  }
  // The imported runs' sweep definitions (a sweep id this store already knows keeps its own).
  Stmt sweeps(db_, path_,
              "INSERT OR IGNORE INTO main.sweeps (id, created_at, definition) SELECT id, created_at, definition FROM src.sweeps "
              "WHERE id IN (SELECT sweep_id FROM src.runs WHERE sweep_id <> '')");
  sweeps.run();
  tx.commit();
  return ids;
}

}  // namespace pm
