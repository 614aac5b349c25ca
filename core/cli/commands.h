#pragma once
// The command-line verbs, callable from app/pipemare/main.cpp and from tests. Each returns the
// process exit code (0 ok, 1 run/engine failure, 2 usage/config/data error) and prints
// human-readable errors of the form "<place>: <problem>" on stderr.
#include <atomic>
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
};
int runCommand(const RunOptions& o, const std::atomic<bool>* stop);

int validateCommand(const std::string& file, const std::vector<std::string>& overrides);

struct ListOptions {
  std::string db, status, tag, sweep, text;
  bool json = false;
};
int runsListCommand(const ListOptions& o);
int runsShowCommand(const std::string& db, int64_t run, bool json);
int runsTagCommand(const std::string& db, int64_t run, const std::vector<std::string>& tags);
int runsNoteCommand(const std::string& db, int64_t run, const std::string& note);
int runsDeleteCommand(const std::string& db, int64_t run);
int modelsCommand(bool json);

// pipemare export RUN --csv DIR | --json FILE | --chrome-trace FILE (any combination).
struct ExportOptions {
  std::string db, csvDir, jsonFile, chromeTrace;
  int64_t run = 0;
};
int exportCommand(const ExportOptions& o);

struct WorkerArgs {
  std::string config, masterAddr, saveState;
  int rank = -1, worldSize = -1, masterPort = -1;
};
int workerCommand(const WorkerArgs& a);

}  // namespace pm::cli
