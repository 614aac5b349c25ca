#pragma once
// The run store: every run, its metrics, per-stage metrics, schedule trace and log, in SQLite.
// WAL mode, busy timeout, foreign keys, a schema_version table with forward migrations.
// Thread-safety: one RunStore object per thread; several processes may open the same file
// (one writer per run, any number of readers). All SQL uses bound parameters.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/events/run_status.h"
#include "core/util/file_digest.h"
#include "core/util/system_info.h"

struct sqlite3;

namespace pm {

inline constexpr int kStoreSchemaVersion = 8;

struct RunRecord {
  int64_t id = 0;
  std::string name;
  double created_at = 0, started_at = 0, finished_at = 0;  // seconds since epoch, 0 = not yet
  // Parsed once when the row is read; the database holds toString(status) (created | running |
  // finished | stopped | failed | diverged | interrupted). A row whose text names no RunStatus
  // (only a store edited by hand: the store writes no other names, and imports copy its own
  // kind's rows) reads as Failed, with status_message saying which text it held (readRun).
  RunStatus status = RunStatus::Created;
  std::string status_message;   // why it failed / diverged / stopped
  std::string config_json;      // normalised experiment JSON
  std::string host;
  std::string revision;
  std::string notes;
  std::vector<std::string> tags;
  std::string sweep_id;         // "" when not part of a sweep
  int64_t launcher_pid = 0;     // process that records the run (to detect dead launchers)
  // The partition the run trained with, as its stages reported it: stage s held the model's units
  // [partition[s].first, partition[s].second). Empty when none was recorded (a run that ended
  // before its stages started).
  std::vector<std::pair<int, int>> partition;
  // The rank (worker process) that ran each stage: one stage per rank (s on rank s), or several
  // chunks per rank (interleaved 1F1B in a loop, ZB-V in a V). Empty with no partition.
  std::vector<int> stage_ranks;
  int64_t halt_step = 0;        // a stopped run: the step its stop checkpoint was taken after (0: none)
  int64_t resume_step = 0;      // a resumed run: the checkpoint step its latest session continued from (0: never resumed)
  double paused_s = 0;          // seconds between its sessions, all resumes together (metric time/paused_s; 0: never resumed)
  // A run whose model is read from a TorchScript file: that file's path, size and SHA-256 as
  // recorded for the run, so that a later run can tell whether it trains the same model. Empty
  // path: none (a zoo model, or a run recorded before the store kept it).
  FileDigest model_file;
  // What the engine that ran it was built on (the run_started event's `build`): LibTorch release,
  // CUDA version ("" for none) and the communication backends compiled in. Empty torch: not
  // recorded (a run from before the store kept it).
  EngineBuild build;
  // Denormalised for listing: schedule, model, stages, microbatches, and how the partition was
  // decided (pipeline.partition.method: parameters | time | explicit), from config_json ("" / 0
  // when absent). A TorchScript run's model is its file's name without directories ("cnn.pt":
  // model_file's, else the config's model.path), "torchscript" when neither names one.
  std::string schedule, model, partition_method;
  int stages = 0, microbatches = 0;
  // Last recorded value of the run's headline metrics (NaN when absent).
  double final_loss = 0, final_accuracy = 0;
};

struct MetricPoint {
  int64_t step;
  double wall_time;
  double value;
};

struct StageMetricPoint {
  int stage;
  int64_t step;
  double value;
};

struct TraceRecord {
  int stage;
  std::string action;  // F, B, S (step), send, recv, ...
  int microbatch;
  double start, end;   // seconds since the run started
};

struct LogRecord {
  double time;
  std::string level;    // info | warning | error
  std::string message;
};

struct RunFilter {
  std::string status;   // "" = any
  std::string tag;      // "" = any
  std::string sweep_id; // "" = any
  std::string text;     // substring of the name, "" = any
};

// A run in the status of this name has ended (finished, stopped, failed, diverged, interrupted):
// its rows are final. "created", "running" and unknown names are not terminal. (A
// RunRecord's status is already typed: isTerminal(r.status).)
bool isTerminalStatus(const std::string& status);

class RunStore {
 public:
  // Opens (creating if needed) the store at `path`; ":memory:" works for tests.
  // Throws StoreError naming the file when it is not a SQLite database, is from a newer
  // schema version, or cannot be opened/created. A store from an older version is migrated.
  // readOnly: never writes (no migration, no creation).
  explicit RunStore(const std::string& path, bool readOnly = false);
  // How a read-only connection opens the file: as SQLite reads it, or as immutable.
  enum class ReadMode { Shared, Immutable };
  RunStore(const std::string& path, ReadMode mode);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const { return path_; }
  int schemaVersion() const;

  // ---- runs
  int64_t createRun(const std::string& name, const std::string& configJson, const std::vector<std::string>& tags = {},
                    const std::string& notes = "", const std::string& sweepId = "");
  void markRunning(int64_t run, int64_t launcherPid);
  // A resumed run: running again under a new launcher, from its checkpoint after `resumeStep`
  // (recorded as resume_step); started_at stays, the status message, finished_at and halt_step
  // are cleared.
  // Claims a stopped, failed or interrupted run for a resume from `resumeStep`, atomically: the run
  // becomes running under `launcherPid`. False when it is not resumable (any more): another resume
  // claimed it first, or it finished. Throws StoreError when there is no such run.
  bool claimForResume(int64_t run, int64_t launcherPid, int64_t resumeStep);
  // Before resuming from the checkpoint after `step` minibatches: removes what was recorded
  // after it (metrics and stage metrics of later steps, and evaluations at that step, which
  // come after the checkpoint), so that the resumed curve joins without duplicates.
  void truncateAfterStep(int64_t run, int64_t step);
  // Sets the status (and finished_at for terminal statuses).
  void setStatus(int64_t run, RunStatus status, const std::string& message = "");
  // The same by name; StoreError for a name that is no RunStatus.
  void setStatus(int64_t run, const std::string& status, const std::string& message = "");
  // The partition the run's stages trained with and the rank of each (RunRecord::partition,
  // stage_ranks; empty ranks: stage s on rank s); written when they report it.
  void setPartition(int64_t run, const std::vector<std::pair<int, int>>& stageUnits, std::vector<int> stageRanks = {});
  // A stopped run: the step its stop checkpoint was taken after (RunRecord::halt_step).
  void setHaltStep(int64_t run, int64_t step);
  // The TorchScript file the run's model is read from (RunRecord::model_file); an empty path clears it.
  void setModelFile(int64_t run, const FileDigest& file);
  // What the engine was built on (RunRecord::build).
  void setBuild(int64_t run, const EngineBuild& build);
  void setNotes(int64_t run, const std::string& notes);
  void setTags(int64_t run, const std::vector<std::string>& tags);
  void deleteRun(int64_t run);  // with all its rows and its checkpoints (run_checkpoints.h)
  // Copies every run of the store file `other` (a store of this schema version, e.g. one made on
  // another machine) into this store with new ids, with all its rows and tags, in one
  // transaction: all or nothing. Runs still "running" or "created" there arrive as "interrupted"
  // (their launcher is not ours). `other` is only read. Returns (old id, new id) pairs in old id
  // order. StoreError names the file: missing, damaged, foreign, another schema version, or
  // this store itself. A run this store already has (same name, creation time, host and
  // configuration: imported before) is skipped; `alreadyHere` receives (old id, id here) for those.
  // A copy made while its source was still going (recorded "interrupted", "imported while ...")
  // is refreshed in place once the source has ended: its fields and rows replaced by the
  // source's, under the same id here; `refreshed` receives (old id, id here) for those.
  std::vector<std::pair<int64_t, int64_t>> importRuns(const std::string& other,
                                                      std::vector<std::pair<int64_t, int64_t>>* alreadyHere = nullptr,
                                                      std::vector<std::pair<int64_t, int64_t>>* refreshed = nullptr);
  std::optional<RunRecord> getRun(int64_t run) const;

  // ---- sweeps: the definition (JSON) a `pipemare sweep` was started with, by sweep id. Recording
  // an id twice keeps the first definition (a resumed sweep does not change its grid).
  void recordSweep(const std::string& id, const std::string& definitionJson);
  // Takes sweep `id` for process `pid` of this host, in one conditional change: true when it was
  // free or its holder is a process of this host that does not exist; false when another
  // process holds it (`holder`, when given, says which: "process 123 on host"). Throws StoreError
  // when there is no such sweep.
  bool claimSweep(const std::string& id, int64_t pid, std::string* holder = nullptr);
  // Lets go of a sweep this process holds (nothing when another holds it).
  void releaseSweep(const std::string& id, int64_t pid);
  // The recorded definition; nullopt for an unknown id (and for sweeps of older builds, which
  // recorded only the runs' sweep_id).
  std::optional<std::string> sweepDefinition(const std::string& id) const;
  std::vector<RunRecord> listRuns(const RunFilter& filter = {}) const;
  // Runs in status "running" whose launcher process is gone (same host) become
  // "interrupted". Returns how many were changed. Called on open by front ends.
  int markDeadRunsInterrupted();
  // The "running" runs of this host whose launcher process is gone, with its pid (what
  // markDeadRunsInterrupted() marks; a reader that must not write shows them interrupted).
  std::vector<std::pair<int64_t, int64_t>> deadRuns() const;
  static std::string deadLauncherMessage(int64_t pid);
  // Opens for writing when the file allows it (so dead runs get marked), else read-only: for
  // commands that only read, which must work on a read-only store file too.
  static std::unique_ptr<RunStore> openForReading(const std::string& path);
  // For commands that only read (runs list, runs show, compare, export, plan --against): a
  // read-only connection that never writes, so they work on a read-only file system and on a full
  // disk. Where SQLite cannot open the store read-only (a write-ahead-log store on a read-only file
  // system: its index file cannot be made), the file is read as immutable (no locks; a log left
  // beside it is not read, and immutable() says so). A store of an older schema is migrated first,
  // which writes; where that cannot be done the error says why (exit 2).
  static std::unique_ptr<RunStore> openReadOnly(const std::string& path);
  // A store of an older schema at `path` migrated, so that a read-only connection can then read
  // it (StoreError, exit 2, when it cannot be written); anything else is left for the reader to
  // say.
  static void migrateIfOlder(const std::string& path);
  // Moves the write-ahead log's pages into the store file and empties the log (SQLite's
  // wal_checkpoint(TRUNCATE)): room in the log for a small write after a big one was refused (a
  // file size limit, a disk that filled). False when it could not (another reader, no room in the
  // store file either).
  bool compactLog();
  // "" while the file this connection opened is still at path(); else what happened to it ("was
  // deleted", "was replaced by another file"): what was written since went with the old file.
  std::string fileProblem() const;
  // True when this connection reads the file as immutable (see openReadOnly).
  bool immutable() const { return immutable_; }

  // ---- batched writes: appended rows are buffered and written in one transaction by flush()
  // (and automatically every 5000 rows).
  void appendMetric(int64_t run, const std::string& key, int64_t step, double wallTime, double value);
  // Removes the trace rows of `stage` that start at `from` or later (a resumed stage traces the
  // minibatches after its checkpoint again; the first session's rows of them would be duplicates).
  void deleteTraceFrom(int64_t run, int stage, double from);
  void appendStageMetric(int64_t run, int stage, int64_t step, const std::string& key, double value);
  void appendTrace(int64_t run, const TraceRecord& rec);
  void appendLog(int64_t run, double time, const std::string& level, const std::string& message);
  void flush();
  size_t pendingRows() const;

  // ---- reads
  std::vector<std::string> metricKeys(int64_t run) const;
  std::vector<MetricPoint> loadMetric(int64_t run, const std::string& key) const;
  // When the run was last seen doing anything: the latest of its end (finished_at) and its
  // metrics' wall times (a session that crashed has no end); 0 when it has neither.
  double lastActivity(int64_t run) const;
  std::vector<std::string> stageMetricKeys(int64_t run) const;
  std::vector<StageMetricPoint> loadStageMetric(int64_t run, const std::string& key) const;
  std::vector<TraceRecord> loadTrace(int64_t run) const;
  std::vector<LogRecord> loadLog(int64_t run) const;
  int64_t countRows(const std::string& table, int64_t run) const;  // table in {metrics, stage_metrics, trace, logs}

  sqlite3* handle() const { return db_; }  // for tests (raw checks such as PRAGMA integrity_check)

 private:
  struct Pending;
  void exec(const std::string& sql) const;
  void migrate();
  std::string path_;
  bool readOnly_;
  bool immutable_ = false;
  unsigned long long fileDev_ = 0, fileIno_ = 0;  // the file opened (0: in memory)
  void openFile();  // the constructors' work: opens path_ as readOnly_ and immutable_ say
  sqlite3* db_ = nullptr;
  std::unique_ptr<Pending> pending_;
};

// The schema of version 1 (kept for migration tests and the migration path).
const char* storeSchemaV1();
// The DDL of an empty store at schema `version` (1..kStoreSchemaVersion): version 1 and the
// migrations' DDL up to it, then that version recorded. For migration tests; the data each
// migration converts in C++ is not part of it.
std::string storeSchemaAt(int version);

}  // namespace pm
