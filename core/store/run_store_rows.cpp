// The run store's rows: metrics, stage metrics, trace and logs, buffered and written in batches,
// read back, and removed from a resume point on.
#include <string>
#include <vector>

#include "core/events/metric_keys.h"
#include "core/store/store_internal.h"

namespace pm {

using namespace store_detail;

// ------------------------------------------------------------------------------------------
// removing rows (a resumed run records again from its checkpoint)

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

double RunStore::lastActivity(int64_t run) const {
  Stmt q(db_, path_,
         "SELECT MAX(COALESCE((SELECT MAX(wall_time) FROM metrics WHERE run_id = ?1 AND key != ?2), 0), "
         "COALESCE((SELECT finished_at FROM runs WHERE id = ?1), 0))");
  q.bindInt(1, run).bindText(2, metric::kTimePaused);
  return q.step() && !q.isNull(0) ? q.dbl(0) : 0.0;
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
