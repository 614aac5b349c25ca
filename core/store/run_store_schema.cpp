// The run store's schema: the historical version 1 and the migrations that lead from it to the
// current version.
#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "core/store/store_internal.h"

namespace pm {

using namespace store_detail;

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
// column is copied over in C++ after this DDL), and the indexes the queries use. Version 1's
// runs.tags column stays (SQLite cannot drop it cheaply) but is neither read nor written.
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

// Version 2 -> 3: the sweeps table, the grid and base experiment each `pipemare sweep` was
// started with (a JSON document: core/analysis/sweep_tags.h), so a sweep's points that never
// started can be shown and run later (`pipemare sweep --resume ID`).
const char* kMigrationV3 = R"SQL(
CREATE TABLE sweeps (
  id         TEXT PRIMARY KEY,
  created_at REAL NOT NULL DEFAULT 0,
  definition TEXT NOT NULL DEFAULT '{}'
);
)SQL";

// Version 3 -> 4: the run's partition (each stage's [begin, end) units as JSON, '' for none), the
// step a stopped run's checkpoint was taken after and the step a resumed run continued from
// (0 for none). Old runs get them from their log and status message (migrateRunFieldsFromText).
const char* kMigrationV4 = R"SQL(
ALTER TABLE runs ADD COLUMN partition_units TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN halt_step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN resume_step INTEGER NOT NULL DEFAULT 0;
)SQL";

// Version 4 -> 5: the TorchScript file a run's model is read from, as JSON
// {"path": ..., "size": N, "sha256": "..."} ('' for a zoo model). Old runs get '': their
// file's bytes at the time are not known.
const char* kMigrationV5 = R"SQL(
ALTER TABLE runs ADD COLUMN model_file TEXT NOT NULL DEFAULT '';
)SQL";

// Version 5 -> 6: what the engine that ran it was built on, as JSON {"torch": "2.11.0", "cuda":
// "13.0" ("" for none), "backends": ["gloo", "nccl"]} (the run_started event's `build`); '' for
// runs recorded before (the LibTorch was Debian's 1.13 then, CPU only). And the process that holds
// a sweep while it runs (its pid and host; 0 / '' when none), so that two `sweep --resume` of one
// sweep cannot both run its points.
const char* kMigrationV6 = R"SQL(
ALTER TABLE runs ADD COLUMN build TEXT NOT NULL DEFAULT '';
ALTER TABLE sweeps ADD COLUMN holder_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sweeps ADD COLUMN holder_host TEXT NOT NULL DEFAULT '';
)SQL";

// Version 6 -> 7: when the launcher process of a running run started (wall-clock seconds; 0 for
// runs recorded before), so that a pid reused by a later process is not taken for the launcher.
const char* kMigrationV7 = R"SQL(
ALTER TABLE runs ADD COLUMN launcher_started REAL NOT NULL DEFAULT 0;
)SQL";

// Version 7 -> 8: the rank each stage ran on, as a JSON array ("[0,1,1,0]": ZB-V's stages on two
// ranks); '' for no partition. Runs recorded before held one stage per rank: migrateStageRanks
// writes [0, 1, ..., P-1] for those with a partition.
const char* kMigrationV8 = R"SQL(
ALTER TABLE runs ADD COLUMN stage_ranks TEXT NOT NULL DEFAULT '';
)SQL";

// kMigrations[v - 2] leads to version v
const char* const kMigrations[] = {kMigrationV2, kMigrationV3, kMigrationV4, kMigrationV5, kMigrationV6, kMigrationV7, kMigrationV8};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kStoreSchemaVersion - 1, "one migration per version after 1");

// The first whole number after `marker` in `text`; 0 when absent or out of range.
int64_t numberAfter(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return 0;
  const char* p = text.c_str() + at + marker.size();
  if (*p < '0' || *p > '9') return 0;
  char* end = nullptr;
  const long long n = std::strtoll(p, &end, 10);
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

// Runs recorded before version 4 kept these facts only as text written for people, and this is
// the one place that reads that text: the partition from the run's first log line
// "partition (METHOD): [0,2) [2,6)" or "partition: [0,2) [2,6)"; the halt step from a stopped
// run's status message "stopped by request after step N (checkpoint written ...)"; the resume
// step from its latest log line "run ID resumed from its checkpoint after step N (...)".
void migrateRunFieldsFromText(sqlite3* db, const std::string& place) {
  static const std::regex range(R"(\[(\d+),(\d+)\))");
  std::vector<int64_t> runs;
  {
    Stmt q(db, place, "SELECT id FROM runs ORDER BY id");
    while (q.step()) runs.push_back(q.i64(0));
  }
  Stmt partitionLines(db, place, "SELECT message FROM logs WHERE run_id = ? AND message LIKE 'partition%' ORDER BY time, rowid");
  Stmt resumeLines(db, place,
                   "SELECT message FROM logs WHERE run_id = ? AND message LIKE '%resumed from its checkpoint after step %' "
                   "ORDER BY time DESC, rowid DESC LIMIT 1");
  Stmt stopped(db, place, "SELECT status_message FROM runs WHERE id = ? AND status = ?");
  Stmt set(db, place, "UPDATE runs SET partition_units = ?, halt_step = ?, resume_step = ? WHERE id = ?");
  for (const int64_t run : runs) {
    std::vector<std::pair<int, int>> part;
    partitionLines.reset();
    partitionLines.bindInt(1, run);
    while (part.empty() && partitionLines.step()) {
      const std::string line = partitionLines.text(0);
      if (line.rfind("partition", 0) != 0) continue;  // LIKE ignores case
      for (std::sregex_iterator it(line.begin(), line.end(), range), end; it != end; ++it) {
        const long b = std::strtol((*it)[1].str().c_str(), nullptr, 10), e = std::strtol((*it)[2].str().c_str(), nullptr, 10);
        if (b < 0 || e < b || e > 1000000) {
          part.clear();
          break;
        }
        part.emplace_back(static_cast<int>(b), static_cast<int>(e));
      }
    }
    partitionLines.reset();
    int64_t halt = 0;
    stopped.reset();
    stopped.bindInt(1, run).bindText(2, toString(RunStatus::Stopped));
    if (stopped.step()) {
      const std::string message = stopped.text(0);
      if (message.find("no checkpoint written") == std::string::npos) halt = numberAfter(message, "after step ");
    }
    stopped.reset();
    int64_t resume = 0;
    resumeLines.reset();
    resumeLines.bindInt(1, run);
    if (resumeLines.step()) resume = numberAfter(resumeLines.text(0), "resumed from its checkpoint after step ");
    resumeLines.reset();
    if (part.empty() && halt == 0 && resume == 0) continue;
    set.reset();
    set.bindText(1, partitionText(part)).bindInt(2, halt).bindInt(3, resume).bindInt(4, run).run();
  }
}

void migrateStageRanks(sqlite3* db, const std::string& place) {
  std::vector<std::pair<int64_t, size_t>> runs;
  {
    Stmt q(db, place, "SELECT id, partition_units FROM runs WHERE partition_units != '' ORDER BY id");
    while (q.step()) runs.emplace_back(q.i64(0), partitionFromText(q.text(1)).size());
  }
  Stmt set(db, place, "UPDATE runs SET stage_ranks = ? WHERE id = ?");
  for (const auto& [run, stages] : runs) {
    if (stages == 0) continue;
    std::vector<int> ranks;
    for (size_t s = 0; s < stages; ++s) ranks.push_back(static_cast<int>(s));
    set.reset();
    set.bindText(1, stageRanksText(ranks)).bindInt(2, run).run();
  }
}

}  // namespace

std::string storeSchemaAt(int version) {
  if (version < 1 || version > kStoreSchemaVersion)
    throw std::invalid_argument("storeSchemaAt: no schema version " + std::to_string(version));
  std::string ddl = storeSchemaV1();
  for (int v = 2; v <= version; ++v) ddl += kMigrations[v - 2];
  ddl += "DELETE FROM schema_version;\nINSERT INTO schema_version (version) VALUES (" + std::to_string(version) + ");\n";
  return ddl;
}

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
  if (version < 3) {
    exec(kMigrationV3);
    version = 3;
  }
  if (version < 4) {
    exec(kMigrationV4);
    migrateRunFieldsFromText(db_, path_);
    version = 4;
  }
  if (version < 5) {
    exec(kMigrationV5);
    version = 5;
  }
  if (version < 6) {
    exec(kMigrationV6);
    version = 6;
  }
  if (version < 7) {
    exec(kMigrationV7);
    version = 7;
  }
  if (version < 8) {
    exec(kMigrationV8);
    migrateStageRanks(db_, path_);
    version = 8;
  }

  Stmt del(db_, path_, "DELETE FROM schema_version");
  del.run();
  Stmt set(db_, path_, "INSERT INTO schema_version (version) VALUES (?)");
  set.bindInt(1, version).run();
  tx.commit();
}

int RunStore::schemaVersion() const { return readVersion(db_, path_); }

}  // namespace pm
