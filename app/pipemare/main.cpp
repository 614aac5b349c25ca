// pipemare: the command-line front end of the engine. Parses arguments (the options of every
// subcommand are declared in cli_options.cpp) and calls core/cli.
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "cli_options.h"
#include "core/cli/commands.h"
#include "core/cli/plan.h"
#include "core/runner/worker_main.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/strings.h"
#include "core/cli/plan_against.h"
#include "core/util/system_info.h"

namespace {
std::atomic<bool> gStop{false};
extern "C" void onSignal(int) { gStop.store(true); }

// A usage error (or --help, exit 0): CLI11 prints it; usage errors exit 2.
int exitOnParseError(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  int rc = app.exit(e);
  // `run ... --events stdout`: a client reading only the stream learns why nothing ran.
  bool eventsOnStdout = false;
  for (int i = 1; i < argc; ++i)
    eventsOnStdout = eventsOnStdout || std::string(argv[i]) == "--events=stdout" ||
                     (std::string(argv[i]) == "--events" && i + 1 < argc && std::string(argv[i + 1]) == "stdout");
  if (rc != 0 && eventsOnStdout) pm::cli::emitStartError(pm::ConfigError("usage", e.what()));
  return rc == 0 ? 0 : 2;
}

// Fills what parsing leaves to defaults: the store of `run` and `runs list`, and experiment files.
void resolveDefaults(pm::app::Cli& cli) {
  if (cli.run.options.db.empty()) cli.run.options.db = cli.db;
  cli.runs.listOptions.db = cli.db;
  // An experiment may be a preset named without its path: `pipemare run quickstart` runs the
  // quickstart.json of the installed presets (of the source checkout, from the build tree).
  cli.run.options.file = pm::resolveExperimentArgument(cli.run.options.file);
  cli.sweep.options.file = pm::resolveExperimentArgument(cli.sweep.options.file);
  cli.validate.file = pm::resolveExperimentArgument(cli.validate.file);
  cli.plan.options.experiment = pm::resolveExperimentArgument(cli.plan.options.experiment);
  cli.plan.options.stability = pm::resolveExperimentArgument(cli.plan.options.stability);
}

// Reads the run ids given as text (see cli_options.h) of the parsed subcommand. False after
// reporting a malformed one (also as an event with `run --events stdout`): exit 2.
bool readRunIds(pm::app::Cli& cli) {
  try {
    const auto readRunId = [](const std::string& place, const std::string& text) {
      int64_t id = 0;
      const std::string problem = pm::parseRunId(text, id);
      if (!problem.empty()) throw pm::ConfigError(place, problem);
      return id;
    };
    if (cli.run.cmd->parsed() && cli.run.resume->count() > 0) cli.run.options.resume = readRunId("--resume", cli.run.resumeText);
    const pm::app::RunsCommands& runs = cli.runs;
    if (runs.showCmd->parsed() || runs.tagCmd->parsed() || runs.noteCmd->parsed() || runs.deleteCmd->parsed())
      cli.runs.runId = readRunId("RUN", runs.runIdText);
    if (cli.exportCmd.cmd->parsed()) cli.exportCmd.options.run = readRunId("RUN", cli.exportCmd.runText);
    if (cli.compare.cmd->parsed()) {
      for (const auto& text : cli.compare.runTexts) cli.compare.options.runs.push_back(readRunId("RUN", text));
      if (cli.compare.baseline->count() > 0) cli.compare.options.baseline = readRunId("--baseline", cli.compare.baselineText);
    }
    if (cli.plan.cmd->parsed() && cli.plan.against->count() > 0) cli.plan.againstRun = readRunId("--against", cli.plan.againstText);
  } catch (const pm::ConfigError& e) {
    if (cli.run.cmd->parsed() && cli.run.options.events == "stdout") pm::cli::emitStartError(e);
    std::fprintf(stderr, "error: %s\n", pm::escapeForTerminal(e.what()).c_str());
    return false;
  }
  return true;
}

// `run` and `sweep` stop cleanly on SIGINT/SIGTERM (through gStop).
void stopOnSignals() {
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  // A reader of --events stdout that goes away (a closed GUI) must not end the run.
  std::signal(SIGPIPE, SIG_IGN);
}

// Calls the verb of the parsed subcommand; its exit code is the process's.
int dispatch(pm::app::Cli& cli) {
  const std::string& db = cli.db;
  if (cli.run.cmd->parsed()) {
    stopOnSignals();
    return pm::cli::runCommand(cli.run.options, &gStop);
  }
  if (cli.sweep.cmd->parsed()) {
    if (cli.sweep.options.db.empty()) cli.sweep.options.db = db;
    stopOnSignals();
    return pm::cli::sweepCommand(cli.sweep.options, &gStop);
  }
  const pm::app::PlanCommand& plan = cli.plan;
  if (plan.cmd->parsed())
    return plan.againstRun > 0 ? pm::cli::planAgainstCommand(db, plan.againstRun, plan.options.json, plan.options.traceFile,
                                                              plan.options.traceMinibatches, plan.options.events)
                               : pm::cli::planCommand(plan.options);
  if (cli.compare.cmd->parsed()) {
    cli.compare.options.db = db;
    return pm::cli::compareCommand(cli.compare.options);
  }
  if (cli.exportCmd.cmd->parsed()) {
    cli.exportCmd.options.db = db;
    return pm::cli::exportCommand(cli.exportCmd.options);
  }
  if (cli.worker.cmd->parsed()) return pm::cli::workerCommand(cli.worker.options);
  if (cli.validate.cmd->parsed()) return pm::cli::validateCommand(cli.validate.file, cli.validate.overrides, cli.validate.json);
  const pm::app::RunsCommands& runs = cli.runs;
  if (runs.listCmd->parsed()) return pm::cli::runsListCommand(runs.listOptions);
  if (runs.showCmd->parsed()) return pm::cli::runsShowCommand(db, runs.runId, runs.showJson);
  if (runs.tagCmd->parsed()) return pm::cli::runsTagCommand(db, runs.runId, runs.tags);
  if (runs.noteCmd->parsed()) return pm::cli::runsNoteCommand(db, runs.runId, runs.noteText);
  if (runs.deleteCmd->parsed()) return pm::cli::runsDeleteCommand(db, runs.runId);
  if (runs.importCmd->parsed()) return pm::cli::runsImportCommand(db, runs.importFile);
  if (cli.models.cmd->parsed()) return pm::cli::modelsCommand(cli.models.options);
  if (cli.version.cmd->parsed()) return pm::cli::versionCommand(cli.version.json);
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  // A worker of `pipemare run` binds its life to the launcher before anything else.
  if (argc > 1 && std::string(argv[1]) == "worker") pm::bindToLauncher();
  pm::keepLargeAllocations();  // before any tensor: activations must not page-fault every step
  // Declared before the app that binds its members by reference, so that it outlives the app.
  pm::app::Cli cli;
  CLI::App app{"PipeMare Workbench engine: pipeline-parallel training experiments"};
  pm::app::addCommands(app, cli);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return exitOnParseError(app, e, argc, argv);
  }
  resolveDefaults(cli);
  if (!readRunIds(cli)) return 2;
  return dispatch(cli);
}
