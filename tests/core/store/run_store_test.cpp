// Tests for the SQLite run store: persistence, concurrency (WAL), migration from versions 1, 3 and 4,
// verbatim strings, refusal of foreign / newer files, filters, cascades, dead launchers,
// batching and integrity.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/store/run_checkpoints.h"
#include "core/store/run_store.h"
#include "core/util/system_info.h"
#include "core/util/errors.h"
#include "tests/support/test_support.h"

using namespace pm;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Raw sqlite3 helpers (for building old / foreign files and checking the store from outside).
struct RawDb {
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("open failed");
  }
  ~RawDb() { sqlite3_close(db); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(msg + " in: " + sql);
    }
  }
  sqlite3* db = nullptr;
};

// All rows of a query, each row's columns joined by '|'.
std::vector<std::string> queryRows(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::string> rows;
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      if (c) row += "|";
      const unsigned char* t = sqlite3_column_text(st, c);
      row += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    rows.push_back(row);
  }
  sqlite3_finalize(st);
  return rows;
}

std::string queryOne(sqlite3* db, const std::string& sql) {
  auto rows = queryRows(db, sql);
  return rows.empty() ? std::string("<no rows>") : rows.front();
}

std::vector<int64_t> ids(const std::vector<RunRecord>& runs) {
  std::vector<int64_t> out;
  for (const auto& r : runs) out.push_back(r.id);
  return out;
}

const char* kConfig = R"({"model":{"name":"mlp"},"pipeline":{"schedule":"pipemare","stages":4,"microbatches":8}})";

// A fresh folder per test, removed afterwards.
class RunStoreTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name) const { return tmp_.file(name); }
  pm::test::TempDir tmp_;
};

}  // namespace

TEST_F(RunStoreTest, CreateAndReopenPersistsEverything) {
  const std::string db = file("runs.db");
  int64_t run = 0;
  double before = wallClockSeconds();
  {
    RunStore s(db);
    EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
    run = s.createRun("first run", kConfig, {"baseline", "cpu"}, "some notes", "sweep-1");
    EXPECT_GT(run, 0);
    // Out of step order on purpose: final_loss is the value at the highest step.
    s.appendMetric(run, "train/loss", 5, 10.5, 0.5);
    s.appendMetric(run, "train/loss", 1, 10.1, 0.9);
    s.appendMetric(run, "train/loss", 3, 10.3, 0.7);
    s.appendStageMetric(run, 1, 3, "grad_norm", 2.5);
    s.appendTrace(run, {0, "F", 2, 0.25, 0.5});
    s.appendLog(run, 1.5, "info", "hello");
    s.flush();
    EXPECT_EQ(s.pendingRows(), 0u);
  }
  RunStore s(db);
  auto r = s.getRun(run);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "first run");
  EXPECT_EQ(r->status, pm::RunStatus::Created);
  EXPECT_EQ(r->config_json, kConfig);
  EXPECT_EQ(r->notes, "some notes");
  EXPECT_EQ(r->tags, (std::vector<std::string>{"baseline", "cpu"}));
  EXPECT_EQ(r->sweep_id, "sweep-1");
  EXPECT_EQ(r->host, hostName());
  EXPECT_EQ(r->revision, projectRevision());
  EXPECT_GE(r->created_at, before - 1);
  EXPECT_LE(r->created_at, wallClockSeconds() + 1);
  EXPECT_EQ(r->started_at, 0);
  EXPECT_EQ(r->finished_at, 0);
  EXPECT_EQ(r->schedule, "pipemare");
  EXPECT_EQ(r->model, "mlp");
  EXPECT_EQ(r->stages, 4);
  EXPECT_EQ(r->microbatches, 8);
  EXPECT_DOUBLE_EQ(r->final_loss, 0.5);
  EXPECT_TRUE(std::isnan(r->final_accuracy));

  auto loss = s.loadMetric(run, "train/loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[0].step, 1);
  EXPECT_EQ(loss[1].step, 3);
  EXPECT_EQ(loss[2].step, 5);
  EXPECT_DOUBLE_EQ(loss[0].wall_time, 10.1);
  EXPECT_DOUBLE_EQ(loss[2].value, 0.5);
  EXPECT_EQ(s.metricKeys(run), (std::vector<std::string>{"train/loss"}));
  EXPECT_EQ(s.stageMetricKeys(run), (std::vector<std::string>{"grad_norm"}));
  auto sm = s.loadStageMetric(run, "grad_norm");
  ASSERT_EQ(sm.size(), 1u);
  EXPECT_EQ(sm[0].stage, 1);
  EXPECT_EQ(sm[0].step, 3);
  EXPECT_DOUBLE_EQ(sm[0].value, 2.5);
  auto tr = s.loadTrace(run);
  ASSERT_EQ(tr.size(), 1u);
  EXPECT_EQ(tr[0].action, "F");
  EXPECT_EQ(tr[0].microbatch, 2);
  EXPECT_DOUBLE_EQ(tr[0].end, 0.5);
  auto lg = s.loadLog(run);
  ASSERT_EQ(lg.size(), 1u);
  EXPECT_EQ(lg[0].level, "info");
  EXPECT_EQ(lg[0].message, "hello");
  EXPECT_FALSE(s.getRun(run + 1000).has_value());
}

TEST_F(RunStoreTest, DestructorFlushesBufferedRows) {
  const std::string db = file("runs.db");
  int64_t run = 0;
  {
    RunStore s(db);
    run = s.createRun("r", "{}");
    for (int i = 0; i < 10; ++i) s.appendMetric(run, "train/loss", i, 0, i);
    EXPECT_EQ(s.pendingRows(), 10u);
  }
  RunStore s(db);
  EXPECT_EQ(s.countRows("metrics", run), 10);
}

TEST_F(RunStoreTest, MetricValuesNanInfinityAndHeadlineMetrics) {
  RunStore s(file("runs.db"));
  int64_t run = s.createRun("r", "not json at all");
  s.appendMetric(run, "train/loss", 0, 0, 1.0);
  s.appendMetric(run, "train/loss", 1, 1, std::numeric_limits<double>::quiet_NaN());
  s.appendMetric(run, "eval/accuracy", 0, 0, 0.25);
  s.appendMetric(run, "eval/accuracy", 2, 2, 0.75);
  s.appendMetric(run, "big", 0, 0, std::numeric_limits<double>::infinity());
  s.flush();
  auto loss = s.loadMetric(run, "train/loss");
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_TRUE(std::isnan(loss[1].value));
  EXPECT_TRUE(std::isinf(s.loadMetric(run, "big").at(0).value));
  auto r = s.getRun(run);
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::isnan(r->final_loss));  // the last loss was NaN (diverged)
  EXPECT_DOUBLE_EQ(r->final_accuracy, 0.75);
  // An unparsable config is tolerated.
  EXPECT_EQ(r->schedule, "");
  EXPECT_EQ(r->stages, 0);
  EXPECT_EQ(s.metricKeys(run), (std::vector<std::string>{"big", "eval/accuracy", "train/loss"}));
}

TEST_F(RunStoreTest, ReaderSeesBatchesWhileAnotherThreadWrites) {
  const std::string db = file("runs.db");
  int64_t run = 0;
  {
    RunStore s(db);
    run = s.createRun("concurrent", "{}");
  }
  constexpr int kBatches = 20;
  constexpr int kBatch = 1000;
  std::atomic<int64_t> seen{0};
  std::atomic<bool> failed{false};
  std::string writerError;
  std::thread writer([&] {
    try {
      RunStore w(db);
      for (int b = 0; b < kBatches; ++b) {
        for (int i = 0; i < kBatch; ++i) w.appendMetric(run, "train/loss", int64_t(b) * kBatch + i, 0.0, 1.0 / (1 + i));
        w.flush();
        // Let the reader observe this batch before writing the next one (bounded wait).
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (seen.load() < int64_t(b + 1) * kBatch && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(1ms);
      }
    } catch (const std::exception& e) {
      writerError = e.what();
      failed = true;
    }
  });
  RunStore reader(db);
  int64_t last = 0;
  int observed = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (last < int64_t(kBatches) * kBatch && std::chrono::steady_clock::now() < deadline && !failed) {
    int64_t n = reader.countRows("metrics", run);
    EXPECT_GE(n, last);
    EXPECT_EQ(n % kBatch, 0) << "a flush is one transaction: never a partial batch";
    if (n != last) ++observed;
    last = n;
    seen = n;
  }
  writer.join();
  EXPECT_EQ(writerError, "");
  EXPECT_EQ(last, int64_t(kBatches) * kBatch);
  EXPECT_EQ(observed, kBatches);  // every batch became visible on its own
  EXPECT_EQ(reader.loadMetric(run, "train/loss").size(), size_t(kBatches) * kBatch);
}

TEST_F(RunStoreTest, ReaderIsNotBlockedByAnOpenWriteTransaction) {
  const std::string db = file("runs.db");
  RunStore w(db);
  int64_t run = w.createRun("r", "{}");
  for (int i = 0; i < 10; ++i) w.appendMetric(run, "train/loss", i, 0, 1);
  w.flush();
  RunStore r(db);
  ASSERT_EQ(sqlite3_exec(w.handle(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::string ins = "INSERT INTO metrics (run_id, key, step, wall_time, value) VALUES (" + std::to_string(run) +
                    ", 'train/loss', 100, 0, 1)";
  ASSERT_EQ(sqlite3_exec(w.handle(), ins.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(r.countRows("metrics", run), 10);  // the committed snapshot, without waiting
  EXPECT_EQ(r.loadMetric(run, "train/loss").size(), 10u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_EQ(sqlite3_exec(w.handle(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(r.countRows("metrics", run), 11);
}

TEST_F(RunStoreTest, MigratesVersion1Store) {
  const std::string db = file("old.db");
  {
    RawDb raw(db);
    raw.exec(storeSchemaV1());
    raw.exec("DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (1);");
    raw.exec(R"SQL(
      INSERT INTO runs (name, created_at, started_at, finished_at, status, config_json, host, revision, notes, tags)
      VALUES ('old run', 1000, 1001, 1100, 'finished',
              '{"pipeline":{"schedule":"gpipe","stages":2,"microbatches":4},"model":{"name":"tiny"}}',
              'oldhost', 'abc123', 'it''s old', '["baseline", "it''s \"quoted\"", "ünï"]');
      INSERT INTO runs (name, created_at, status, tags) VALUES ('untagged', 1200, 'failed', '[]');
      INSERT INTO metrics (run_id, key, step, wall_time, value) VALUES (1, 'train/loss', 0, 1.0, 3.0);
      INSERT INTO metrics (run_id, key, step, wall_time, value) VALUES (1, 'train/loss', 2, 3.0, 1.0);
      INSERT INTO metrics (run_id, key, step, wall_time, value) VALUES (1, 'train/loss', 1, 2.0, 2.0);
      INSERT INTO logs (run_id, time, level, message) VALUES (1, 0.5, 'info', 'started');
    )SQL");
  }
  const std::string v1Bytes = pm::test::readFile(db);
  // Read-only never migrates: refused, file untouched.
  try {
    RunStore ro(db, true);
    FAIL() << "read-only open of a version-1 store should be refused";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("version 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pm::test::readFile(db), v1Bytes);

  {
    RunStore s(db);
    EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
    auto r = s.getRun(1);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->name, "old run");
    EXPECT_EQ(r->status, pm::RunStatus::Finished);
    EXPECT_EQ(r->notes, "it's old");
    EXPECT_EQ(r->tags, (std::vector<std::string>{"baseline", "it's \"quoted\"", "ünï"}));
    EXPECT_EQ(r->sweep_id, "");
    EXPECT_EQ(r->launcher_pid, 0);
    EXPECT_EQ(r->status_message, "");
    EXPECT_TRUE(r->partition.empty()) << "its log names no partition";
    EXPECT_EQ(r->halt_step, 0);
    EXPECT_EQ(r->resume_step, 0);
    EXPECT_EQ(r->schedule, "gpipe");
    EXPECT_EQ(r->model, "tiny");
    EXPECT_EQ(r->stages, 2);
    EXPECT_DOUBLE_EQ(r->finished_at, 1100);
    EXPECT_DOUBLE_EQ(r->final_loss, 1.0);
    auto loss = s.loadMetric(1, "train/loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_EQ(loss[1].step, 1);
    EXPECT_EQ(s.loadLog(1).size(), 1u);
    EXPECT_EQ(ids(s.listRuns({"", "baseline", "", ""})), (std::vector<int64_t>{1}));
    EXPECT_EQ(ids(s.listRuns()), (std::vector<int64_t>{2, 1}));
    EXPECT_TRUE(s.getRun(2)->tags.empty());
    // New runs and tags work on the migrated store.
    int64_t n = s.createRun("new", "{}", {"baseline"}, "", "sw");
    EXPECT_EQ(ids(s.listRuns({"", "baseline", "", ""})), (std::vector<int64_t>{n, 1}));
    EXPECT_EQ(queryOne(s.handle(), "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(queryOne(s.handle(), "SELECT COUNT(*) FROM schema_version"), "1");
  }
  // Reopening is a no-op, and read-only now works.
  {
    RunStore s(db);
    EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
    RunStore ro(db, true);
    EXPECT_EQ(ro.listRuns().size(), 3u);
  }
  // A migrated store has exactly the schema of a fresh one (one migration path).
  RunStore fresh(file("fresh.db"));
  RunStore migrated(db);
  const char* schemaSql = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name";
  EXPECT_EQ(queryRows(fresh.handle(), schemaSql), queryRows(migrated.handle(), schemaSql));
  auto indexes = queryRows(fresh.handle(), "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL");
  EXPECT_GE(indexes.size(), 5u);
}

TEST_F(RunStoreTest, StringsAreStoredVerbatim) {
  RunStore s(file("runs.db"));
  const std::vector<std::string> names = {
      "it's \"quoted\"",
      "x'); DROP TABLE runs;--",
      "Ünïcødé 训练 🚀",
      "line1\nline2\ttab",
      "100%_done",
      "back\\slash",
  };
  std::vector<int64_t> runIds;
  for (const auto& n : names) runIds.push_back(s.createRun(n, "{\"note\": \"" + n + "\"}", {n, "t"}, "notes: " + n, n));
  for (size_t i = 0; i < names.size(); ++i) {
    auto r = s.getRun(runIds[i]);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->name, names[i]);
    EXPECT_EQ(r->notes, "notes: " + names[i]);
    EXPECT_EQ(r->sweep_id, names[i]);
    EXPECT_EQ(r->tags, (std::vector<std::string>{names[i], "t"}));
  }
  // Nothing was executed: the runs table is still there with all rows.
  EXPECT_EQ(queryOne(s.handle(), "SELECT COUNT(*) FROM sqlite_master WHERE name = 'runs'"), "1");
  EXPECT_EQ(s.listRuns().size(), names.size());

  // Tag, sweep and text filters with the same strings.
  EXPECT_EQ(ids(s.listRuns({"", names[1], "", ""})), (std::vector<int64_t>{runIds[1]}));
  EXPECT_EQ(ids(s.listRuns({"", "", names[2], ""})), (std::vector<int64_t>{runIds[2]}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "DROP TABLE"})), (std::vector<int64_t>{runIds[1]}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "训练"})), (std::vector<int64_t>{runIds[2]}));
  // LIKE wildcards in the text are literal.
  EXPECT_EQ(ids(s.listRuns({"", "", "", "%_"})), (std::vector<int64_t>{runIds[4]}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "_"})), (std::vector<int64_t>{runIds[4]}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "%"})), (std::vector<int64_t>{runIds[4]}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "\\"})), (std::vector<int64_t>{runIds[5]}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "'"})), (std::vector<int64_t>{runIds[1], runIds[0]}));

  // Metric keys, log messages and trace actions too.
  const std::string key = names[1];
  s.appendMetric(runIds[0], key, 0, 0, 1.0);
  s.appendLog(runIds[0], 0, "info", names[2] + "\n" + names[0]);
  s.appendTrace(runIds[0], {0, names[3], 0, 0, 1});
  s.appendStageMetric(runIds[0], 0, 0, names[2], 3.0);
  s.flush();
  EXPECT_EQ(s.metricKeys(runIds[0]), (std::vector<std::string>{key}));
  EXPECT_EQ(s.loadMetric(runIds[0], key).size(), 1u);
  EXPECT_EQ(s.loadLog(runIds[0]).at(0).message, names[2] + "\n" + names[0]);
  EXPECT_EQ(s.loadTrace(runIds[0]).at(0).action, names[3]);
  EXPECT_EQ(s.stageMetricKeys(runIds[0]), (std::vector<std::string>{names[2]}));

  s.setNotes(runIds[1], names[1] + names[2]);
  EXPECT_EQ(s.getRun(runIds[1])->notes, names[1] + names[2]);
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA integrity_check"), "ok");
}

TEST_F(RunStoreTest, FileThatIsNotADatabaseIsRefusedAndUntouched) {
  const std::string path = file("notes.txt");
  std::string content;
  for (int i = 0; i < 100; ++i) content += "this is a plain text file, line " + std::to_string(i) + "\n";
  pm::test::writeFile(path, content);
  for (bool readOnly : {false, true}) {
    try {
      RunStore s(path, readOnly);
      FAIL() << "opening a text file as a store should fail";
    } catch (const StoreError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("not a SQLite database"), std::string::npos) << what;
      EXPECT_EQ(e.place(), path);
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      EXPECT_EQ(e.exitCode(), 2);
    }
    EXPECT_EQ(pm::test::readFile(path), content);
  }
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-journal"));

  // A short file is refused as well.
  const std::string tiny = file("tiny.db");
  pm::test::writeFile(tiny, "SQLite");
  EXPECT_THROW(RunStore s(tiny), StoreError);
  EXPECT_EQ(pm::test::readFile(tiny), "SQLite");
}

TEST_F(RunStoreTest, NewerSchemaVersionIsRefusedAndUntouched) {
  const std::string db = file("future.db");
  {
    RunStore s(db);
    s.createRun("from the future", "{}");
  }
  {
    RawDb raw(db);
    raw.exec("UPDATE schema_version SET version = " + std::to_string(kStoreSchemaVersion + 1));
  }
  const std::string bytes = pm::test::readFile(db);
  ASSERT_FALSE(bytes.empty());
  for (bool readOnly : {false, true}) {
    try {
      RunStore s(db, readOnly);
      FAIL() << "a store from a newer version should be refused";
    } catch (const StoreError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(db), std::string::npos) << what;
      EXPECT_NE(what.find("version " + std::to_string(kStoreSchemaVersion + 1)), std::string::npos) << what;
      EXPECT_NE(what.find("version " + std::to_string(kStoreSchemaVersion)), std::string::npos) << what;
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
    }
    EXPECT_EQ(pm::test::readFile(db), bytes);
  }
  RawDb raw(db);
  EXPECT_EQ(queryOne(raw.db, "SELECT version FROM schema_version"), std::to_string(kStoreSchemaVersion + 1));
}

TEST_F(RunStoreTest, ForeignSqliteDatabaseIsRefusedAndUntouched) {
  const std::string db = file("other.db");
  {
    RawDb raw(db);
    raw.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('alice');");
  }
  const std::string bytes = pm::test::readFile(db);
  try {
    RunStore s(db);
    FAIL() << "a foreign database should be refused";
  } catch (const StoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("not a PipeMare run store"), std::string::npos) << what;
    EXPECT_NE(what.find("users"), std::string::npos) << what;
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
  EXPECT_EQ(pm::test::readFile(db), bytes);
  RawDb raw(db);
  EXPECT_EQ(queryOne(raw.db, "SELECT COUNT(*) FROM sqlite_master"), "1");
}

TEST_F(RunStoreTest, ReadOnlyModeReadsAndNeverWrites) {
  const std::string db = file("runs.db");
  int64_t run = 0;
  {
    RunStore s(db);
    run = s.createRun("r", kConfig);
    s.appendMetric(run, "train/loss", 0, 0, 1);
  }
  RunStore ro(db, true);
  EXPECT_EQ(ro.schemaVersion(), kStoreSchemaVersion);
  EXPECT_EQ(ro.getRun(run)->name, "r");
  EXPECT_EQ(ro.loadMetric(run, "train/loss").size(), 1u);
  EXPECT_THROW(ro.createRun("x", "{}"), StoreError);
  EXPECT_THROW(ro.appendMetric(run, "k", 0, 0, 0), StoreError);
  EXPECT_THROW(ro.setStatus(run, "finished"), StoreError);
  EXPECT_EQ(ro.markDeadRunsInterrupted(), 0);
  EXPECT_EQ(ro.pendingRows(), 0u);

  const std::string missing = file("missing/runs.db");
  EXPECT_THROW(RunStore s(missing, true), StoreError);
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(file("missing")));
}

TEST_F(RunStoreTest, NewStoreCreatesParentAndHonoursUmask) {
  // Only the last missing folder is made: a mistyped path must not become a new store.
  EXPECT_THROW(RunStore(file("x/y/runs.db")), StoreError);
  EXPECT_FALSE(fs::exists(file("x")));
  const std::string db = file("a/runs.db");
  mode_t old = umask(022);
  {
    RunStore s(db);
    s.createRun("r", "{}");
  }
  umask(old);
  struct stat st {};
  ASSERT_EQ(stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(st.st_mode & S_IWOTH, 0u);
  ASSERT_EQ(stat(file("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(RunStoreTest, StatusTransitions) {
  RunStore s(file("runs.db"));
  int64_t run = s.createRun("r", "{}");
  EXPECT_EQ(s.getRun(run)->status, pm::RunStatus::Created);
  s.markRunning(run, 4242);
  auto r = s.getRun(run);
  EXPECT_EQ(r->status, pm::RunStatus::Running);
  EXPECT_GT(r->started_at, 0);
  EXPECT_EQ(r->finished_at, 0);
  EXPECT_EQ(r->launcher_pid, 4242);
  s.appendMetric(run, "train/loss", 0, 0, 1);
  s.setStatus(run, "diverged", "loss became NaN at step 12");
  EXPECT_EQ(s.pendingRows(), 0u);  // a status change makes buffered rows visible
  r = s.getRun(run);
  EXPECT_EQ(r->status, pm::RunStatus::Diverged);
  EXPECT_EQ(r->status_message, "loss became NaN at step 12");
  EXPECT_GT(r->finished_at, 0);
  EXPECT_DOUBLE_EQ(r->final_loss, 1);

  int64_t other = s.createRun("o", "{}");
  s.setStatus(other, "running");
  EXPECT_EQ(s.getRun(other)->finished_at, 0);
  for (const char* terminal : {"finished", "stopped", "failed", "interrupted"}) {
    int64_t t = s.createRun(terminal, "{}");
    s.setStatus(t, terminal);
    EXPECT_GT(s.getRun(t)->finished_at, 0) << terminal;
  }
  EXPECT_THROW(s.setStatus(run, "bogus"), StoreError);
  EXPECT_THROW(s.setStatus(run + 1000, "finished"), StoreError);
  EXPECT_THROW(s.markRunning(run + 1000, 1), StoreError);
  EXPECT_THROW(s.setNotes(run + 1000, "x"), StoreError);
  EXPECT_THROW(s.setTags(run + 1000, {"x"}), StoreError);
}

TEST_F(RunStoreTest, ListRunsFilters) {
  RunStore s(file("runs.db"));
  int64_t a = s.createRun("run-a", kConfig, {"x", "y"}, "", "s1");
  int64_t b = s.createRun("run-b", "{}", {"y"}, "", "s1");
  int64_t c = s.createRun("other", "{}", {}, "", "");
  s.markRunning(a, getpid());
  s.setStatus(b, "finished");
  s.setStatus(c, "failed", "boom");

  EXPECT_EQ(ids(s.listRuns()), (std::vector<int64_t>{c, b, a}));  // newest first
  EXPECT_EQ(ids(s.listRuns({"finished", "", "", ""})), (std::vector<int64_t>{b}));
  EXPECT_EQ(ids(s.listRuns({"running", "", "", ""})), (std::vector<int64_t>{a}));
  EXPECT_EQ(ids(s.listRuns({"", "y", "", ""})), (std::vector<int64_t>{b, a}));
  EXPECT_EQ(ids(s.listRuns({"", "x", "", ""})), (std::vector<int64_t>{a}));
  EXPECT_EQ(ids(s.listRuns({"", "", "s1", ""})), (std::vector<int64_t>{b, a}));
  EXPECT_EQ(ids(s.listRuns({"", "", "", "RUN"})), (std::vector<int64_t>{b, a}));  // LIKE: ASCII case-insensitive
  EXPECT_EQ(ids(s.listRuns({"running", "y", "s1", "run"})), (std::vector<int64_t>{a}));
  EXPECT_TRUE(s.listRuns({"stopped", "", "", ""}).empty());
  EXPECT_TRUE(s.listRuns({"", "nope", "", ""}).empty());

  auto listed = s.listRuns({"", "x", "", ""});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].schedule, "pipemare");
  EXPECT_EQ(listed[0].tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(s.listRuns({"failed", "", "", ""}).at(0).status_message, "boom");

  s.setTags(a, {"z", "z", ""});
  EXPECT_TRUE(s.listRuns({"", "x", "", ""}).empty());
  EXPECT_EQ(ids(s.listRuns({"", "z", "", ""})), (std::vector<int64_t>{a}));
  EXPECT_EQ(s.getRun(a)->tags, (std::vector<std::string>{"z"}));
}

TEST_F(RunStoreTest, DeleteCascadesToAllRows) {
  RunStore s(file("runs.db"));
  int64_t r1 = s.createRun("one", "{}", {"t1", "t2"});
  int64_t r2 = s.createRun("two", "{}", {"t1"});
  for (int64_t r : {r1, r2}) {
    for (int i = 0; i < 3; ++i) {
      s.appendMetric(r, "train/loss", i, 0, 1);
      s.appendStageMetric(r, i, i, "k", 1);
      s.appendTrace(r, {i, "F", i, 0, 1});
      s.appendLog(r, i, "info", "m");
    }
  }
  s.flush();
  // Rows still buffered for the deleted run are dropped with it.
  s.appendMetric(r1, "train/loss", 9, 0, 1);
  s.appendMetric(r2, "train/loss", 9, 0, 1);
  s.deleteRun(r1);
  EXPECT_EQ(s.pendingRows(), 1u);
  s.flush();
  EXPECT_FALSE(s.getRun(r1).has_value());
  for (const char* t : {"metrics", "stage_metrics", "trace", "logs"}) EXPECT_EQ(s.countRows(t, r1), 0) << t;
  EXPECT_EQ(s.countRows("metrics", r2), 4);
  EXPECT_EQ(s.countRows("stage_metrics", r2), 3);
  EXPECT_EQ(s.countRows("trace", r2), 3);
  EXPECT_EQ(s.countRows("logs", r2), 3);
  EXPECT_EQ(queryOne(s.handle(), "SELECT COUNT(*) FROM run_tags WHERE run_id = " + std::to_string(r1)), "0");
  EXPECT_EQ(ids(s.listRuns({"", "t1", "", ""})), (std::vector<int64_t>{r2}));
  EXPECT_TRUE(queryRows(s.handle(), "PRAGMA foreign_key_check").empty());
}

TEST_F(RunStoreTest, MarksRunsOfDeadLaunchersInterrupted) {
  const pid_t child = pm::test::deadPid();  // reaped: no process has this id
  ASSERT_GT(child, 0);

  RunStore s(file("runs.db"));
  int64_t dead = s.createRun("dead", "{}");
  int64_t alive = s.createRun("alive", "{}");
  int64_t elsewhere = s.createRun("elsewhere", "{}");
  int64_t done = s.createRun("done", "{}");
  s.markRunning(dead, child);
  s.markRunning(alive, getpid());
  s.markRunning(elsewhere, child);
  s.markRunning(done, child);
  s.setStatus(done, "finished");
  RawDb raw(s.path());
  raw.exec("UPDATE runs SET host = 'some-other-host' WHERE id = " + std::to_string(elsewhere));

  EXPECT_EQ(s.markDeadRunsInterrupted(), 1);
  auto r = s.getRun(dead);
  EXPECT_EQ(r->status, pm::RunStatus::Interrupted);
  EXPECT_EQ(r->status_message, "launcher process " + std::to_string(child) + " is gone");
  EXPECT_GT(r->finished_at, 0);
  EXPECT_EQ(s.getRun(alive)->status, pm::RunStatus::Running);
  EXPECT_EQ(s.getRun(elsewhere)->status, pm::RunStatus::Running);  // another host's process cannot be checked
  EXPECT_EQ(s.getRun(done)->status, pm::RunStatus::Finished);
  EXPECT_EQ(s.markDeadRunsInterrupted(), 0);
}

TEST_F(RunStoreTest, FlushesAutomaticallyAtThreshold) {
  const std::string db = file("runs.db");
  RunStore w(db);
  RunStore r(db);
  int64_t run = w.createRun("r", "{}");
  for (int i = 0; i < 2000; ++i) w.appendMetric(run, "train/loss", i, 0, 1);
  for (int i = 0; i < 1000; ++i) w.appendStageMetric(run, i % 4, i, "k", 1);
  for (int i = 0; i < 1000; ++i) w.appendTrace(run, {i % 4, "B", i, 0, 1});
  for (int i = 0; i < 999; ++i) w.appendLog(run, i, "info", "m");
  EXPECT_EQ(w.pendingRows(), 4999u);
  for (const char* t : {"metrics", "stage_metrics", "trace", "logs"}) {
    EXPECT_EQ(r.countRows(t, run), 0) << t;
    EXPECT_EQ(w.countRows(t, run), 0) << t;
  }
  w.appendMetric(run, "train/loss", 2000, 0, 1);  // the 5000th row
  EXPECT_EQ(w.pendingRows(), 0u);
  EXPECT_EQ(r.countRows("metrics", run), 2001);
  EXPECT_EQ(r.countRows("stage_metrics", run), 1000);
  EXPECT_EQ(r.countRows("trace", run), 1000);
  EXPECT_EQ(r.countRows("logs", run), 999);
  w.flush();  // nothing pending: a no-op
  EXPECT_EQ(r.countRows("metrics", run), 2001);
}

TEST_F(RunStoreTest, FailedFlushDropsRowsAndStoreStaysUsable) {
  RunStore s(file("runs.db"));
  int64_t run = s.createRun("r", "{}");
  s.appendMetric(run + 1000, "train/loss", 0, 0, 1);  // no such run: foreign key violation
  s.appendMetric(run, "train/loss", 0, 0, 1);
  EXPECT_THROW(s.flush(), StoreError);
  EXPECT_EQ(s.pendingRows(), 0u);
  EXPECT_EQ(s.countRows("metrics", run), 0);  // the batch is all or nothing
  s.appendMetric(run, "train/loss", 1, 0, 1);
  s.flush();
  EXPECT_EQ(s.countRows("metrics", run), 1);
}

TEST_F(RunStoreTest, CountRowsOnlyAcceptsDataTables) {
  RunStore s(file("runs.db"));
  int64_t run = s.createRun("r", "{}");
  EXPECT_EQ(s.countRows("metrics", run), 0);
  EXPECT_THROW(s.countRows("runs", run), StoreError);
  EXPECT_THROW(s.countRows("", run), StoreError);
  EXPECT_THROW(s.countRows("metrics WHERE 1; DROP TABLE runs;--", run), StoreError);
  EXPECT_THROW(s.countRows("METRICS", run), StoreError);
  EXPECT_TRUE(s.getRun(run).has_value());
}

TEST_F(RunStoreTest, PragmasAndIntegrity) {
  RunStore s(file("runs.db"));
  int64_t run = s.createRun("r", "{}", {"a"});
  for (int i = 0; i < 12000; ++i) s.appendMetric(run, "train/loss", i, i * 0.1, 1.0 / (i + 1));
  s.flush();
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA integrity_check"), "ok");
  EXPECT_TRUE(queryRows(s.handle(), "PRAGMA foreign_key_check").empty());
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA synchronous"), "1");  // NORMAL
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA busy_timeout"), "10000");
  // The metric query is served by the index.
  auto plan = queryRows(s.handle(),
                        "EXPLAIN QUERY PLAN SELECT step, wall_time, value FROM metrics WHERE run_id = 1 AND "
                        "key = 'train/loss' ORDER BY step, rowid");
  ASSERT_FALSE(plan.empty());
  EXPECT_NE(plan[0].find("metrics_by_run_key_step"), std::string::npos) << plan[0];
  EXPECT_EQ(plan.size(), 1u) << "no temporary sort expected";
}

TEST_F(RunStoreTest, ConcurrentProcessesCreatingOneStore) {
  const std::string db = file("shared/runs.db");
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  constexpr int kProcs = 4;
  std::vector<pid_t> kids;
  for (int i = 0; i < kProcs; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(gate[1]);
      char c;
      (void)!read(gate[0], &c, 1);  // wait until the parent opens the gate (EOF)
      int rc = 0;
      try {
        RunStore s(db);
        int64_t run = s.createRun("proc " + std::to_string(i), "{}", {"p"});
        for (int k = 0; k < 100; ++k) s.appendMetric(run, "train/loss", k, 0, k);
        s.flush();
      } catch (...) {
        rc = 1;
      }
      _exit(rc);
    }
    kids.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);  // all children start together
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(k, &status, 0), k);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  RunStore s(db);
  EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
  auto runs = s.listRuns({"", "p", "", ""});
  ASSERT_EQ(runs.size(), size_t(kProcs));
  for (const auto& r : runs) EXPECT_EQ(s.countRows("metrics", r.id), 100);
  EXPECT_EQ(queryOne(s.handle(), "SELECT COUNT(*) FROM schema_version"), "1");
  EXPECT_EQ(queryOne(s.handle(), "PRAGMA integrity_check"), "ok");
}

// A sweep's definition is recorded once: a second record of the id keeps the first.
TEST_F(RunStoreTest, SweepDefinitionsAreRecordedOnce) {
  RunStore s(file("runs.db"));
  EXPECT_FALSE(s.sweepDefinition("sw").has_value());
  s.recordSweep("sw", R"({"a":1})");
  s.recordSweep("sw", R"({"a":2})");
  s.recordSweep("other", "{}");
  EXPECT_EQ(s.sweepDefinition("sw").value_or(""), R"({"a":1})");
  EXPECT_EQ(s.sweepDefinition("other").value_or("x"), "{}");
  RunStore ro(file("runs.db"), true);
  EXPECT_EQ(ro.sweepDefinition("sw").value_or(""), R"({"a":1})");
  EXPECT_THROW(ro.recordSweep("third", "{}"), StoreError);
}

TEST_F(RunStoreTest, InMemoryStoreWorks) {
  RunStore s(":memory:");
  EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
  int64_t run = s.createRun("m", "{}", {"t"});
  s.appendMetric(run, "train/loss", 0, 0, 2);
  s.flush();
  EXPECT_DOUBLE_EQ(s.getRun(run)->final_loss, 2);
}

// A new store follows the umask but is never world-writable, even with umask 0.
TEST_F(RunStoreTest, NewStoreIsNeverWorldWritable) {
  const mode_t old = ::umask(0);
  {
    RunStore store(file("open.db"));
    store.createRun("r", "{}");
  }
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(file("open.db").c_str(), &st), 0);
  EXPECT_FALSE(st.st_mode & S_IWOTH) << std::oct << st.st_mode;
  EXPECT_TRUE(st.st_mode & S_IROTH) << "the umask (0) decides the rest";
}

// Importing another store's runs: every row and tag arrives under new ids, the source is only
// read, live runs arrive interrupted, and bad sources fail naming the file with nothing changed.
TEST_F(RunStoreTest, ImportCopiesEveryRunOfAnotherStore) {
  const std::string a = file("here.db"), b = file("there.db");
  int64_t kept = 0;
  {
    RunStore s(a);
    kept = s.createRun("already here", kConfig, {"local"});
    s.appendMetric(kept, "train/loss", 1, 10.0, 3.0);
    s.setStatus(kept, "finished");
  }
  int64_t finished = 0, live = 0;
  {
    RunStore s(b);
    s.createRun("deleted before import", kConfig);
    s.deleteRun(1);  // ids in the source need not be dense
    finished = s.createRun("from another machine, \"quoted\"", kConfig, {"study:quality", "remote", "b-tag"}, "a note", "sweep-7");
    s.recordSweep("sweep-7", R"({"grid":"there"})");
    s.recordSweep("sweep-unused", R"({"grid":"no run of it is imported"})");
    for (int64_t k = 1; k <= 50; ++k) s.appendMetric(finished, "train/loss", k, 100.0 + k, 1.0 / static_cast<double>(k));
    s.appendStageMetric(finished, 1, 50, "utilization", 0.75);
    s.appendTrace(finished, {1, "B", 3, 0.5, 0.75});
    s.appendLog(finished, 2.0, "warn", "slow link");
    s.markRunning(finished, 4242);
    s.setStatus(finished, "finished");
    live = s.createRun("still running there", kConfig);
    s.markRunning(live, 4243);
  }
  const std::string before = pm::test::readFile(b);
  RunStore s(a);
  const auto mapping = s.importRuns(b);
  EXPECT_EQ(pm::test::readFile(b), before) << "the source is only read";
  ASSERT_EQ(mapping.size(), 2u);
  EXPECT_EQ(mapping[0].first, finished);
  EXPECT_EQ(mapping[1].first, live);
  EXPECT_NE(mapping[0].second, kept);
  EXPECT_NE(mapping[1].second, mapping[0].second);
  auto r = s.getRun(mapping[0].second);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "from another machine, \"quoted\"");
  EXPECT_EQ(r->status, pm::RunStatus::Finished);
  EXPECT_EQ(r->notes, "a note");
  EXPECT_EQ(r->sweep_id, "sweep-7");
  EXPECT_EQ(r->launcher_pid, 0);
  // The imported run's sweep definition comes along (only that one).
  EXPECT_EQ(s.sweepDefinition("sweep-7").value_or(""), R"({"grid":"there"})");
  EXPECT_FALSE(s.sweepDefinition("sweep-unused").has_value());
  // Tags keep their given order (not alphabetical).
  EXPECT_EQ(r->tags, (std::vector<std::string>{"study:quality", "remote", "b-tag"}));
  EXPECT_EQ(r->config_json, std::string(kConfig));
  const auto loss = s.loadMetric(mapping[0].second, "train/loss");
  ASSERT_EQ(loss.size(), 50u);
  EXPECT_DOUBLE_EQ(loss[9].value, 0.1);
  EXPECT_DOUBLE_EQ(loss[9].wall_time, 110.0);
  ASSERT_EQ(s.loadStageMetric(mapping[0].second, "utilization").size(), 1u);
  ASSERT_EQ(s.loadTrace(mapping[0].second).size(), 1u);
  EXPECT_EQ(s.loadTrace(mapping[0].second)[0].action, "B");
  ASSERT_EQ(s.loadLog(mapping[0].second).size(), 1u);
  EXPECT_EQ(s.loadLog(mapping[0].second)[0].message, "slow link");
  auto l = s.getRun(mapping[1].second);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->status, pm::RunStatus::Interrupted);
  EXPECT_EQ(l->status_message, "imported while running");
  // The run that was here is untouched.
  EXPECT_EQ(s.loadMetric(kept, "train/loss").size(), 1u);
  EXPECT_EQ(s.listRuns().size(), 3u);

  // Bad sources: a missing file, a text file, this store itself. Nothing changes.
  const std::string text = file("notes.txt");
  pm::test::writeFile(text, std::string(4096, 'x'));
  for (const std::string& bad : {file("missing.db"), text, a}) {
    try {
      s.importRuns(bad);
      FAIL() << bad << " should be refused";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_EQ(e.exitCode(), 2) << e.what();
    }
    EXPECT_EQ(s.listRuns().size(), 3u);
  }
  EXPECT_FALSE(fs::exists(file("missing.db")));
}

// A long-lived reader (the GUI's runs browser) sees every run another connection records after
// it opened, whatever it read in between: no read transaction is left open.
TEST_F(RunStoreTest, LongLivedReaderSeesRunsRecordedLater) {
  const std::string db = file("runs.db");
  RunStore reader(db);
  reader.markDeadRunsInterrupted();
  EXPECT_TRUE(reader.listRuns().empty());
  for (int k = 1; k <= 3; ++k) {
    {
      RunStore writer(db);
      const int64_t run = writer.createRun("run " + std::to_string(k), kConfig);
      writer.setStatus(run, "running");
      for (int s = 1; s <= 5; ++s) writer.appendMetric(run, "train/loss", s, s, 1.0 / s);
      writer.flush();
      EXPECT_EQ(reader.listRuns().size(), static_cast<size_t>(k));
      writer.setStatus(run, "finished");
    }
    const auto runs = reader.listRuns();
    ASSERT_EQ(runs.size(), static_cast<size_t>(k));
    EXPECT_EQ(runs[0].status, pm::RunStatus::Finished);
    EXPECT_EQ(reader.loadMetric(runs[0].id, "train/loss").size(), 5u);
    reader.listRuns(RunFilter{});
    reader.getRun(runs[0].id);
  }
}

// A store of schema version 3 (before the run's partition, halt step and resume step were
// columns) migrates: each old run gets them once from the text its runner wrote for people (the
// first "partition ..." log line, a stopped run's "after step N" with a checkpoint, the latest
// "resumed from its checkpoint after step N" line), or none; the log rows stay as they were.
TEST_F(RunStoreTest, MigratesVersion3StoreFillingTheRunFieldsFromItsText) {
  const std::string db = file("v3.db");
  {
    RawDb raw(db);
    raw.exec(storeSchemaAt(3));
    raw.exec(R"SQL(
      INSERT INTO runs (name, created_at, status, status_message, config_json) VALUES
        ('real, stopped', 1000, 'stopped',
         'stopped by request after step 12 (checkpoint written: resume with pipemare run --resume 1)',
         '{"pipeline":{"stages":2,"partition":{"method":"parameters"}}}'),
        ('single, finished', 1001, 'finished', '', '{"pipeline":{"stages":3}}'),
        ('failed before its stages started', 1002, 'failed', 'no such data file', '{}'),
        ('stopped without a checkpoint', 1003, 'stopped', 'stopped by request after step 7 (no checkpoint written)', '{}'),
        ('resumed twice', 1004, 'finished', '', '{}'),
        ('stopped, no step', 1005, 'stopped', 'stopped by request', '{}');
      INSERT INTO logs (run_id, time, level, message) VALUES
        (1, 1.0, 'info', 'run 1 created in runs.db'),
        (1, 2.0, 'info', 'partition (parameters): [0,2) [2,6)'),
        (1, 3.0, 'info', 'partition: [0,2) [2,6)'),
        (2, 1.0, 'info', 'partition: [0,1) [1,2) [2,3)'),
        (3, 1.0, 'info', 'partitioned nothing yet'),
        (5, 1.0, 'info', 'run 5 resumed from its checkpoint after step 8 (/tmp/ckpt)'),
        (5, 2.0, 'info', 'run 5 resumed from its checkpoint after step 16 (/tmp/ckpt)');
    )SQL");
  }
  // Read-only never migrates.
  EXPECT_THROW({ RunStore ro(db, true); }, StoreError);
  using Units = std::vector<std::pair<int, int>>;
  {
    RunStore s(db);
    EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
    auto r = s.getRun(1);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->partition, (Units{{0, 2}, {2, 6}}));
    EXPECT_EQ(r->partition_method, "parameters");
    EXPECT_EQ(r->halt_step, 12);
    EXPECT_EQ(r->resume_step, 0);
    EXPECT_EQ(r->status, RunStatus::Stopped);
    EXPECT_EQ(s.loadLog(1).size(), 3u);
    r = s.getRun(2);
    EXPECT_EQ(r->partition, (Units{{0, 1}, {1, 2}, {2, 3}}));
    EXPECT_EQ(r->partition_method, "");
    EXPECT_EQ(r->halt_step, 0);
    r = s.getRun(3);
    EXPECT_TRUE(r->partition.empty());
    EXPECT_EQ(r->halt_step, 0);
    EXPECT_EQ(s.getRun(4)->halt_step, 0) << "no checkpoint was written";
    r = s.getRun(5);
    EXPECT_EQ(r->resume_step, 16) << "the latest session's";
    EXPECT_EQ(r->halt_step, 0);
    EXPECT_TRUE(r->partition.empty());
    EXPECT_EQ(s.getRun(6)->halt_step, 0);
    EXPECT_EQ(queryOne(s.handle(), "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(queryOne(s.handle(), "SELECT COUNT(*) FROM schema_version"), "1");
  }
  // Reopening changes nothing; read-only now works; the schema is a fresh store's.
  {
    RunStore s(db);
    EXPECT_EQ(s.getRun(1)->partition, (Units{{0, 2}, {2, 6}}));
    RunStore ro(db, true);
    EXPECT_EQ(ro.getRun(5)->resume_step, 16);
  }
  RunStore fresh(file("fresh.db"));
  RunStore migrated(db);
  const char* schemaSql = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name";
  EXPECT_EQ(queryRows(fresh.handle(), schemaSql), queryRows(migrated.handle(), schemaSql));
}

// The partition, the halt step and the resume step are fields of the run: written, read back by
// getRun and listRuns (also read-only), kept by a resume (partition) or cleared (halt step), and
// carried by an import.
TEST_F(RunStoreTest, PartitionHaltStepAndResumeStepAreFieldsOfTheRun) {
  using Units = std::vector<std::pair<int, int>>;
  const std::string db = file("runs.db");
  int64_t run = 0;
  {
    RunStore s(db);
    run = s.createRun("r", kConfig);
    auto r = s.getRun(run);
    EXPECT_TRUE(r->partition.empty());
    EXPECT_EQ(r->halt_step, 0);
    EXPECT_EQ(r->resume_step, 0);
    s.markRunning(run, 4242);
    s.setPartition(run, {{0, 1}, {1, 3}, {3, 4}, {4, 6}});
    s.setHaltStep(run, 40);
    s.setStatus(run, RunStatus::Stopped, "stopped by request after step 40");
  }
  {
    RunStore ro(db, true);
    auto r = ro.getRun(run);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->partition, (Units{{0, 1}, {1, 3}, {3, 4}, {4, 6}}));
    EXPECT_EQ(r->halt_step, 40);
    EXPECT_EQ(r->status, pm::RunStatus::Stopped);
    EXPECT_GT(r->finished_at, 0);
    EXPECT_EQ(ro.listRuns().at(0).partition, r->partition);
    EXPECT_EQ(ro.listRuns().at(0).halt_step, 40);
    EXPECT_EQ(queryOne(ro.handle(), "SELECT partition_units FROM runs"), "[[0,1],[1,3],[3,4],[4,6]]");
  }
  RunStore s(db);
  EXPECT_TRUE(s.claimForResume(run, 4243, 40));
  auto r = s.getRun(run);
  EXPECT_EQ(r->status, pm::RunStatus::Running);
  EXPECT_EQ(r->resume_step, 40);
  EXPECT_EQ(r->halt_step, 0) << "a running run has no stop checkpoint";
  EXPECT_EQ(r->partition, (Units{{0, 1}, {1, 3}, {3, 4}, {4, 6}}));
  EXPECT_EQ(r->status_message, "");
  s.setStatus(run, RunStatus::Finished);
  EXPECT_EQ(s.getRun(run)->status, pm::RunStatus::Finished);

  RunStore other(file("other.db"));
  const auto mapping = other.importRuns(db);
  ASSERT_EQ(mapping.size(), 1u);
  r = other.getRun(mapping[0].second);
  EXPECT_EQ(r->partition, (Units{{0, 1}, {1, 3}, {3, 4}, {4, 6}}));
  EXPECT_EQ(r->resume_step, 40);

  // Damaged text reads as no partition; an empty one clears it.
  RawDb(db).exec("UPDATE runs SET partition_units = '[[0,1],\"x\"]'");
  EXPECT_TRUE(s.getRun(run)->partition.empty());
  s.setPartition(run, {{0, 6}});
  EXPECT_EQ(s.getRun(run)->partition, (Units{{0, 6}}));
  s.setPartition(run, {});
  EXPECT_TRUE(s.getRun(run)->partition.empty());
  EXPECT_THROW(s.setPartition(run + 100, {{0, 1}}), StoreError);
  EXPECT_THROW(s.setHaltStep(run + 100, 1), StoreError);
  EXPECT_THROW(s.claimForResume(run + 100, 1, 1), StoreError);
}

// Two resumes of one run at once (two connections, as two `pipemare run --resume` processes): the
// claim is one conditional change, so exactly one of them gets the run and the other sees it
// running under the first one's process; a finished run cannot be claimed at all.
// A resumed run's pauses are data: the running total of time/paused_s is the record's paused_s
// (the largest, so that a later resume from an earlier checkpoint, which deletes the later points,
// keeps what it counted), and lastActivity is the latest of the run's end and its metrics' times.
TEST_F(RunStoreTest, PausesAndLastActivityAreReadFromTheRunsRows) {
  RunStore s(file("pause.db"));
  const int64_t run = s.createRun("r", "{}");
  EXPECT_EQ(s.getRun(run)->paused_s, 0);
  EXPECT_EQ(s.lastActivity(run), 0);
  s.appendMetric(run, "train/loss", 1, 1000.0, 2.0);
  s.appendMetric(run, "train/loss", 2, 1010.0, 1.5);
  s.flush();
  EXPECT_DOUBLE_EQ(s.lastActivity(run), 1010.0);
  s.appendMetric(run, "time/paused_s", 2, 1100.0, 90.0);  // not activity: the resume's own stamp
  s.appendMetric(run, "time/paused_s", 4, 1300.0, 150.0);
  s.flush();
  EXPECT_DOUBLE_EQ(s.lastActivity(run), 1010.0);
  EXPECT_DOUBLE_EQ(s.getRun(run)->paused_s, 150.0);
  EXPECT_DOUBLE_EQ(s.listRuns().front().paused_s, 150.0);
  s.setStatus(run, "stopped");  // its end, now, is later than every metric
  EXPECT_GT(s.lastActivity(run), 1010.0);
}

TEST_F(RunStoreTest, OnlyOneResumeClaimsARun) {
  const std::string db = file("claim.db");
  int64_t run = 0;
  {
    RunStore s(db);
    run = s.createRun("r", "{}");
    s.markRunning(run, 1);
    s.setStatus(run, RunStatus::Stopped, "stopped at step 20");
  }
  RunStore first(db), second(db);
  int claimed = 0;
  std::thread a([&] { claimed += first.claimForResume(run, 1111, 20) ? 1 : 0; });
  const bool secondGot = second.claimForResume(run, 2222, 20);
  a.join();
  claimed += secondGot ? 1 : 0;
  EXPECT_EQ(claimed, 1) << "both resumes (or none) claimed the run";
  const auto r = first.getRun(run);
  EXPECT_EQ(r->status, RunStatus::Running);
  EXPECT_EQ(r->launcher_pid, secondGot ? 2222 : 1111) << "the record is the winner's";
  EXPECT_FALSE(second.claimForResume(run, 3333, 20)) << "a running run was claimed again";
  first.setStatus(run, RunStatus::Finished);
  EXPECT_FALSE(first.claimForResume(run, 4444, 20)) << "a finished run was claimed";
  EXPECT_EQ(first.getRun(run)->launcher_pid, secondGot ? 2222 : 1111);
}

// The TorchScript file a run's model is read from is a field of the run: written as JSON, read
// back by getRun and listRuns (also read-only), cleared by an empty path, and text that is not
// such a record (a store edited by hand) reads as none.
TEST_F(RunStoreTest, ModelFileIsAFieldOfTheRun) {
  const std::string db = file("runs.db");
  const std::string digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  int64_t run = 0, zoo = 0;
  {
    RunStore s(db);
    zoo = s.createRun("zoo model", kConfig);
    run = s.createRun("scripted", R"({"model":{"name":"torchscript","path":"/x/y/cnn.pt"}})");
    EXPECT_TRUE(s.getRun(run)->model_file.path.empty()) << "none until it is recorded";
    s.setModelFile(run, FileDigest{"/x/y/cnn \"quoted\" ünï.pt", 123456789012, digest});
  }
  {
    RunStore ro(db, true);
    auto r = ro.getRun(run);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->model_file.path, "/x/y/cnn \"quoted\" ünï.pt");
    EXPECT_EQ(r->model_file.size, 123456789012);
    EXPECT_EQ(r->model_file.sha256, digest);
    const auto listed = ro.listRuns();
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0].id, run);
    EXPECT_EQ(listed[0].model_file.path, r->model_file.path);
    EXPECT_EQ(listed[0].model_file.size, 123456789012);
    EXPECT_EQ(listed[0].model_file.sha256, digest);
    auto z = ro.getRun(zoo);
    EXPECT_TRUE(z->model_file.path.empty());
    EXPECT_EQ(z->model_file.size, 0);
    EXPECT_TRUE(z->model_file.sha256.empty());
    EXPECT_EQ(queryOne(ro.handle(), "SELECT model_file FROM runs WHERE id = " + std::to_string(zoo)), "");
    const auto text = queryOne(ro.handle(), "SELECT model_file FROM runs WHERE id = " + std::to_string(run));
    EXPECT_NE(text.find("\"size\":123456789012"), std::string::npos) << text;
    EXPECT_NE(text.find("\"sha256\":\"" + digest + "\""), std::string::npos) << text;
  }
  RunStore s(db);
  // Text that is not a model file record reads as none, not an error.
  for (const char* bad : {"not json", "[1,2]", "\"/x/y/cnn.pt\"", R"({"path":1,"size":3,"sha256":"ab"})",
                          R"({"path":"/a.pt","sha256":"ab"})", R"({"path":"/a.pt","size":"12","sha256":"ab"})",
                          R"({"path":"/a.pt","size":-3,"sha256":"ab"})", R"({"path":"/a.pt","size":3,"sha256":7})",
                          R"({"path":"/a.pt","size":3.5,"sha256":"ab"})", R"({"path":"","size":3,"sha256":"ab"})"}) {
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(s.handle(), "UPDATE runs SET model_file = ? WHERE id = ?", -1, &st, nullptr), SQLITE_OK);
    sqlite3_bind_text(st, 1, bad, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, run);
    ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    auto r = s.getRun(run);
    ASSERT_TRUE(r) << bad;
    EXPECT_TRUE(r->model_file.path.empty()) << bad;
    EXPECT_EQ(r->model_file.size, 0) << bad;
    EXPECT_TRUE(r->model_file.sha256.empty()) << bad;
    EXPECT_EQ(s.listRuns().size(), 2u) << bad;
  }
  s.setModelFile(run, FileDigest{"/m/b.pt", 42, digest});
  EXPECT_EQ(s.getRun(run)->model_file.size, 42);
  s.setModelFile(run, FileDigest{});
  EXPECT_TRUE(s.getRun(run)->model_file.path.empty());
  EXPECT_EQ(queryOne(s.handle(), "SELECT model_file FROM runs WHERE id = " + std::to_string(run)), "");
  EXPECT_THROW(s.setModelFile(run + 100, FileDigest{"/m/b.pt", 42, digest}), StoreError);
  RunStore ro(db, true);
  EXPECT_THROW(ro.setModelFile(run, FileDigest{"/m/b.pt", 42, digest}), StoreError);
}

// The listing's model of a TorchScript run is its file's name without directories: the file
// recorded for the run, else the one its configuration names, else "torchscript". Zoo models keep
// their name.
TEST_F(RunStoreTest, TorchScriptRunIsListedByItsFileName) {
  RunStore s(file("runs.db"));
  const int64_t named = s.createRun("named in its config", R"({"model":{"name":"torchscript","path":"/x/y/cnn.pt"}})");
  const int64_t bare = s.createRun("no path", R"({"model":{"name":"torchscript"}})");
  const int64_t zoo = s.createRun("zoo", kConfig);
  EXPECT_EQ(s.getRun(named)->model, "cnn.pt");
  EXPECT_EQ(s.getRun(bare)->model, "torchscript");
  EXPECT_EQ(s.getRun(zoo)->model, "mlp");

  s.setModelFile(named, FileDigest{"/data/models/recorded.pt", 10, std::string(64, 'a')});
  s.setModelFile(bare, FileDigest{"relative/dir/other.pt", 20, std::string(64, 'b')});
  s.setModelFile(zoo, FileDigest{"/data/models/ignored.pt", 30, std::string(64, 'c')});
  EXPECT_EQ(s.getRun(named)->model, "recorded.pt") << "the recorded file wins over the config's path";
  EXPECT_EQ(s.getRun(bare)->model, "other.pt");
  EXPECT_EQ(s.getRun(zoo)->model, "mlp") << "only a torchscript run is named by its file";
  std::vector<std::string> listed;
  for (const auto& r : s.listRuns()) listed.push_back(r.model);
  EXPECT_EQ(listed, (std::vector<std::string>{"mlp", "other.pt", "recorded.pt"}));

  // A model file record that cannot be read falls back to the config's path.
  ASSERT_EQ(sqlite3_exec(s.handle(), ("UPDATE runs SET model_file = '{oops' WHERE id = " + std::to_string(named)).c_str(), nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(s.getRun(named)->model, "cnn.pt");
  s.setModelFile(bare, FileDigest{});
  EXPECT_EQ(s.getRun(bare)->model, "torchscript");
}

// A store of schema version 4 (before the model file was a column) migrates: every run keeps its
// fields and rows and has no model file; the schema is then a fresh store's.
TEST_F(RunStoreTest, MigratesVersion4StoreWithNoModelFiles) {
  const std::string db = file("v4.db");
  {
    RawDb raw(db);
    raw.exec(storeSchemaAt(4));
    raw.exec(R"SQL(
      INSERT INTO runs (name, created_at, status, status_message, config_json, sweep_id, partition_units, halt_step, resume_step)
      VALUES
        ('stopped', 1000, 'stopped', 'stopped by request after step 12', '{"model":{"name":"cnn"},"pipeline":{"stages":2}}',
         'sw-1', '[[0,2],[2,6]]', 12, 0),
        ('scripted', 1001, 'finished', '', '{"model":{"name":"torchscript","path":"/x/y/cnn.pt"}}', '', '', 0, 8);
      INSERT INTO run_tags (run_id, tag) VALUES (1, 'baseline'), (2, 'scripted');
      INSERT INTO metrics (run_id, key, step, wall_time, value) VALUES (1, 'train/loss', 1, 1.0, 2.5), (2, 'train/loss', 1, 1.0, 0.5);
      INSERT INTO logs (run_id, time, level, message) VALUES (2, 1.0, 'info', 'started');
    )SQL");
  }
  EXPECT_THROW({ RunStore ro(db, true); }, StoreError) << "read-only never migrates";
  using Units = std::vector<std::pair<int, int>>;
  {
    RunStore s(db);
    EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
    EXPECT_TRUE(s.getRun(1)->build.torch.empty()) << "a run from before the build column reads as not recorded";
    auto r = s.getRun(1);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->name, "stopped");
    EXPECT_EQ(r->status, RunStatus::Stopped);
    EXPECT_EQ(r->status_message, "stopped by request after step 12");
    EXPECT_EQ(r->sweep_id, "sw-1");
    EXPECT_EQ(r->partition, (Units{{0, 2}, {2, 6}}));
    EXPECT_EQ(r->halt_step, 12);
    EXPECT_EQ(r->tags, (std::vector<std::string>{"baseline"}));
    EXPECT_EQ(r->model, "cnn");
    EXPECT_DOUBLE_EQ(r->final_loss, 2.5);
    EXPECT_TRUE(r->model_file.path.empty());
    r = s.getRun(2);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, RunStatus::Finished);
    EXPECT_EQ(r->resume_step, 8);
    EXPECT_EQ(r->tags, (std::vector<std::string>{"scripted"}));
    EXPECT_EQ(r->model, "cnn.pt") << "named by its config's path";
    EXPECT_TRUE(r->model_file.path.empty());
    EXPECT_EQ(s.loadLog(2).size(), 1u);
    EXPECT_EQ(queryRows(s.handle(), "SELECT model_file FROM runs ORDER BY id"), (std::vector<std::string>{"", ""}));
    EXPECT_EQ(queryOne(s.handle(), "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(queryOne(s.handle(), "SELECT COUNT(*) FROM schema_version"), "1");
    // The migrated store records model files.
    s.setModelFile(2, FileDigest{"/x/y/cnn.pt", 7, std::string(64, 'f')});
    EXPECT_EQ(s.getRun(2)->model_file.size, 7);
  }
  RunStore ro(db, true);
  EXPECT_EQ(ro.getRun(2)->model_file.path, "/x/y/cnn.pt");
  RunStore fresh(file("fresh.db"));
  RunStore migrated(db);
  const char* schemaSql = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name";
  EXPECT_EQ(queryRows(fresh.handle(), schemaSql), queryRows(migrated.handle(), schemaSql));
}

// An import carries each run's model file (and a run without one arrives without one).
TEST_F(RunStoreTest, ImportCopiesTheModelFile) {
  const std::string there = file("there.db");
  const std::string digest(64, 'e');
  int64_t scripted = 0, zoo = 0;
  {
    RunStore s(there);
    scripted = s.createRun("scripted", R"({"model":{"name":"torchscript","path":"/x/y/cnn.pt"}})");
    s.setModelFile(scripted, FileDigest{"/x/y/cnn.pt", 4096, digest});
    s.setStatus(scripted, RunStatus::Finished);
    zoo = s.createRun("zoo", kConfig);
    s.setStatus(zoo, RunStatus::Finished);
  }
  RunStore here(file("here.db"));
  const auto mapping = here.importRuns(there);
  ASSERT_EQ(mapping.size(), 2u);
  EXPECT_EQ(mapping[0].first, scripted);
  EXPECT_EQ(mapping[1].first, zoo);
  auto r = here.getRun(mapping[0].second);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->model_file.path, "/x/y/cnn.pt");
  EXPECT_EQ(r->model_file.size, 4096);
  EXPECT_EQ(r->model_file.sha256, digest);
  EXPECT_EQ(r->model, "cnn.pt");
  r = here.getRun(mapping[1].second);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->model_file.path.empty());
  EXPECT_EQ(r->model, "mlp");
}

// A run copied while it was still going at its source (arrived interrupted, "imported while
// running", with the losses it had then) is refreshed in place by the next import once the source
// has finished it: its status and every row as the source has them, under the same id here; a
// run still going is skipped, and a finished copy is not copied again.
TEST_F(RunStoreTest, ImportRefreshesACopyMadeWhileItsSourceWasGoing) {
  const std::string there = file("there.db");
  int64_t going = 0;
  {
    RunStore s(there);
    going = s.createRun("going", kConfig, {"remote"});
    s.markRunning(going, 4243);
    for (int64_t k = 1; k <= 30; ++k) s.appendMetric(going, "train/loss", k, 100.0 + k, 1.0 / static_cast<double>(k));
  }
  RunStore here(file("here.db"));
  const auto first = here.importRuns(there);
  ASSERT_EQ(first.size(), 1u);
  const int64_t copy = first[0].second;
  EXPECT_EQ(here.getRun(copy)->status, pm::RunStatus::Interrupted);
  EXPECT_EQ(here.loadMetric(copy, "train/loss").size(), 30u);

  std::vector<std::pair<int64_t, int64_t>> skipped, refreshed;
  EXPECT_TRUE(here.importRuns(there, &skipped, &refreshed).empty());
  EXPECT_TRUE(refreshed.empty()) << "the source has not ended yet";
  ASSERT_EQ(skipped.size(), 1u);

  {
    RunStore s(there);
    for (int64_t k = 31; k <= 600; ++k) s.appendMetric(going, "train/loss", k, 100.0 + k, 1.0 / static_cast<double>(k));
    s.appendLog(going, 700.0, "info", "the end");
    s.setStatus(going, "finished");
  }
  skipped.clear();
  EXPECT_TRUE(here.importRuns(there, &skipped, &refreshed).empty()) << "a refreshed copy is no new run";
  EXPECT_TRUE(skipped.empty());
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(refreshed[0], std::make_pair(going, copy));
  const auto r = here.getRun(copy);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, pm::RunStatus::Finished);
  EXPECT_EQ(r->launcher_pid, 0);
  EXPECT_EQ(r->tags, std::vector<std::string>{"remote"});
  const auto losses = here.loadMetric(copy, "train/loss");
  ASSERT_EQ(losses.size(), 600u) << "rows stored twice or missing";
  EXPECT_EQ(losses.back().step, 600);
  EXPECT_EQ(here.loadLog(copy).size(), 1u);
  EXPECT_EQ(here.listRuns().size(), 1u);

  refreshed.clear();
  skipped.clear();
  EXPECT_TRUE(here.importRuns(there, &skipped, &refreshed).empty());
  EXPECT_TRUE(refreshed.empty()) << "a finished copy was refreshed again";
  EXPECT_EQ(skipped.size(), 1u);
}

// A running run's launcher is known by its pid and when that process started (schema 7): a live
// process that has the pid but started at another time (the pid reused after the launcher died)
// does not keep the run running; a record without a start time (older stores) goes by the pid.
TEST_F(RunStoreTest, APidReusedByAnotherProcessDoesNotKeepARunRunning) {
  RunStore s(file("runs.db"));
  const int64_t run = s.createRun("launched here", "{}");
  s.markRunning(run, static_cast<int64_t>(::getpid()));
  {
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(s.handle(), "SELECT launcher_started FROM runs WHERE id = 1", -1, &q, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_NEAR(sqlite3_column_double(q, 0), pm::processStartTime(::getpid()), 0.001);
    EXPECT_GT(sqlite3_column_double(q, 0), 1e9) << "a wall-clock time";
    sqlite3_finalize(q);
  }
  EXPECT_TRUE(s.deadRuns().empty());
  ASSERT_EQ(sqlite3_exec(s.handle(), "UPDATE runs SET launcher_started = 0", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_TRUE(s.deadRuns().empty()) << "no start time recorded: the live pid decides";
  ASSERT_EQ(sqlite3_exec(s.handle(), "UPDATE runs SET launcher_started = 1000", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(s.deadRuns().size(), 1u) << "a process that started long after the recorded launcher";
  EXPECT_EQ(s.markDeadRunsInterrupted(), 1);
  const auto r = s.getRun(run);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, pm::RunStatus::Interrupted);
  EXPECT_EQ(r->status_message, "launcher process " + std::to_string(::getpid()) + " is gone");
}

// A row whose status text names no RunStatus (only a store edited by hand has one) reads as
// failed, its message saying which text it held; the file keeps the text.
TEST_F(RunStoreTest, AnUnknownStatusReadsAsFailed) {
  RunStore s(file("runs.db"));
  const int64_t run = s.createRun("r", "{}");
  s.setStatus(run, RunStatus::Stopped, "stopped by request");
  ASSERT_EQ(sqlite3_exec(s.handle(), "UPDATE runs SET status = 'paused'", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto r = s.getRun(run);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, RunStatus::Failed);
  EXPECT_EQ(r->status_message, "unknown status \"paused\" in the store: stopped by request");
  const auto listed = s.listRuns({"paused", "", "", ""});  // the filter matches the stored text
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].status, RunStatus::Failed);
  EXPECT_TRUE(s.listRuns({"failed", "", "", ""}).empty());
}

// RunStatus names are the strings the store keeps (and the events carry), one each way.
TEST(RunStatusNames, RoundTripAndClassify) {
  const std::vector<std::pair<RunStatus, std::string>> all{
      {RunStatus::Created, "created"},   {RunStatus::Running, "running"}, {RunStatus::Finished, "finished"},
      {RunStatus::Stopped, "stopped"},   {RunStatus::Failed, "failed"},   {RunStatus::Diverged, "diverged"},
      {RunStatus::Interrupted, "interrupted"}};
  for (const auto& [status, name] : all) {
    EXPECT_EQ(toString(status), name);
    EXPECT_EQ(parseRunStatus(name), status) << name;
    EXPECT_EQ(isTerminalStatus(name), isTerminal(status)) << name;
  }
  for (const char* other : {"", "Finished", "completed", "running ", "bogus"}) {
    EXPECT_FALSE(parseRunStatus(other).has_value()) << other;
    EXPECT_FALSE(isTerminalStatus(other)) << other;
  }
  EXPECT_FALSE(isTerminal(RunStatus::Created));
  EXPECT_FALSE(isTerminal(RunStatus::Running));
  EXPECT_TRUE(isTerminal(RunStatus::Interrupted));
  EXPECT_TRUE(isResumable(RunStatus::Stopped));
  EXPECT_TRUE(isResumable(RunStatus::Failed));
  EXPECT_TRUE(isResumable(RunStatus::Interrupted));
  EXPECT_FALSE(isResumable(RunStatus::Finished));
  EXPECT_FALSE(isResumable(RunStatus::Diverged));
  EXPECT_FALSE(isResumable(RunStatus::Running));
}

// What the engine was built on is a field of the run: written as JSON, read back by getRun and
// listRuns; a run without it (recorded before the store kept it) reads as not recorded.
TEST_F(RunStoreTest, EngineBuildIsAFieldOfTheRun) {
  const std::string db = file("build.db");
  RunStore s(db);
  const int64_t old = s.createRun("old", "{}");
  const int64_t run = s.createRun("new", "{}");
  s.setBuild(run, EngineBuild{"2.11.0", "13.0", {"gloo", "nccl"}});
  const auto r = s.getRun(run);
  EXPECT_EQ(r->build.torch, "2.11.0");
  EXPECT_EQ(r->build.cuda, "13.0");
  EXPECT_EQ(r->build.backends, (std::vector<std::string>{"gloo", "nccl"}));
  EXPECT_EQ(engineBuildText(r->build), "LibTorch 2.11.0, CUDA 13.0, backends gloo nccl");
  EXPECT_EQ(queryOne(s.handle(), "SELECT build FROM runs WHERE id = " + std::to_string(run)),
            R"({"backends":["gloo","nccl"],"cuda":"13.0","torch":"2.11.0"})");
  EXPECT_TRUE(s.getRun(old)->build.torch.empty());
  EXPECT_EQ(engineBuildText(s.getRun(old)->build), "not recorded");
  EXPECT_THROW(s.setBuild(run + 100, EngineBuild{}), StoreError);
}

// A link planted as the store's checkpoint folder ("runs.db.checkpoints -> victim/important") is
// refused when a run claims its checkpoints, and the run's end does not delete through it; the
// folders a run makes are private (0700) whatever the umask, its owner file 0600.
TEST_F(RunStoreTest, CheckpointFoldersAreOwnAndPrivateAndNeverALink) {
  namespace fs = std::filesystem;
  const std::string db = file("runs.db");
  RunStore s(db);
  const int64_t run = s.createRun("r", "{}");
  const auto rec = *s.getRun(run);
  const fs::path victim = fs::path(file("victim")) / "important";
  fs::create_directories(victim / ("run-" + std::to_string(run)));
  std::ofstream(victim / ("run-" + std::to_string(run)) / "keep.txt") << "precious";
  fs::create_directory_symlink(victim, db + ".checkpoints");
  const std::string root = checkpointRoot(db, run);
  try {
    claimCheckpointRoot(root, db, rec);
    FAIL() << "checkpoints claimed through a planted link";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  removeCheckpoints(db, run);
  EXPECT_TRUE(fs::exists(victim / ("run-" + std::to_string(run)) / "keep.txt")) << "the run's end deleted through the link";
  fs::remove(db + ".checkpoints");
  const mode_t old = ::umask(0);
  claimCheckpointRoot(root, db, rec);
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((db + ".checkpoints").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((root + "/owner.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(ownsCheckpointRoot(root, rec));
}

// A store path that is not a regular file (`--db /dev/null`, a FIFO) is refused as a usage error
// (exit 2) naming it, for writing and for reading, and nothing is created beside it (SQLite would
// have made /dev/null-journal).
TEST_F(RunStoreTest, AStoreThatIsNotARegularFileIsRefused) {
  namespace fs = std::filesystem;
  const std::string fifo = file("pipe.db");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/null"), fifo})
    for (const bool readOnly : {false, true}) {
      try {
        RunStore s(path, readOnly);
        FAIL() << path << " opened as a store";
      } catch (const StoreError& e) {
        EXPECT_EQ(e.exitCode(), 2) << e.what();
        EXPECT_NE(std::string(e.what()).find(path + ": not a SQLite database (it is a device, pipe or socket"), std::string::npos)
            << e.what();
      }
      EXPECT_FALSE(fs::exists(path + "-journal")) << path;
      EXPECT_FALSE(fs::exists(path + "-wal")) << path;
    }
}

// A sweep is held by one process at a time (two `sweep --resume ID` at once ran every point
// twice): the second claim sees the first holder; a holder of this host whose process is gone
// holds nothing; releasing lets the next one in.
TEST_F(RunStoreTest, OnlyOneProcessHoldsASweep) {
  const std::string db = file("sweeps.db");
  RunStore a(db), b(db);
  a.recordSweep("sw-1", "{}");
  EXPECT_TRUE(a.claimSweep("sw-1", ::getpid()));
  std::string holder;
  EXPECT_FALSE(b.claimSweep("sw-1", ::getpid() + 1, &holder));
  EXPECT_EQ(holder, "process " + std::to_string(::getpid()) + " on " + pm::hostName());
  b.releaseSweep("sw-1", ::getpid() + 1);  // not the holder: changes nothing
  EXPECT_FALSE(b.claimSweep("sw-1", ::getpid() + 1));
  a.releaseSweep("sw-1", ::getpid());
  EXPECT_TRUE(b.claimSweep("sw-1", ::getpid() + 1)) << "a released sweep was not free";
  // A holder that is gone (a child that has exited) is taken over.
  const pid_t child = ::fork();
  if (child == 0) std::_Exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  RawDb(db).exec("UPDATE sweeps SET holder_pid = " + std::to_string(child) + " WHERE id = 'sw-1'");
  EXPECT_TRUE(a.claimSweep("sw-1", ::getpid())) << "the holder is gone, yet the sweep stayed held";
  EXPECT_THROW(a.claimSweep("no-such-sweep", ::getpid()), StoreError);
}

// A store of schema version 7 (before each stage's rank was recorded) migrates: runs with a
// partition ran one stage per rank and read [0, 1, ..., P-1]; runs without one read none. A new
// run records the ranks its chunks ran on (ZB-V's V), and a count that does not match is refused.
TEST_F(RunStoreTest, MigratesVersion7StoreWithOneStagePerRank) {
  const std::string db = file("v7.db");
  {
    RawDb raw(db);
    raw.exec(storeSchemaAt(7));
    raw.exec(R"SQL(
      INSERT INTO runs (name, created_at, status, config_json, partition_units)
      VALUES ('three', 1000, 'finished', '{"pipeline":{"stages":3}}', '[[0,2],[2,4],[4,6]]'),
             ('none', 1001, 'failed', '{}', '');
    )SQL");
  }
  RunStore s(db);
  EXPECT_EQ(s.schemaVersion(), kStoreSchemaVersion);
  EXPECT_EQ(s.getRun(1)->stage_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(s.getRun(2)->stage_ranks.empty());
  const int64_t v = s.createRun("zb-v", "{}");
  s.setPartition(v, {{0, 1}, {1, 2}, {2, 4}, {4, 6}}, {0, 1, 1, 0});
  EXPECT_EQ(s.getRun(v)->stage_ranks, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(queryOne(s.handle(), "SELECT stage_ranks FROM runs WHERE id = " + std::to_string(v)), "[0,1,1,0]");
  s.setPartition(v, {{0, 3}, {3, 6}});  // no ranks given: one stage per rank
  EXPECT_EQ(s.getRun(v)->stage_ranks, (std::vector<int>{0, 1}));
  EXPECT_THROW(s.setPartition(v, {{0, 3}, {3, 6}}, {0}), StoreError);
  // A hand-edited value that is not a list of ranks for each stage reads as none.
  RawDb(db).exec("UPDATE runs SET stage_ranks = '[0,\"x\"]' WHERE id = 1");
  EXPECT_TRUE(s.getRun(1)->stage_ranks.empty());
}
