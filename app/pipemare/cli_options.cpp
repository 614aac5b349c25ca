// The options of every `pipemare` subcommand (see cli_options.h). Option names, help texts,
// checks and the order of the add_* calls make the --help text: change them together with
// tests/app/cli_test.cpp and the man pages.
#include "cli_options.h"

#include "core/events/run_status.h"

namespace pm::app {

void addGlobalOptions(CLI::App& app, std::string& db) {
  app.require_subcommand(1);
  app.add_option("--db", db, "run store (SQLite file); default $PIPEMARE_DB or $XDG_DATA_HOME/pipemare/runs.db");
  // Subcommands (made after this) hand options they do not know to the parent, so --db may come
  // before or after the subcommand: `pipemare --db X runs list` and `pipemare runs list --db X`.
  app.fallthrough();
}

void addRunCommand(CLI::App& app, RunCommand& run) {
  pm::cli::RunOptions& o = run.options;
  auto* cmd = run.cmd = app.add_subcommand("run", "validate, run and record an experiment");
  cmd->add_option("file", o.file, "experiment file (JSON), or a preset's name (quickstart, tiny-synthetic)");
  run.resume =
      cmd->add_option("--resume", run.resumeText, "continue a stopped, failed or interrupted run from its latest checkpoint");
  cmd->add_option("--nnodes", o.nnodes, "multi-node: number of launchers (one per node); node 0 records the run");
  cmd->add_option("--node-rank", o.nodeRank, "multi-node: this launcher's node (0..nnodes-1)");
  cmd->add_option("--master-addr", o.masterAddr, "multi-node: address of node 0 (TCPStore, event stream); default 127.0.0.1");
  cmd->add_option("--master-port", o.masterPort, "multi-node: TCPStore port on node 0 (events use port+1)");
  cmd->add_option("--secret-file", o.secretFile,
                  "multi-node: the run secret the launchers authenticate with (default: $PIPEMARE_RUN_SECRET, else "
                  "~/.config/pipemare/run-secret, made when absent)");
  cmd->add_option("--set", o.overrides, "override a field: --set pipeline.stages=4 (repeatable)");
  cmd->add_option("--name", o.name, "run name (default: the experiment's name)");
  cmd->add_option("--events", o.events, "stream the JSON event lines: stdout")->check(CLI::IsMember({"stdout"}));
  cmd->add_flag("--quiet", o.quiet, "no progress output");
  cmd->add_option("--db", o.db, "run store (SQLite file)");
  cmd->add_option("--save-state", o.saveState, "save each stage's final parameters and buffers (stage<s>.pt) here");
  cmd->add_option("--tag", o.tags, "add a tag to the run (repeatable)");
  cmd->add_option("--sweep-id", o.sweepId, "record the run as part of this sweep (set by `pipemare sweep`)");
}

void addSweepCommand(CLI::App& app, SweepCommand& sweep) {
  pm::cli::SweepOptions& o = sweep.options;
  auto* cmd = sweep.cmd = app.add_subcommand("sweep", "run a grid of variants of an experiment, J at a time");
  cmd->add_option("file", o.file, "experiment file (JSON), or a preset's name");
  cmd->add_option("--grid", o.grids, "swept field and its values: --grid optimizer.lr=0.01,0.05,0.1 (repeatable)");
  cmd->add_option("--resume", o.resume,
                  "continue this sweep: run its points that never started, resume stopped ones from their checkpoints, "
                  "run failed ones again");
  cmd->add_option("--set", o.overrides, "override a field in every run (repeatable)");
  cmd->add_option("--parallel", o.parallel, "runs at a time (default 1)");
  cmd->add_option("--tag", o.tags, "add a tag to every run (repeatable)");
  cmd->add_option("--name", o.name, "run name prefix (default: the experiment's name)");
  cmd->add_option("--db", o.db, "run store (SQLite file)");
}

void addWorkerCommand(CLI::App& app, WorkerCommand& worker) {
  pm::cli::WorkerArgs& o = worker.options;
  auto* cmd = worker.cmd = app.add_subcommand("worker", "one stage process of a real run (started by `run`, srun or mpirun)");
  cmd->add_option("--config", o.config, "experiment file (JSON)")->required();
  cmd->add_option("--rank", o.rank, "rank = stage index (default: $RANK)");
  cmd->add_option("--world-size", o.worldSize, "number of stages (default: $WORLD_SIZE)");
  cmd->add_option("--master-addr", o.masterAddr, "TCPStore address (default: $MASTER_ADDR or 127.0.0.1)");
  cmd->add_option("--master-port", o.masterPort, "TCPStore port (default: $MASTER_PORT)");
  cmd->add_option("--store-file", o.storeFile, "single node: rendezvous through this file instead of a TCPStore");
  cmd->add_option("--save-state", o.saveState, "save this stage's final parameters and buffers here");
  cmd->add_option("--checkpoint-dir", o.checkpointDir, "write checkpoints under this directory");
  cmd->add_option("--resume-step", o.resumeStep, "restore this stage from the checkpoint after this step");
  cmd->add_option("--model-sha256", o.modelSha256, "a TorchScript model: refuse to start unless its file has this SHA-256");
}

void addValidateCommand(CLI::App& app, ValidateCommand& validate) {
  auto* cmd = validate.cmd = app.add_subcommand("validate", "check an experiment file without running it");
  cmd->add_option("file", validate.file, "experiment file (JSON), or a preset's name")->required();
  cmd->add_option("--set", validate.overrides, "override a field (repeatable)");
  cmd->add_flag("--json", validate.json, "print the verdict as JSON: {\"valid\": true, ...} or {\"error\": {message, place, exit_code}}");
}

namespace {

// `runs list`: its --status takes the store's names, as RunFilter::status takes them.
void addRunsListCommand(CLI::App& runsCmd, RunsCommands& runs) {
  pm::cli::ListOptions& o = runs.listOptions;
  auto* cmd = runs.listCmd = runsCmd.add_subcommand("list", "list runs");
  std::vector<std::string> statusNames;
  for (pm::RunStatus s : {pm::RunStatus::Created, pm::RunStatus::Running, pm::RunStatus::Finished, pm::RunStatus::Stopped,
                          pm::RunStatus::Diverged, pm::RunStatus::Failed, pm::RunStatus::Interrupted})
    statusNames.push_back(pm::toString(s));
  cmd->add_option("--status", o.status, "only runs with this status")->check(CLI::IsMember(statusNames));
  cmd->add_option("--tag", o.tag, "only runs with this tag");
  cmd->add_option("--sweep", o.sweep, "only runs of this sweep");
  cmd->add_option("--text", o.text, "only runs whose name contains this text");
  cmd->add_flag("--json", o.json, "print JSON");
}

}  // namespace

void addRunsCommand(CLI::App& app, RunsCommands& runs) {
  auto* runsCmd = runs.cmd = app.add_subcommand("runs", "list and manage recorded runs");
  runsCmd->require_subcommand(1);
  addRunsListCommand(*runsCmd, runs);
  runs.showCmd = runsCmd->add_subcommand("show", "show one run");
  runs.showCmd->add_option("run", runs.runIdText, "run id")->required();
  runs.showCmd->add_flag("--json", runs.showJson, "print JSON");
  runs.tagCmd = runsCmd->add_subcommand("tag", "replace a run's tags");
  runs.tagCmd->add_option("run", runs.runIdText, "run id")->required();
  runs.tagCmd->add_option("tags", runs.tags, "tags");
  runs.noteCmd = runsCmd->add_subcommand("note", "set a run's notes");
  runs.noteCmd->add_option("run", runs.runIdText, "run id")->required();
  runs.noteCmd->add_option("text", runs.noteText, "notes")->required();
  runs.deleteCmd = runsCmd->add_subcommand("delete", "delete a run and all its data");
  runs.deleteCmd->add_option("run", runs.runIdText, "run id")->required();
  runs.importCmd = runsCmd->add_subcommand("import", "copy every run of another store file into this one (new ids)");
  runs.importCmd->add_option("file", runs.importFile, "the other run store (SQLite file); only read")->required();
}

void addModelsCommand(CLI::App& app, ModelsCommand& models) {
  pm::cli::ModelsOptions& o = models.options;
  models.cmd = app.add_subcommand("models", "list the model zoo with parameter counts and units, or a TorchScript model's units");
  models.cmd->add_flag("--json", o.json, "print JSON");
  models.cmd->add_option("--file", o.file, "a TorchScript model (torch.jit.save of an nn.Sequential): list its units");
  models.cmd->add_option("--data", o.data, "with --file: a tensor file (torch.save({\"x\", \"y\"})) whose first sample shows output shapes");
  models.cmd->add_option("--input-shape", o.inputShape, "with --file: one sample's shape, e.g. 1,28,28 (float), to show output shapes");
}

void addVersionCommand(CLI::App& app, JsonFlagCommand& version) {
  version.cmd =
      app.add_subcommand("version", "print the version, the revision, the BLAS library LibTorch loaded and the presets' folder");
  version.cmd->add_flag("--json", version.json, "print JSON");
}

void addCompareCommand(CLI::App& app, CompareCommand& compare) {
  auto* cmd = compare.cmd =
      app.add_subcommand("compare", "compare runs: loss, accuracy, time to target, throughput, utilization, memory");
  cmd->add_option("runs", compare.runTexts, "run ids")->required();
  compare.baseline = cmd->add_option("--baseline", compare.baselineText, "ratios against this run (default: the first)");
  cmd->add_option("--target", compare.options.target, "eval accuracy target for 'time to target' (default: baseline best - 0.01)");
  cmd->add_flag("--json", compare.options.json, "print JSON");
}

void addExportCommand(CLI::App& app, ExportCommand& exportCmd) {
  pm::cli::ExportOptions& o = exportCmd.options;
  auto* cmd = exportCmd.cmd =
      app.add_subcommand("export", "export a run: CSV files, one JSON file, or a Chrome trace (Perfetto)");
  cmd->add_option("run", exportCmd.runText, "run id")->required();
  cmd->add_option("--csv", o.csvDir, "write metrics.csv, stage_metrics.csv, trace.csv, log.csv, run.json here");
  cmd->add_option("--json", o.jsonFile, "write everything as one JSON file");
  cmd->add_option("--chrome-trace", o.chromeTrace, "write the measured schedule trace (chrome://tracing, Perfetto)");
}

namespace {

// `plan --experiment` and `plan --against` take the design from an experiment or a stored run, so
// the options that give it one by one exclude them (added after them: see addPlanCommand).
void addPlanDesignSources(CLI::App& planCmd, PlanCommand& plan) {
  pm::cli::PlanOptions& o = plan.options;
  auto* experimentOpt = planCmd.add_option(
      "--experiment", o.experiment,
      "plan this experiment file's design (model, stages, microbatches, batch, optimizer, timing, schedule, partition, "
      "context, update interval, warm-up) instead of the options that give it");
  planCmd.add_option("--set", o.overrides, "with --experiment: override a field, --set pipeline.stages=4 (repeatable)")
      ->needs(experimentOpt);
  // The experiment is the design: a design option beside --experiment would be silently replaced.
  for (const char* name : {"--model", "--stages", "--microbatches", "--optimizer", "--granularity", "--schedule", "--batch",
                           "--context", "--partition", "--boundaries", "--update-interval", "--warmup-fraction", "--m"})
    experimentOpt->excludes(planCmd.get_option(name));
  auto* against = plan.against = planCmd.add_option(
      "--against", plan.againstText,
      "compare a stored run with its prediction (utilization, time per minibatch, memory); the run's own experiment is the design");
  // The run fixes the design: a design option beside --against would be silently ignored.
  for (const char* name : {"--model", "--stages", "--microbatches", "--optimizer", "--timing", "--granularity", "--schedule",
                           "--batch", "--update-interval", "--warmup-fraction", "--m", "--flops", "--link-latency",
                           "--link-bandwidth", "--experiment", "--set", "--trace-dir", "--stage-costs"})
    against->excludes(planCmd.get_option(name));
  // --stability FILE: the experiment's stage curvatures and stable learning rates instead of the
  // plan; the file is the design (core/cli/plan_stability.h).
  auto* stability = planCmd.add_option(
      "--stability", o.stability,
      "estimate each stage's curvature (top Hessian eigenvalue) of this experiment and predict every schedule's "
      "largest stable learning rate and the stage that breaks first");
  planCmd.add_option("--stability-microbatches", o.stabilityMicrobatches, "with --stability: microbatches to estimate on (default 3)")
      ->needs(stability);
  planCmd.add_option("--stability-iterations", o.stabilityIterations,
                     "with --stability: power iterations per stage and microbatch, at most (default 30)")
      ->needs(stability);
  auto* probe = planCmd.add_flag("--probe", o.probe,
                                 "with --stability: also probe each schedule's edge empirically: short trainings of the "
                                 "experiment at a ladder of learning rates, bisecting the largest that trains")
                   ->needs(stability);
  planCmd.add_option("--probe-steps", o.probeSteps, "with --probe: optimizer steps per trial (default 50)")->needs(probe);
  planCmd.add_option("--probe-horizon", o.probeHorizon,
                     "with --probe: what a trial trains: first (the run's first steps) or run (the whole run in "
                     "miniature: its learning-rate schedule and T1's annealing compressed into the trial's steps)")
      ->needs(probe);
  planCmd.add_option("--probe-judge", o.probeJudge,
                     "with --probe: how a trial is judged against its schedule's best: loss (the mean loss of its last "
                     "third, within 25%) or accuracy (held-out accuracy at its end, within 5 points; needs "
                     "--probe-horizon run)")
      ->needs(probe);
  planCmd.add_option("--probe-schedules", o.probeSchedules,
                     "with --probe: the methods to probe, comma-separated (default: gpipe, pipedream, pipemare, "
                     "pipemare+T1, pipemare+T1+T2 and the experiment's own)")
      ->needs(probe);
  for (const char* name : {"--model", "--stages", "--microbatches", "--optimizer", "--granularity", "--schedule", "--batch",
                           "--context", "--partition", "--boundaries", "--update-interval", "--warmup-fraction", "--m",
                           "--trace", "--experiment", "--against"})
    stability->excludes(planCmd.get_option(name));
}

}  // namespace

void addPlanCommand(CLI::App& app, PlanCommand& plan) {
  pm::cli::PlanOptions& o = plan.options;
  auto* cmd = plan.cmd =
      app.add_subcommand("plan", "predict utilization, delays, memory and the timeline of every schedule");
  cmd->add_option("--model", o.model, "model of the zoo (default resnet50)");
  cmd->add_option("--stages", o.stages, "P (default: one stage per weight layer / unit)");
  cmd->add_option("--microbatches", o.microbatches, "N");
  cmd->add_option("--optimizer", o.optimizer, "sgd | sgd-momentum | adam");
  cmd->add_option("--timing", o.timing, "paper | 1f1b (default paper; with --experiment, its pipeline.timing)");
  cmd->add_option("--granularity", o.granularity, "layers (one stage per weight layer) | units (engine partition)");
  cmd->add_flag("--json", o.json, "print JSON");
  cmd->add_option_function<std::string>(
         "--events", [&o](const std::string&) { o.events = true; },
         "stdout: progress, the result (the --json document) or the error as JSON event lines (docs/events.md)")
      ->check(CLI::IsMember({"stdout"}));
  cmd->add_option("--trace", o.traceFile, "write the simulated timeline of --schedule as a Chrome trace");
  cmd->add_option("--schedule", o.schedule, "schedule of the trace (default pipemare; with --experiment, the design's)");
  cmd->add_option("--trace-dir", o.traceDir, "write every schedule's simulated timeline there as <schedule>.json");
  cmd->add_option("--stage-costs", o.stageCosts,
                  "utilization with flops (each stage's time from its FLOPs) | measured (each unit's F, B, BI and W timed; units only) | equal stages (default: flops for units, "
                  "equal for layers)");
  cmd->add_option("--batch", o.batch, "samples per minibatch (default N)");
  cmd->add_option("--context", o.context, "sequence length of token models (charlm; default 128)");
  cmd->add_option("--partition", o.partition, "units: parameters (default, as the engine) | flops (stand-in for time)");
  cmd->add_option("--boundaries", o.boundaries, "units: explicit stage boundaries, e.g. --boundaries 2,4")->delimiter(',');
  cmd->add_option("--update-interval", o.updateInterval, "pipedream microbatches per step (default N)");
  cmd->add_option("--warmup-fraction", o.warmupFraction,
                  "pipemare: share of the minibatches run first as gpipe (warm-up), for the hybrid's utilization");
  cmd->add_option("--m", o.m, "pipedream-2bw microbatches per step (default max(N, P))");
  cmd->add_option("--trace-minibatches", o.traceMinibatches, "minibatches simulated for the trace");
  cmd->add_option("--flops", o.flopsPerSecond, "FLOP/s per stage for simulated costs");
  cmd->add_option("--link-latency", o.linkLatency, "seconds per message");
  cmd->add_option("--link-bandwidth", o.linkBandwidth, "bytes per second (0 = infinite)");
  auto* opCosts = cmd->add_option("--op-costs", o.opCosts,
                                  "TF,TB,TW: plan gpipe, 1f1b, interleaved 1f1b, zb-h1 and zb-v from per-op costs alone (forward, input backward, "
                                  "weight backward per rank and microbatch, any unit; needs --stages, no model)")
                      ->delimiter(',');
  cmd->add_option("--comm-cost", o.commCost, "with --op-costs: the cost charged to every dependency that crosses ranks")
      ->needs(opCosts);
  cmd->add_option("--chunks", o.chunks, "interleaved 1F1B's model chunks per rank, v (default 2; an experiment's pipeline.chunks)");
  addPlanDesignSources(*cmd, plan);
  // Costs alone are the design: a model, an experiment, a stored run or a trace beside them would
  // be silently ignored.
  for (const char* name : {"--model", "--experiment", "--against", "--stability", "--trace", "--trace-dir", "--timing",
                           "--granularity", "--schedule", "--optimizer", "--batch", "--partition", "--boundaries"})
    opCosts->excludes(cmd->get_option(name));
}

void addCommands(CLI::App& app, Cli& cli) {
  addGlobalOptions(app, cli.db);  // first: fallthrough() applies to the subcommands made after it
  addRunCommand(app, cli.run);
  addSweepCommand(app, cli.sweep);
  addWorkerCommand(app, cli.worker);
  addValidateCommand(app, cli.validate);
  addRunsCommand(app, cli.runs);
  addModelsCommand(app, cli.models);
  addVersionCommand(app, cli.version);
  addCompareCommand(app, cli.compare);
  addExportCommand(app, cli.exportCmd);
  addPlanCommand(app, cli.plan);
}

}  // namespace pm::app
