#pragma once
// `pipemare plan`: profile a model, plan every schedule analytically, print the comparison
// (text or JSON), optionally simulate one schedule's timeline into a Chrome trace. The design is
// given option by option, or as an experiment file (`--experiment FILE`, mapped by
// core/planner/plan_design).
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pm::cli {

// A step of a long plan (the stability estimate): its phase ("data", "model", "curvature at init",
// "warm-up", ...), how far it is (done of total, 0 of 0 where it does not count), and a line for people.
struct PlanProgress {
  std::string phase;
  long long done = 0, total = 0;
  std::string message;
};

// Why plan gave no result: where (a file, field or option; "" when the exception had no place)
// and what, and its exit code (2 bad input, 1 a failure).
struct PlanFailure {
  std::string place, problem;
  int exitCode = 1;
};

struct PlanOptions {
  std::string model = "resnet50";        // a model of the zoo
  int stages = 0;                         // P; 0 = one stage per weight layer / per unit
  int microbatches = 8;                   // N
  std::string optimizer = "sgd-momentum"; // sgd | sgd-momentum | adam
  std::string timing;                     // paper | 1f1b; "" = the experiment's pipeline.timing, or paper
  std::string granularity = "layers";     // layers: one stage per weight layer (P < layers: grouped by
                                          // parameters) | units: the engine partition by parameters
  bool json = false;                      // print JSON instead of the table
  // --events stdout: the result, progress and any error as event lines on `out` instead
  // (core/cli/plan_events.h): the form the workbench reads.
  bool events = false;
  // Where a long plan reports its progress and a failed one its failure as data (set for
  // --events); unset, progress is a line on `err` and the failure only the error line there.
  std::function<void(const PlanProgress&)> progress;
  std::function<void(const PlanFailure&)> failed;
  std::string traceFile;                  // write the simulated timeline of `schedule` here (Chrome trace)
  std::string schedule = "pipemare";      // the schedule of the trace
  std::string traceDir;                   // write every schedule's simulated timeline here, as <schedule>.json
  // The stage times of the utilization: "flops" (each stage's forward+backward time from its
  // FLOPs, the timelines' costs) | "equal" (equal stages, the paper's setting); "" = flops at
  // units granularity (the engine's stages), equal at layers granularity.
  std::string stageCosts;
  // Optional refinements (defaults reproduce the paper's setting):
  int batch = 0;                  // samples per minibatch; 0 = N (one sample per microbatch)
  int context = 128;              // sequence length for token models
  int updateInterval = 0;         // pipedream microbatches per step; 0 = N (as pipemare)
  int m = 0;                      // pipedream-2bw microbatches per step; 0 = max(N, P)
  int traceMinibatches = 2;       // minibatches simulated for the trace
  double flopsPerSecond = 1e12;   // per stage, for the simulated costs (backward = 2x forward)
  double linkLatency = 0;         // seconds per message
  double linkBandwidth = 0;       // bytes per second; 0 = infinite
  double warmupFraction = 0;      // pipemare: share of the minibatches run first as gpipe (0..1)
  // Units granularity: how the units are split into stages, as pipeline.partition does:
  // "parameters" (the engine's default), "flops" (balanced by forward FLOPs: the planner's
  // stand-in for "time", which the engine measures) or explicit `boundaries` (first unit of
  // stages 1..P-1; given, they win).
  std::string partition = "parameters";
  std::vector<int> boundaries;
  // An experiment file (with `key=value` overrides, as `run --set`) whose design replaces the
  // design fields above (model, stages, microbatches, batch, optimizer, granularity = units,
  // schedule = the design's plan row, context, update interval, m, warm-up share, partition);
  // timing too unless given. "" = the fields as given.
  std::string experiment;
  std::string designNote;  // set by the plan command from the experiment (PlanReport::designNote)
  std::vector<std::string> overrides;
  // `plan --stability EXPERIMENT` (core/cli/plan_stability.h): this experiment's stages' curvature
  // and each schedule's largest stable learning rate, instead of the plan (`overrides` apply to it).
  std::string stability;
  // `plan --op-costs TF,TB,TW [--comm-cost T]` (core/cli/plan_op_costs.h): every synchronous
  // schedule laid out from these per-op costs alone (forward, input backward, weight backward of a
  // rank's share per microbatch, any unit), with T charged to every dependency that crosses ranks;
  // no model is profiled and stages may be any P >= 1.
  std::vector<double> opCosts;
  double commCost = 0;
  int chunks = 2;  // interleaved 1F1B's chunks per rank (v >= 2): its row, with --op-costs too
  // A chunked design's explicit boundaries (pipeline.partition), counting its chunks x ranks stages.
  std::vector<int> chunkBoundaries;
  int stabilityMicrobatches = 3;  // microbatches the curvature is estimated on
  int stabilityIterations = 30;   // at most this many power iterations per stage and microbatch
  // With `stability`: the empirical probe too (core/planner/stability_probe.h): short trainings of
  // each schedule at a ladder of rates, `probeSteps` steps each.
  bool probe = false;
  int probeSteps = 50;
  std::string probeHorizon = "first";  // first: the run's first steps; run: the whole run in miniature
  std::string probeJudge = "loss";     // loss: the last third's mean loss; accuracy: held-out accuracy at the end
  std::string probeSchedules;  // "" = the probe's default rows; else a comma-separated list of methods
};

// Returns 0, 2 for bad input (unknown model / schedule / optimizer / timing / granularity,
// stages > weight layers or units, N < 1, an experiment file that does not validate, ...) with
// "pipemare plan: <place>: <problem>" on `err`, 1 when the trace cannot be written.
int planCommand(const PlanOptions& o, std::ostream& out, std::ostream& err);
int planCommand(const PlanOptions& o);  // std::cout / std::cerr

// Bad input to plan (exit code 2): "<place>: <problem>".
struct PlanUsage : std::runtime_error {
  PlanUsage(const std::string& place, const std::string& problem)
      : std::runtime_error(place + ": " + problem), place(place), problem(problem) {}
  std::string place, problem;
};

// Runs `body` and turns what it throws into plan's exit codes, the message on `err` as
// "pipemare plan: <subject><problem>": a usage error, an Error (its place and problem; its exit
// code) or std::invalid_argument exits 2, any other exception 1. `subject` ("" or
// "--stability FILE") names what an exception without a place of its own was about. `failed`,
// when set, is told the same as data.
int planGuard(const std::string& subject, std::ostream& err, const std::function<int()>& body,
              const std::function<void(const PlanFailure&)>& failed = {});

}  // namespace pm::cli
