#pragma once
// The command-line verbs, callable from app/pipemare/main.cpp and from tests. Each returns the
// process exit code (0 ok, 1 run/engine failure, 2 usage/config/data error) and prints
// human-readable errors of the form "<place>: <problem>" on stderr. Each verb has its own source
// file in core/cli (run.cpp, sweep.cpp, validate.cpp, runs.cpp, models.cpp, version.cpp, export.cpp,
// compare.cpp, worker.cpp); `pipemare plan` is declared in plan.h and plan_against.h.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pm::cli {

struct RunOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set key=value
  std::string db;                      // "" = default store
  std::string name;                    // "" = experiment name
  std::string events;                  // "" | "stdout"
  bool quiet = false;                  // no progress output
  std::string saveState;               // save each stage's final parameters and buffers here
  std::vector<std::string> tags;       // extra tags (--tag)
  std::string sweepId;                 // set by `pipemare sweep` for its runs
  int64_t resume = 0;                  // --resume RUN: continue a stopped/failed/interrupted run
  // Multi-node: this launcher starts its share of the ranks; node 0 records the run.
  int nnodes = 1, nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  std::string secretFile;              // multi-node: the run secret (see core/runner/node_link.h)
};
int runCommand(const RunOptions& o, const std::atomic<bool>* stop);
// Throws ConfigError for a --tag the experiment format would refuse (empty, over 64 characters).
void checkTags(const std::vector<std::string>& tags);

// pipemare sweep FILE --grid key=v1,v2 [--grid ...] [--parallel J]: every point of the grid as
// its own `pipemare run` child process (J at a time), tagged with the sweep id and key=value.
struct SweepOptions {
  std::string file, db, name;
  std::vector<std::string> overrides;  // --set, applied to every point
  std::vector<std::string> grids;      // "key=v1,v2,..."
  std::vector<std::string> tags;       // --tag, added to every run
  int parallel = 1;
  std::string runner;                  // executable that runs one point ("" = this one)
  std::string resume;                  // a sweep id: run its points that have not run to their end
};
int sweepCommand(const SweepOptions& o, const std::atomic<bool>* stop);

// With --events stdout, an error before the run exists (bad experiment, store, usage) is an
// event on stdout too: the stream's only one, with before_run and exit_code.
void emitStartError(const std::exception& ex);

// `json`: {"valid": true, ...} on stdout, or {"error": {message, place, exit_code}} (cli_support.h).
int validateCommand(const std::string& file, const std::vector<std::string>& overrides, bool json = false);

struct ListOptions {
  std::string db, status, tag, sweep, text;
  bool json = false;
};
int runsListCommand(const ListOptions& o);
int runsShowCommand(const std::string& db, int64_t run, bool json);
int runsTagCommand(const std::string& db, int64_t run, const std::vector<std::string>& tags);
int runsNoteCommand(const std::string& db, int64_t run, const std::string& note);
int runsDeleteCommand(const std::string& db, int64_t run);
// Copies every run of the store file `other` into `db` with new ids (RunStore::importRuns).
int runsImportCommand(const std::string& db, const std::string& other);
// `pipemare models`: the zoo; with a file, that TorchScript model's units (output shapes for one
// sample of `data` (a tensor file) or of a float input of `inputShape` ("1,28,28"), when given).
struct ModelsOptions {
  bool json = false;
  std::string file, data, inputShape;
};
int modelsCommand(const ModelsOptions& o);
// pipemare version [--json]: version, revision, the BLAS library LibTorch loaded, the presets' folder.
int versionCommand(bool json);

// pipemare export RUN --csv DIR | --json FILE | --chrome-trace FILE (any combination).
struct ExportOptions {
  std::string db, csvDir, jsonFile, chromeTrace;
  int64_t run = 0;
};
int exportCommand(const ExportOptions& o);

// pipemare compare RUN RUN ... [--baseline RUN] [--target ACC] [--json]: final and best loss and
// accuracy, time to an accuracy target, throughput, per-stage utilization and peak memory, and
// ratios against the baseline (default: the first run).
struct CompareOptions {
  std::string db;
  std::vector<int64_t> runs;
  int64_t baseline = 0;
  double target = -1;  // eval/accuracy target; < 0 = the baseline's best accuracy minus 0.01
  bool json = false;
};
int compareCommand(const CompareOptions& o);

struct WorkerArgs {
  std::string config, masterAddr, saveState, checkpointDir, storeFile, modelSha256;
  int64_t resumeStep = 0;
  int rank = -1, worldSize = -1, masterPort = -1;
};
int workerCommand(const WorkerArgs& a);

}  // namespace pm::cli
