// pipemare: the command-line front end of the engine. Parses arguments and calls core/cli.
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "core/cli/commands.h"
#include "core/cli/plan.h"
#include "core/events/run_status.h"
#include "core/runner/worker_main.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/strings.h"
#include "core/cli/plan_against.h"
#include "core/util/system_info.h"

namespace {
std::atomic<bool> gStop{false};
extern "C" void onSignal(int) { gStop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  // A worker of `pipemare run` binds its life to the launcher before anything else.
  if (argc > 1 && std::string(argv[1]) == "worker") pm::bindToLauncher();
  pm::keepLargeAllocations();  // before any tensor: activations must not page-fault every step
  CLI::App app{"PipeMare Workbench engine: pipeline-parallel training experiments"};
  app.require_subcommand(1);
  std::string db;
  app.add_option("--db", db, "run store (SQLite file); default $PIPEMARE_DB or $XDG_DATA_HOME/pipemare/runs.db");
  // Subcommands (made after this) hand options they do not know to the parent, so --db may come
  // before or after the subcommand: `pipemare --db X runs list` and `pipemare runs list --db X`.
  app.fallthrough();

  // Run ids are taken as text and read with pm::parseRunId once parsing is done, so that a malformed
  // or out-of-range id is reported in the project's words with the argument that held it (exit 2).
  std::string resumeText, runIdText, exportRunText, baselineText, againstText;
  std::vector<std::string> compareRunTexts;

  pm::cli::RunOptions run;
  auto* runCmd = app.add_subcommand("run", "validate, run and record an experiment");
  runCmd->add_option("file", run.file, "experiment file (JSON), or a preset's name (quickstart, tiny-synthetic)");
  auto* resumeOpt =
      runCmd->add_option("--resume", resumeText, "continue a stopped, failed or interrupted run from its latest checkpoint");
  runCmd->add_option("--nnodes", run.nnodes, "multi-node: number of launchers (one per node); node 0 records the run");
  runCmd->add_option("--node-rank", run.nodeRank, "multi-node: this launcher's node (0..nnodes-1)");
  runCmd->add_option("--master-addr", run.masterAddr, "multi-node: address of node 0 (TCPStore, event stream); default 127.0.0.1");
  runCmd->add_option("--master-port", run.masterPort, "multi-node: TCPStore port on node 0 (events use port+1)");
  runCmd->add_option("--secret-file", run.secretFile,
                     "multi-node: the run secret the launchers authenticate with (default: $PIPEMARE_RUN_SECRET, else "
                     "~/.config/pipemare/run-secret, made when absent)");
  runCmd->add_option("--set", run.overrides, "override a field: --set pipeline.stages=4 (repeatable)");
  runCmd->add_option("--name", run.name, "run name (default: the experiment's name)");
  runCmd->add_option("--events", run.events, "stream the JSON event lines: stdout")->check(CLI::IsMember({"stdout"}));
  runCmd->add_flag("--quiet", run.quiet, "no progress output");
  runCmd->add_option("--db", run.db, "run store (SQLite file)");
  runCmd->add_option("--save-state", run.saveState, "save each stage's final parameters and buffers (stage<s>.pt) here");
  runCmd->add_option("--tag", run.tags, "add a tag to the run (repeatable)");
  runCmd->add_option("--sweep-id", run.sweepId, "record the run as part of this sweep (set by `pipemare sweep`)");

  pm::cli::SweepOptions sweep;
  auto* sweepCmd = app.add_subcommand("sweep", "run a grid of variants of an experiment, J at a time");
  sweepCmd->add_option("file", sweep.file, "experiment file (JSON), or a preset's name");
  sweepCmd->add_option("--grid", sweep.grids, "swept field and its values: --grid optimizer.lr=0.01,0.05,0.1 (repeatable)");
  sweepCmd->add_option("--resume", sweep.resume,
                       "continue this sweep: run its points that never started, resume stopped ones from their checkpoints, "
                       "run failed ones again");
  sweepCmd->add_option("--set", sweep.overrides, "override a field in every run (repeatable)");
  sweepCmd->add_option("--parallel", sweep.parallel, "runs at a time (default 1)");
  sweepCmd->add_option("--tag", sweep.tags, "add a tag to every run (repeatable)");
  sweepCmd->add_option("--name", sweep.name, "run name prefix (default: the experiment's name)");
  sweepCmd->add_option("--db", sweep.db, "run store (SQLite file)");

  pm::cli::WorkerArgs worker;
  auto* workerCmd = app.add_subcommand("worker", "one stage process of a real run (started by `run`, srun or mpirun)");
  workerCmd->add_option("--config", worker.config, "experiment file (JSON)")->required();
  workerCmd->add_option("--rank", worker.rank, "rank = stage index (default: $RANK)");
  workerCmd->add_option("--world-size", worker.worldSize, "number of stages (default: $WORLD_SIZE)");
  workerCmd->add_option("--master-addr", worker.masterAddr, "TCPStore address (default: $MASTER_ADDR or 127.0.0.1)");
  workerCmd->add_option("--master-port", worker.masterPort, "TCPStore port (default: $MASTER_PORT)");
  workerCmd->add_option("--store-file", worker.storeFile, "single node: rendezvous through this file instead of a TCPStore");
  workerCmd->add_option("--save-state", worker.saveState, "save this stage's final parameters and buffers here");
  workerCmd->add_option("--checkpoint-dir", worker.checkpointDir, "write checkpoints under this directory");
  workerCmd->add_option("--resume-step", worker.resumeStep, "restore this stage from the checkpoint after this step");

  std::string validateFile;
  std::vector<std::string> validateSets;
  auto* validateCmd = app.add_subcommand("validate", "check an experiment file without running it");
  validateCmd->add_option("file", validateFile, "experiment file (JSON), or a preset's name")->required();
  validateCmd->add_option("--set", validateSets, "override a field (repeatable)");

  auto* runsCmd = app.add_subcommand("runs", "list and manage recorded runs");
  runsCmd->require_subcommand(1);
  pm::cli::ListOptions list;
  auto* listCmd = runsCmd->add_subcommand("list", "list runs");
  std::vector<std::string> statusNames;  // the store's names, as RunFilter::status takes them
  for (pm::RunStatus s : {pm::RunStatus::Created, pm::RunStatus::Running, pm::RunStatus::Finished, pm::RunStatus::Stopped,
                          pm::RunStatus::Diverged, pm::RunStatus::Failed, pm::RunStatus::Interrupted})
    statusNames.push_back(pm::toString(s));
  listCmd->add_option("--status", list.status, "only runs with this status")->check(CLI::IsMember(statusNames));
  listCmd->add_option("--tag", list.tag, "only runs with this tag");
  listCmd->add_option("--sweep", list.sweep, "only runs of this sweep");
  listCmd->add_option("--text", list.text, "only runs whose name contains this text");
  listCmd->add_flag("--json", list.json, "print JSON");
  bool showJson = false;
  auto* showCmd = runsCmd->add_subcommand("show", "show one run");
  showCmd->add_option("run", runIdText, "run id")->required();
  showCmd->add_flag("--json", showJson, "print JSON");
  std::vector<std::string> tags;
  auto* tagCmd = runsCmd->add_subcommand("tag", "replace a run's tags");
  tagCmd->add_option("run", runIdText, "run id")->required();
  tagCmd->add_option("tags", tags, "tags");
  std::string note;
  auto* noteCmd = runsCmd->add_subcommand("note", "set a run's notes");
  noteCmd->add_option("run", runIdText, "run id")->required();
  noteCmd->add_option("text", note, "notes")->required();
  auto* deleteCmd = runsCmd->add_subcommand("delete", "delete a run and all its data");
  deleteCmd->add_option("run", runIdText, "run id")->required();
  std::string importFile;
  auto* importCmd = runsCmd->add_subcommand("import", "copy every run of another store file into this one (new ids)");
  importCmd->add_option("file", importFile, "the other run store (SQLite file); only read")->required();

  bool modelsJson = false;
  auto* modelsCmd = app.add_subcommand("models", "list the model zoo with parameter counts and units");
  modelsCmd->add_flag("--json", modelsJson, "print JSON");

  bool versionJson = false;
  auto* versionCmd =
      app.add_subcommand("version", "print the version, the revision, the BLAS library LibTorch loaded and the presets' folder");
  versionCmd->add_flag("--json", versionJson, "print JSON");

  pm::cli::CompareOptions compare;
  auto* compareCmd = app.add_subcommand("compare", "compare runs: loss, accuracy, time to target, throughput, utilization, memory");
  compareCmd->add_option("runs", compareRunTexts, "run ids")->required();
  auto* baselineOpt = compareCmd->add_option("--baseline", baselineText, "ratios against this run (default: the first)");
  compareCmd->add_option("--target", compare.target, "eval accuracy target for 'time to target' (default: baseline best - 0.01)");
  compareCmd->add_flag("--json", compare.json, "print JSON");

  pm::cli::ExportOptions exportOpts;
  auto* exportCmd = app.add_subcommand("export", "export a run: CSV files, one JSON file, or a Chrome trace (Perfetto)");
  exportCmd->add_option("run", exportRunText, "run id")->required();
  exportCmd->add_option("--csv", exportOpts.csvDir, "write metrics.csv, stage_metrics.csv, trace.csv, log.csv, run.json here");
  exportCmd->add_option("--json", exportOpts.jsonFile, "write everything as one JSON file");
  exportCmd->add_option("--chrome-trace", exportOpts.chromeTrace, "write the measured schedule trace (chrome://tracing, Perfetto)");

  pm::cli::PlanOptions plan;
  auto* planCmd = app.add_subcommand("plan", "predict utilization, delays, memory and the timeline of every schedule");
  planCmd->add_option("--model", plan.model, "model of the zoo (default resnet50)");
  planCmd->add_option("--stages", plan.stages, "P (default: one stage per weight layer / unit)");
  planCmd->add_option("--microbatches", plan.microbatches, "N");
  planCmd->add_option("--optimizer", plan.optimizer, "sgd | sgd-momentum | adam");
  planCmd->add_option("--timing", plan.timing, "paper | 1f1b (default paper; with --experiment, its pipeline.timing)");
  planCmd->add_option("--granularity", plan.granularity, "layers (one stage per weight layer) | units (engine partition)");
  planCmd->add_flag("--json", plan.json, "print JSON");
  planCmd->add_option("--trace", plan.traceFile, "write the simulated timeline of --schedule as a Chrome trace");
  planCmd->add_option("--schedule", plan.schedule, "schedule of the trace (default pipemare; with --experiment, the design's)");
  planCmd->add_option("--batch", plan.batch, "samples per minibatch (default N)");
  planCmd->add_option("--context", plan.context, "sequence length of token models (charlm; default 128)");
  planCmd->add_option("--partition", plan.partition, "units: parameters (default, as the engine) | flops (stand-in for time)");
  planCmd->add_option("--boundaries", plan.boundaries, "units: explicit stage boundaries, e.g. --boundaries 2,4")->delimiter(',');
  planCmd->add_option("--update-interval", plan.updateInterval, "pipedream microbatches per step (default N)");
  planCmd->add_option("--warmup-fraction", plan.warmupFraction,
                      "pipemare: share of the minibatches run first as gpipe (warm-up), for the hybrid's utilization");
  planCmd->add_option("--m", plan.m, "pipedream-2bw microbatches per step (default max(N, P))");
  planCmd->add_option("--trace-minibatches", plan.traceMinibatches, "minibatches simulated for the trace");
  planCmd->add_option("--flops", plan.flopsPerSecond, "FLOP/s per stage for simulated costs");
  planCmd->add_option("--link-latency", plan.linkLatency, "seconds per message");
  planCmd->add_option("--link-bandwidth", plan.linkBandwidth, "bytes per second (0 = infinite)");
  auto* experimentOpt = planCmd->add_option(
      "--experiment", plan.experiment,
      "plan this experiment file's design (model, stages, microbatches, batch, optimizer, timing, schedule, partition, "
      "context, update interval, warm-up) instead of the options that give it");
  planCmd->add_option("--set", plan.overrides, "with --experiment: override a field, --set pipeline.stages=4 (repeatable)")
      ->needs(experimentOpt);
  // The experiment is the design: a design option beside --experiment would be silently replaced.
  for (const char* name : {"--model", "--stages", "--microbatches", "--optimizer", "--granularity", "--schedule", "--batch",
                           "--context", "--partition", "--boundaries", "--update-interval", "--warmup-fraction", "--m"})
    experimentOpt->excludes(planCmd->get_option(name));
  auto* against = planCmd->add_option(
      "--against", againstText,
      "compare a stored run with its prediction (utilization, time per minibatch, memory); the run's own experiment is the design");
  // The run fixes the design: a design option beside --against would be silently ignored.
  for (const char* name : {"--model", "--stages", "--microbatches", "--optimizer", "--timing", "--granularity", "--schedule",
                           "--batch", "--update-interval", "--warmup-fraction", "--m", "--flops", "--link-latency",
                           "--link-bandwidth", "--experiment", "--set"})
    against->excludes(planCmd->get_option(name));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // `run ... --events stdout`: a client reading only the stream learns why nothing ran.
    bool eventsOnStdout = false;
    for (int i = 1; i < argc; ++i)
      eventsOnStdout = eventsOnStdout || std::string(argv[i]) == "--events=stdout" ||
                       (std::string(argv[i]) == "--events" && i + 1 < argc && std::string(argv[i + 1]) == "stdout");
    if (rc != 0 && eventsOnStdout) pm::cli::emitStartError(pm::ConfigError("usage", e.what()));
    return rc == 0 ? 0 : 2;
  }
  if (run.db.empty()) run.db = db;
  list.db = db;
  // An experiment may be a preset named without its path: `pipemare run quickstart` runs the
  // quickstart.json of the installed presets (of the source checkout, from the build tree).
  run.file = pm::resolveExperimentArgument(run.file);
  sweep.file = pm::resolveExperimentArgument(sweep.file);
  validateFile = pm::resolveExperimentArgument(validateFile);
  plan.experiment = pm::resolveExperimentArgument(plan.experiment);

  int64_t runId = 0, againstRun = 0;
  try {
    const auto readRunId = [](const std::string& place, const std::string& text) {
      int64_t id = 0;
      const std::string problem = pm::parseRunId(text, id);
      if (!problem.empty()) throw pm::ConfigError(place, problem);
      return id;
    };
    if (runCmd->parsed() && resumeOpt->count() > 0) run.resume = readRunId("--resume", resumeText);
    if (showCmd->parsed() || tagCmd->parsed() || noteCmd->parsed() || deleteCmd->parsed()) runId = readRunId("RUN", runIdText);
    if (exportCmd->parsed()) exportOpts.run = readRunId("RUN", exportRunText);
    if (compareCmd->parsed()) {
      for (const auto& text : compareRunTexts) compare.runs.push_back(readRunId("RUN", text));
      if (baselineOpt->count() > 0) compare.baseline = readRunId("--baseline", baselineText);
    }
    if (planCmd->parsed() && against->count() > 0) againstRun = readRunId("--against", againstText);
  } catch (const pm::ConfigError& e) {
    if (runCmd->parsed() && run.events == "stdout") pm::cli::emitStartError(e);
    std::fprintf(stderr, "error: %s\n", pm::escapeForTerminal(e.what()).c_str());
    return 2;
  }

  if (runCmd->parsed()) {
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    // A reader of --events stdout that goes away (a closed GUI) must not end the run.
    std::signal(SIGPIPE, SIG_IGN);
    return pm::cli::runCommand(run, &gStop);
  }
  if (sweepCmd->parsed()) {
    if (sweep.db.empty()) sweep.db = db;
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGPIPE, SIG_IGN);
    return pm::cli::sweepCommand(sweep, &gStop);
  }
  if (planCmd->parsed())
    return againstRun > 0 ? pm::cli::planAgainstCommand(db, againstRun, plan.json, plan.traceFile, plan.traceMinibatches)
                          : pm::cli::planCommand(plan);
  if (compareCmd->parsed()) {
    compare.db = db;
    return pm::cli::compareCommand(compare);
  }
  if (exportCmd->parsed()) {
    exportOpts.db = db;
    return pm::cli::exportCommand(exportOpts);
  }
  if (workerCmd->parsed()) return pm::cli::workerCommand(worker);
  if (validateCmd->parsed()) return pm::cli::validateCommand(validateFile, validateSets);
  if (listCmd->parsed()) return pm::cli::runsListCommand(list);
  if (showCmd->parsed()) return pm::cli::runsShowCommand(db, runId, showJson);
  if (tagCmd->parsed()) return pm::cli::runsTagCommand(db, runId, tags);
  if (noteCmd->parsed()) return pm::cli::runsNoteCommand(db, runId, note);
  if (deleteCmd->parsed()) return pm::cli::runsDeleteCommand(db, runId);
  if (importCmd->parsed()) return pm::cli::runsImportCommand(db, importFile);
  if (modelsCmd->parsed()) return pm::cli::modelsCommand(modelsJson);
  if (versionCmd->parsed()) return pm::cli::versionCommand(versionJson);
  return 2;
}
