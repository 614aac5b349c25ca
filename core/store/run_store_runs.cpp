// The run store's runs: creating them, their status and fields, listing and reading them back,
// sweeps' definitions, and marking the runs of dead launchers interrupted.
#include <signal.h>
#include <sqlite3.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/events/metric_keys.h"
#include "core/store/run_checkpoints.h"
#include "core/store/run_store.h"
#include "core/store/store_internal.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

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

// The model.name of a run whose model is read from a TorchScript file (core/config's
// kTorchScriptModel; the store does not depend on the experiment format).
constexpr const char* kTorchScriptModelName = "torchscript";

// The last component of `path` ("/x/y/cnn.pt" -> "cnn.pt"); "" when it has none ("", "/x/").
std::string fileNameOf(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// Fills the denormalised listing fields from config_json; the model's name needs model_file read first.
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
    if (r.model == kTorchScriptModelName) {
      // Listed by its file's name: the file recorded for the run, else the one its config names.
      std::string file = fileNameOf(r.model_file.path);
      if (file.empty()) {
        auto p = model->find("path");
        if (p != model->end() && p->is_string()) file = fileNameOf(p->get<std::string>());
      }
      if (!file.empty()) r.model = file;
    }
  }
}

// Columns read by readRun(); final metrics are the value at the highest step (latest row on ties).
const std::string kRunColumns =
    "r.id, r.name, r.created_at, r.started_at, r.finished_at, r.status, r.status_message, r.config_json, "
    "r.host, r.revision, r.notes, r.sweep_id, r.launcher_pid, "
    "(SELECT m.value FROM metrics m WHERE m.run_id = r.id AND m.key = 'train/loss' "
    " ORDER BY m.step DESC, m.rowid DESC LIMIT 1), "
    "(SELECT m.value FROM metrics m WHERE m.run_id = r.id AND m.key = 'eval/accuracy' "
    " ORDER BY m.step DESC, m.rowid DESC LIMIT 1), "
    "r.partition_units, r.halt_step, r.resume_step, r.model_file, r.build, r.stage_ranks, "
    "(SELECT MAX(m.value) FROM metrics m WHERE m.run_id = r.id AND m.key = '" + std::string(metric::kTimePaused) + "')";

RunRecord readRun(const Stmt& q) {
  RunRecord r;
  r.id = q.i64(0);
  r.name = q.text(1);
  r.created_at = q.dbl(2);
  r.started_at = q.dbl(3);
  r.finished_at = q.dbl(4);
  r.status_message = q.text(6);
  const std::string status = q.text(5);
  if (const auto st = parseRunStatus(status)) {
    r.status = *st;
  } else {  // a store edited by hand (the store writes only RunStatus names): such a run reads as failed, saying why
    r.status = RunStatus::Failed;
    r.status_message = "unknown status \"" + status + "\" in the store" + (r.status_message.empty() ? "" : ": " + r.status_message);
  }
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
  r.model_file = modelFileFromText(q.text(18));
  r.build = engineBuildFromJson(nlohmann::json::parse(q.text(19), nullptr, false));
  r.stage_ranks = stageRanksFromText(q.text(20));
  if (r.stage_ranks.size() != r.partition.size()) r.stage_ranks.clear();
  r.paused_s = q.isNull(21) ? 0.0 : q.dbl(21);
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

std::string stageRanksText(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  return nlohmann::json(ranks).dump();
}

std::vector<int> stageRanksFromText(const std::string& text) {
  std::vector<int> out;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return out;
  for (const auto& r : j) {
    if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > 65535) return {};
    out.push_back(r.get<int>());
  }
  return out;
}

std::string modelFileText(const FileDigest& file) {
  if (file.path.empty()) return "";
  const nlohmann::json j = {{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}};
  // JSON text is UTF-8: bytes of a path that are not are written as U+FFFD (size and digest stay exact).
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

FileDigest modelFileFromText(const std::string& text) {
  if (text.empty()) return {};
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  const auto path = j.find("path"), size = j.find("size"), sha = j.find("sha256");
  if (path == j.end() || !path->is_string() || size == j.end() || !size->is_number_integer() || sha == j.end() ||
      !sha->is_string())
    return {};
  if (size->is_number_unsigned() && size->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return {};
  FileDigest out;
  out.path = path->get<std::string>();
  out.size = size->get<int64_t>();
  out.sha256 = sha->get<std::string>();
  if (out.path.empty() || out.size < 0) return {};
  return out;
}

}  // namespace store_detail

bool isTerminalStatus(const std::string& s) {
  const auto st = parseRunStatus(s);
  return st && isTerminal(*st);
}

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
  Stmt q(db_, path_, "UPDATE runs SET status = ?, started_at = ?, launcher_pid = ?, launcher_started = ? WHERE id = ?");
  q.bindText(1, toString(RunStatus::Running))
      .bindDouble(2, wallClockSeconds())
      .bindInt(3, launcherPid)
      .bindDouble(4, processStartTime(static_cast<long>(launcherPid)))
      .bindInt(5, run)
      .run();
  requireChanged(db_, path_, run);
}

bool RunStore::claimForResume(int64_t run, int64_t launcherPid, int64_t resumeStep) {
  requireWritable(readOnly_, path_);
  // One statement: the status test and the change are one step for SQLite (a write takes the
  // database's write lock), so of two resumes racing for a run exactly one changes it.
  Stmt q(db_, path_,
         "UPDATE runs SET status = ?, status_message = '', finished_at = 0, halt_step = 0, resume_step = ?, launcher_pid = ?, "
         "launcher_started = ? WHERE id = ? AND status IN (?, ?, ?)");
  q.bindText(1, toString(RunStatus::Running))
      .bindInt(2, resumeStep)
      .bindInt(3, launcherPid)
      .bindDouble(4, processStartTime(static_cast<long>(launcherPid)))
      .bindInt(5, run)
      .bindText(6, toString(RunStatus::Stopped))
      .bindText(7, toString(RunStatus::Failed))
      .bindText(8, toString(RunStatus::Interrupted))
      .run();
  if (sqlite3_changes(db_) > 0) return true;
  if (!getRun(run)) throw StoreError(path_, "run " + std::to_string(run) + " does not exist");
  return false;
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

void RunStore::setPartition(int64_t run, const std::vector<std::pair<int, int>>& stageUnits, std::vector<int> stageRanks) {
  requireWritable(readOnly_, path_);
  if (stageRanks.empty())
    for (size_t s = 0; s < stageUnits.size(); ++s) stageRanks.push_back(static_cast<int>(s));
  if (stageRanks.size() != stageUnits.size())
    throw StoreError(path_, "run " + std::to_string(run) + ": " + std::to_string(stageRanks.size()) + " stage ranks for " +
                                std::to_string(stageUnits.size()) + " stages");
  Stmt q(db_, path_, "UPDATE runs SET partition_units = ?, stage_ranks = ? WHERE id = ?");
  q.bindText(1, partitionText(stageUnits)).bindText(2, stageRanksText(stageRanks)).bindInt(3, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::setHaltStep(int64_t run, int64_t step) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET halt_step = ? WHERE id = ?");
  q.bindInt(1, step).bindInt(2, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::setBuild(int64_t run, const EngineBuild& build) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET build = ? WHERE id = ?");
  q.bindText(1, engineBuildJson(build).dump()).bindInt(2, run).run();
  requireChanged(db_, path_, run);
}

void RunStore::setModelFile(int64_t run, const FileDigest& file) {
  requireWritable(readOnly_, path_);
  Stmt q(db_, path_, "UPDATE runs SET model_file = ? WHERE id = ?");
  q.bindText(1, modelFileText(file)).bindInt(2, run).run();
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

bool RunStore::claimSweep(const std::string& id, int64_t pid, std::string* holder) {
  requireWritable(readOnly_, path_);
  int64_t heldBy = 0;
  std::string heldOn;
  {
    Stmt q(db_, path_, "SELECT holder_pid, holder_host FROM sweeps WHERE id = ?");
    q.bindText(1, id);
    if (!q.step()) throw StoreError(path_, "no sweep \"" + id + "\"", true);
    heldBy = q.i64(0);
    heldOn = q.text(1);
  }
  // A holder of this host whose process is gone holds nothing any more.
  const bool gone = heldBy > 0 && heldBy <= std::numeric_limits<pid_t>::max() && heldOn == hostName() &&
                    ::kill(static_cast<pid_t>(heldBy), 0) != 0 && errno == ESRCH;
  if (heldBy == 0 || gone) {
    Stmt u(db_, path_, "UPDATE sweeps SET holder_pid = ?, holder_host = ? WHERE id = ? AND holder_pid = ?");
    u.bindInt(1, pid).bindText(2, hostName()).bindText(3, id).bindInt(4, heldBy).run();
    if (sqlite3_changes(db_) > 0) return true;
    return claimSweep(id, pid, holder);  // another process changed it between the two statements: look again
  }
  if (holder) *holder = "process " + std::to_string(heldBy) + " on " + heldOn;
  return false;
}

void RunStore::releaseSweep(const std::string& id, int64_t pid) {
  requireWritable(readOnly_, path_);
  Stmt u(db_, path_, "UPDATE sweeps SET holder_pid = 0, holder_host = '' WHERE id = ? AND holder_pid = ? AND holder_host = ?");
  u.bindText(1, id).bindInt(2, pid).bindText(3, hostName()).run();
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

std::vector<std::pair<int64_t, int64_t>> RunStore::deadRuns() const {
  std::vector<std::pair<int64_t, int64_t>> dead;  // run, pid
  Stmt q(db_, path_, "SELECT id, launcher_pid, launcher_started FROM runs WHERE status = ? AND host = ?");
  q.bindText(1, toString(RunStatus::Running)).bindText(2, hostName());
  while (q.step()) {
    const int64_t pid = q.i64(1);
    if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) continue;
    const bool exists = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;  // (or not ours to signal)
    // A process with that pid that started at another time is not the launcher: the pid was
    // reused after it died (1 s of slack: the boot time in /proc is whole seconds).
    const double recorded = q.dbl(2);
    const double now = exists && recorded > 0 ? processStartTime(static_cast<long>(pid)) : 0;
    const bool reused = recorded > 0 && now > 0 && std::fabs(now - recorded) > 1.0;
    if (exists && !reused) continue;
    dead.emplace_back(q.i64(0), pid);
  }
  return dead;
}

std::string RunStore::deadLauncherMessage(int64_t pid) { return "launcher process " + std::to_string(pid) + " is gone"; }

int RunStore::markDeadRunsInterrupted() {
  if (readOnly_) return 0;
  int changed = 0;
  for (const auto& [run, pid] : deadRuns()) {
    Stmt u(db_, path_,
           "UPDATE runs SET status = ?, status_message = ?, finished_at = ? "
           "WHERE id = ? AND status = ? AND launcher_pid = ?");
    u.bindText(1, toString(RunStatus::Interrupted))
        .bindText(2, deadLauncherMessage(pid))
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
