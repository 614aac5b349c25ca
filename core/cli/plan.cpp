#include "core/cli/plan.h"
#include "core/cli/plan_op_costs.h"
#include "core/cli/plan_stability.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <iostream>
#include <stdexcept>

#include "core/config/experiment.h"
#include "core/engine/input_check.h"
#include "core/pipeline/partition.h"
#include "core/planner/analytic_planner.h"
#include "core/planner/chrome_trace.h"
#include "core/planner/model_profile.h"
#include "core/planner/plan_design.h"
#include "core/planner/plan_report.h"
#include "core/planner/timeline_sim.h"
#include "core/util/errors.h"

namespace pm::cli {

namespace {

// Bad input: exit code 2.
using Usage = PlanUsage;

template <class F>
auto parse(const std::string& place, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw Usage(place, e.what());
  }
}

// What the options name: the planner's spec, the granularity and the schedule of the trace.
struct ParsedOptions {
  PlanSpec spec;
  Granularity granularity = Granularity::Layers;
  TrainingMethod traceSchedule{ScheduleKind::PipeMare};
};

// The numbers' ranges and the options that go together, before the model is profiled.
void checkNumbers(const PlanOptions& o, Granularity gran) {
  if (o.microbatches < 1) throw Usage("--microbatches", "expected N >= 1, found " + std::to_string(o.microbatches));
  if (o.stages < 0) throw Usage("--stages", "expected P >= 1 (or 0 for the most), found " + std::to_string(o.stages));
  if (o.batch < 0 || (o.batch > 0 && o.batch < o.microbatches))
    throw Usage("--batch", "expected a minibatch of at least N = " + std::to_string(o.microbatches) +
                               " samples (or 0 for one sample per microbatch), found " + std::to_string(o.batch));
  if (o.updateInterval < 0) throw Usage("--update-interval", "expected >= 1 (or 0 for N)");
  if (o.traceMinibatches < 1) throw Usage("--trace-minibatches", "expected >= 1");
  if (!(o.warmupFraction >= 0 && o.warmupFraction <= 1)) {
    char found[32];
    std::snprintf(found, sizeof found, "%g", o.warmupFraction);
    throw Usage("--warmup-fraction", std::string("expected a share of the minibatches in [0, 1], found ") + found);
  }
  if (!(o.flopsPerSecond > 0)) throw Usage("--flops", "expected a FLOP rate > 0");
  if (!o.stageCosts.empty() && o.stageCosts != "flops" && o.stageCosts != "equal" && o.stageCosts != "measured")
    throw Usage("--stage-costs", "expected flops, measured or equal, found \"" + o.stageCosts + "\"");
  if (o.stageCosts == "measured" && gran != Granularity::Units)
    throw Usage("--stage-costs", "measured applies to --granularity units only (the passes are timed per unit)");
  if (o.partition != "parameters" && o.partition != "flops")
    throw Usage("--partition", "expected parameters or flops (or --boundaries), found \"" + o.partition + "\"");
  if ((!o.boundaries.empty() || o.partition != "parameters") && gran != Granularity::Units)
    throw Usage(o.boundaries.empty() ? "--partition" : "--boundaries", "applies to --granularity units only");
  const int maxContext = o.model == "charlm" ? 128 : 4096;  // as data.context (charlm's positions: 128)
  if (o.context < 8 || o.context > maxContext)
    throw Usage("--context", "expected a sequence length in 8.." + std::to_string(maxContext) + (o.model == "charlm" ? " for charlm" : "") +
                                 ", found " + std::to_string(o.context));
  if (!(o.linkLatency >= 0) || !(o.linkBandwidth >= 0)) throw Usage("--link", "latency and bandwidth must be >= 0");
}

ParsedOptions parseOptions(const PlanOptions& o) {
  ParsedOptions p;
  p.spec.timing = parse("--timing", [&] { return timingFromName(o.timing); });
  p.spec.optimizer = parse("--optimizer", [&] { return optimizerFromName(o.optimizer); });
  p.granularity = parse("--granularity", [&] { return granularityFromName(o.granularity); });
  p.traceSchedule = parse("--schedule", [&] { return planMethodFromName(o.schedule); });
  checkNumbers(o, p.granularity);
  p.spec.microbatches = o.microbatches;
  p.spec.updateInterval = o.updateInterval;
  p.spec.m = o.m;
  p.spec.warmupFraction = o.warmupFraction;
  return p;
}

// The options with the design filled in: an experiment file's (plan_design), else as given. The
// timing model is the experiment's unless one was asked for; without either, the paper's. An
// experiment whose model is a TorchScript file is kept in `fileModel` (the profile is the file's).
PlanOptions resolveDesign(const PlanOptions& given, std::optional<Experiment>& fileModel) {
  PlanOptions o = given;
  if (o.experiment.empty()) {
    if (!o.overrides.empty()) throw Usage("--set", "applies to --experiment only");
    if (o.timing.empty()) o.timing = "paper";
    return o;
  }
  const Experiment e = loadExperimentFile(o.experiment, o.overrides);  // ConfigError: exit 2
  const PlanDesign d = planDesign(e, knownTrainSamples(e));
  o.model = d.model;
  if (e.model.fromFile()) {
    checkModelOnData(e);  // the file and the data fit: exit 2 naming the file otherwise
    fileModel = e;
    o.model = std::filesystem::path(e.model.path).filename().string();
  }
  o.stages = d.stages;
  o.microbatches = d.microbatches;
  o.batch = d.batch;
  o.context = d.context;
  o.optimizer = optimizerName(d.optimizer);
  if (o.timing.empty()) o.timing = timingName(d.timing);
  o.granularity = "units";  // the engine's stages: the model's partitionable units
  o.schedule = d.method.name();
  if (const ScheduleDecl& sd = scheduleDecl(e.pipeline.schedule); sd.chunks != 1) {
    // The analytic rows hold one stage per rank; the chunked schedules' figures come from their
    // own lists in the op-cost timeline.
    o.schedule = "1f1b";
    o.designNote = std::string(sd.name) + " holds " + std::to_string(pipelineChunks(e)) +
                   " model chunks per rank, which the rows below (one stage per rank) do not cover; it computes 1f1b's update "
                   "(shown as 1f1b here); its timeline and bubble: pipemare plan --op-costs TF,TB,TW --stages " +
                   std::to_string(e.pipeline.stages) + " --microbatches " + std::to_string(e.pipeline.microbatches) +
                   (sd.chunks == 0 ? " --chunks " + std::to_string(pipelineChunks(e)) : std::string());
  }
  o.updateInterval = d.updateInterval;
  o.m = d.m;
  o.warmupFraction = d.warmupFraction;
  o.boundaries.clear();
  o.partition = "parameters";
  if (d.partition == PlanPartition::Explicit)
    o.boundaries = d.boundaries;
  else
    o.partition = planPartitionName(d.partition);
  return o;
}

// P: the stages asked for (0: as many as the model has weight layers or units).
int stageCount(const PlanOptions& o, const ModelProfile& prof, Granularity gran) {
  const int available = static_cast<int>(gran == Granularity::Layers ? prof.layers.size() : prof.units.size());
  const int P = o.stages == 0 ? available : o.stages;
  if (P > available)
    throw Usage("--stages", "model " + o.model + " has " + std::to_string(available) +
                                (gran == Granularity::Layers ? " weight layers" : " partitionable units") +
                                ", cannot make " + std::to_string(P) + " stages");
  if (o.m != 0 && o.m < P)
    throw Usage("--m", "pipedream-2bw needs m >= P = " + std::to_string(P) + ", found " + std::to_string(o.m));
  return P;
}

// The report's stages: the units split as --boundaries or --partition say, or the weight layers
// (one per stage, or grouped by parameters into P stages).
void planStages(const PlanOptions& o, const ModelProfile& prof, int P, PlanReport& report) {
  if (report.granularity == Granularity::Layers) {
    if (P == static_cast<int>(prof.layers.size()))
      report.stages = layerStages(prof, report.samplesPerMicrobatch);
    else
      report.stages = layerStages(prof, layerParameterPartition(prof, P), report.samplesPerMicrobatch);
    return;
  }
  Partition part;
  if (!o.boundaries.empty()) {
    try {
      part = explicitPartition(o.boundaries, static_cast<int>(prof.units.size()), P);
    } catch (const std::invalid_argument& ex) {
      throw Usage("--boundaries", ex.what());
    }
    report.partition = "explicit";
  } else if (o.partition == "flops") {
    std::vector<double> costs;
    for (const auto& u : prof.units) costs.push_back(u.flops);
    part = balancedPartition(costs, P);
    report.partition = "flops";
  } else {
    part = parameterPartition(prof, P);
  }
  report.stages = unitStages(prof, part, report.samplesPerMicrobatch);
}

// The planner's spec with the stage times its utilization uses: the timelines' forward+backward
// times ("flops"), or none (equal stages: asked for, the paper's per-layer setting by default, or a
// stage the profile gives no FLOPs).
PlanSpec stageSpec(const PlanOptions& o, const ParsedOptions& p, const SimCosts& costs, PlanReport& report) {
  PlanSpec spec = p.spec;
  report.stageTimes = stageCostsOf(costs.forward, costs.backward);
  report.stageCosts = "equal";
  if (o.stageCosts == "equal") return spec;
  if (o.stageCosts.empty() && p.granularity == Granularity::Layers) {
    report.stageCostsNote = "one stage per weight layer, the paper's setting; --stage-costs flops for their own times";
    return spec;
  }
  for (size_t s = 0; s < report.stageTimes.size(); ++s)
    if (!(report.stageTimes[s] > 0)) {
      report.stageCostsNote = "stage " + std::to_string(s) + " (" + report.stages[s].name + ") has no forward FLOPs";
      return spec;
    }
  report.stageCosts = o.stageCosts == "measured" ? "measured" : "flops";
  spec.stageCosts = report.stageTimes;
  if (!report.stageOpCosts.empty()) {
    for (const auto& c : report.stageOpCosts) {
      spec.forwardCosts.push_back(c.forward);
      spec.inputCosts.push_back(c.backwardInput);
      spec.weightCosts.push_back(c.weight);
    }
  }
  return spec;
}

// --stage-costs measured: every unit's F, B, BI and W timed on one microbatch (one thread, as a
// stage), summed over each stage's units; the timelines and the utilization use them instead of
// FLOPs.
void measureStageCosts(const PlanOptions& o, const std::optional<Experiment>& fileModel, PlanReport& report, SimCosts& costs) {
  Experiment e;
  if (fileModel) {
    e = *fileModel;
  } else {
    e.model.name = o.model;
    e.data.context = o.context;
  }
  const std::vector<UnitOpCosts> units = measureUnitOpCosts(e, report.samplesPerMicrobatch);
  costs.backwardInput.clear();
  for (size_t s = 0; s < report.stages.size(); ++s) {
    UnitOpCosts sum;
    for (int u = report.stages[s].begin; u < report.stages[s].end; ++u) {
      const UnitOpCosts& c = units.at(static_cast<size_t>(u));
      sum.forward += c.forward;
      sum.backward += c.backward;
      sum.backwardInput += c.backwardInput;
      sum.weight += c.weight;
    }
    report.stageOpCosts.push_back(sum);
    costs.forward[s] = sum.forward;
    costs.backward[s] = sum.backward;
    costs.backwardInput.push_back(sum.backwardInput);
    costs.weight[s] = sum.weight;
  }
}

// Simulates every schedule over the report's stages (--trace-minibatches minibatches), writes each
// timeline into --trace-dir as <schedule>.json and the trace schedule's into --trace FILE.
void simulateTimelines(const PlanOptions& o, const ParsedOptions& p, int P, const SimCosts& costs, PlanReport& report) {
  if (!o.traceDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.traceDir, ec);
    if (ec) throw EngineError(o.traceDir, "cannot create the trace folder: " + ec.message());
  }
  for (const auto& plan : report.comparison.plans) {
    const SimResult sim = simulatePlanSchedule(plan.method, P, p.spec, costs, o.traceMinibatches);
    const std::string name = plan.method.name();
    const std::string label = name + ", " + o.model + ", P=" + std::to_string(P) + ", N=" + std::to_string(o.microbatches);
    PlanTraceInfo info{"", name, o.traceMinibatches, sim.makespan, sim.meanUtilization};
    if (!o.traceDir.empty()) {
      info.file = (std::filesystem::path(o.traceDir) / (name + ".json")).string();
      writeChromeTrace(info.file, sim.trace, label);  // EngineError (exit 1) when it cannot be written
    }
    if (!o.traceFile.empty() && plan.method == p.traceSchedule) {
      writeChromeTrace(o.traceFile, sim.trace, label);
      report.trace = PlanTraceInfo{o.traceFile, name, o.traceMinibatches, sim.makespan, sim.meanUtilization};
    }
    report.timelines.push_back(std::move(info));
  }
}

int run(const PlanOptions& given, std::ostream& out) {
  std::optional<Experiment> fileModel;
  const PlanOptions o = resolveDesign(given, fileModel);
  const ParsedOptions p = parseOptions(o);
  const ModelProfile& prof = fileModel ? cachedModelProfile(*fileModel) : cachedModelProfile(o.model, o.context);  // ConfigError: unknown model
  const int P = stageCount(o, prof, p.granularity);

  PlanReport report;
  report.model = o.model;
  report.designNote = o.designNote;
  report.granularity = p.granularity;
  report.samplesPerMicrobatch = o.batch == 0 ? 1 : samplesPerMicrobatch(o.batch, o.microbatches);
  planStages(o, prof, P, report);
  SimCosts costs = costsFromStages(report.stages, o.flopsPerSecond, 2.0, 0.0, {o.linkLatency, o.linkBandwidth});
  if (o.stageCosts == "measured") measureStageCosts(o, fileModel, report, costs);
  report.comparison = planAll(report.stages, stageSpec(o, p, costs, report));
  simulateTimelines(o, p, P, costs, report);

  if (o.json)
    out << planReportJson(report).dump(2) << "\n";
  else
    printPlanReport(out, report);
  return 0;
}

}  // namespace

int planCommand(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.stability.empty()) return planStabilityCommand(o, out, err);
  if (!o.opCosts.empty()) return planOpCostsCommand(o, out, err);
  return planGuard("", err, [&] { return run(o, out); });
}

int planGuard(const std::string& subject, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Usage& e) {
    err << "pipemare plan: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    err << "pipemare plan: " << e.place() << ": " << e.problem() << "\n";
    return e.exitCode();
  } catch (const std::invalid_argument& e) {
    err << "pipemare plan: " << subject << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "pipemare plan: " << subject << e.what() << "\n";
    return 1;
  }
}

int planCommand(const PlanOptions& o) { return planCommand(o, std::cout, std::cerr); }

}  // namespace pm::cli
