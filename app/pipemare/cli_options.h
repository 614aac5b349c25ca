#pragma once
// The `pipemare` command line: one function per subcommand declares its options on the CLI::App
// and binds them to that subcommand's struct below; main.cpp parses and dispatches. The --help
// text (tests/app/cli_test.cpp, the help2man pages) follows the order in which options and
// subcommands are added, so addCommands keeps that order.
//
// CLI11 binds options by reference: a Cli must not move or be destroyed while its App is in use.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/cli/commands.h"
#include "core/cli/plan.h"

namespace pm::app {

// Run ids are taken as text and read with pm::parseRunId once parsing is done (main.cpp), so that
// a malformed or out-of-range id is reported in the project's words with the argument that held
// it (exit 2). The *Text members below hold them until then.

struct RunCommand {
  CLI::App* cmd = nullptr;
  pm::cli::RunOptions options;
  std::string resumeText;           // --resume RUN, read into options.resume
  CLI::Option* resume = nullptr;
};

struct SweepCommand {
  CLI::App* cmd = nullptr;
  pm::cli::SweepOptions options;
};

struct WorkerCommand {
  CLI::App* cmd = nullptr;
  pm::cli::WorkerArgs options;
};

struct ValidateCommand {
  CLI::App* cmd = nullptr;
  std::string file;
  std::vector<std::string> overrides;  // --set
  bool json = false;
};

// `runs` and its subcommands list, show, tag, note, delete and import.
struct RunsCommands {
  CLI::App* cmd = nullptr;
  CLI::App *listCmd = nullptr, *showCmd = nullptr, *tagCmd = nullptr, *noteCmd = nullptr, *deleteCmd = nullptr,
           *importCmd = nullptr;
  pm::cli::ListOptions listOptions;
  std::string runIdText;  // RUN of show, tag, note and delete (one of them is parsed at most)
  int64_t runId = 0;      // runIdText, read after parsing
  bool showJson = false;
  std::vector<std::string> tags;
  std::string noteText;
  std::string importFile;
};

struct ModelsCommand {
  CLI::App* cmd = nullptr;
  pm::cli::ModelsOptions options;
};

// `version`: a --json flag only.
struct JsonFlagCommand {
  CLI::App* cmd = nullptr;
  bool json = false;
};

struct CompareCommand {
  CLI::App* cmd = nullptr;
  pm::cli::CompareOptions options;
  std::vector<std::string> runTexts;  // RUN..., read into options.runs
  std::string baselineText;           // --baseline RUN, read into options.baseline
  CLI::Option* baseline = nullptr;
};

struct ExportCommand {
  CLI::App* cmd = nullptr;
  pm::cli::ExportOptions options;
  std::string runText;  // RUN, read into options.run
};

struct PlanCommand {
  CLI::App* cmd = nullptr;
  pm::cli::PlanOptions options;
  std::string againstText;  // --against RUN, read into againstRun
  CLI::Option* against = nullptr;
  int64_t againstRun = 0;
};

// Everything the command line binds: the top-level --db and each subcommand.
struct Cli {
  std::string db;
  RunCommand run;
  SweepCommand sweep;
  WorkerCommand worker;
  ValidateCommand validate;
  RunsCommands runs;
  ModelsCommand models;
  JsonFlagCommand version;
  CompareCommand compare;
  ExportCommand exportCmd;
  PlanCommand plan;
};

void addGlobalOptions(CLI::App& app, std::string& db);
void addRunCommand(CLI::App& app, RunCommand& run);
void addSweepCommand(CLI::App& app, SweepCommand& sweep);
void addWorkerCommand(CLI::App& app, WorkerCommand& worker);
void addValidateCommand(CLI::App& app, ValidateCommand& validate);
void addRunsCommand(CLI::App& app, RunsCommands& runs);
void addModelsCommand(CLI::App& app, ModelsCommand& models);
void addVersionCommand(CLI::App& app, JsonFlagCommand& version);
void addCompareCommand(CLI::App& app, CompareCommand& compare);
void addExportCommand(CLI::App& app, ExportCommand& exportCmd);
void addPlanCommand(CLI::App& app, PlanCommand& plan);

// All of the above, in the order of the --help text.
void addCommands(CLI::App& app, Cli& cli);

}  // namespace pm::app
