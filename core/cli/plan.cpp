#include "core/cli/plan.h"
#include "core/cli/plan_events.h"
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
  if (o.chunks < 2) throw Usage("--chunks", "interleaved 1F1B needs at least 2 chunks per rank, found " + std::to_string(o.chunks));
  p.spec.chunks = o.chunks;
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
  PlanDesign d = planDesign(e, knownTrainSamples(e));
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
    // The design's row is its chunked row, over the model split into chunks x ranks stages; the
    // one-stage-per-rank rows beside it use the parameter partition over the ranks.
    o.chunks = pipelineChunks(e);
    o.designNote = std::string(sd.name) + " holds " + std::to_string(o.chunks) + " model chunks on each of " +
                   std::to_string(e.pipeline.stages) + " ranks (" + std::to_string(modelStages(e)) +
                   " stages); its row's memory is per rank, its other figures as every row's";
    if (d.partition == PlanPartition::Explicit) {
      o.chunkBoundaries = d.boundaries;
      d.partition = PlanPartition::Parameters;
    }
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

// Each stage's F, B, BI and W: its units' measured costs summed.
std::vector<UnitOpCosts> stageOpCostsOf(const std::vector<UnitOpCosts>& units, const std::vector<StageProfile>& stages) {
  std::vector<UnitOpCosts> out;
  for (const auto& st : stages) {
    UnitOpCosts sum;
    for (int u = st.begin; u < st.end; ++u) {
      const UnitOpCosts& c = units.at(static_cast<size_t>(u));
      sum.forward += c.forward;
      sum.backward += c.backward;
      sum.backwardInput += c.backwardInput;
      sum.weight += c.weight;
    }
    out.push_back(sum);
  }
  return out;
}

// --stage-costs measured: every unit's F, B, BI and W timed on one microbatch (one thread, as a
// stage), summed over each stage's units; the timelines and the utilization use them instead of
// FLOPs. Returns the units' costs (the chunked rows sum them over their own stages).
std::vector<UnitOpCosts> measureStageCosts(const PlanOptions& o, const std::optional<Experiment>& fileModel, PlanReport& report,
                                           SimCosts& costs) {
  Experiment e;
  if (fileModel) {
    e = *fileModel;
  } else {
    e.model.name = o.model;
    e.data.context = o.context;
  }
  std::vector<UnitOpCosts> units = measureUnitOpCosts(e, report.samplesPerMicrobatch);
  report.stageOpCosts = stageOpCostsOf(units, report.stages);
  costs.backwardInput.clear();
  for (size_t s = 0; s < report.stages.size(); ++s) {
    const UnitOpCosts& sum = report.stageOpCosts[s];
    costs.forward[s] = sum.forward;
    costs.backward[s] = sum.backward;
    costs.backwardInput.push_back(sum.backwardInput);
    costs.weight[s] = sum.weight;
  }
  return units;
}

// The chunked rows' model split into v x P stages, as the one-chunk rows': the units partitioned
// as the design's partition says (explicit boundaries: a chunked design's own, which count its
// model stages), costs from FLOPs or from the units' measured passes. Where the model has fewer
// units (or weight layers) than v x P, each of the rows' P stages is cut into v equal parts (the
// op-cost planner's "a chunk costs 1/v"), and the report says so.
ChunkedStagesFn chunkedSplit(const PlanOptions& o, const ModelProfile& prof, PlanReport& report,
                             const std::vector<UnitOpCosts>& measuredUnits) {
  return [&o, &prof, &report, &measuredUnits](int modelStages) {
    const int P = static_cast<int>(report.stages.size());
    const int v = modelStages / std::max(1, P);
    const int available = static_cast<int>(report.granularity == Granularity::Layers ? prof.layers.size() : prof.units.size());
    ChunkedStages out;
    SimCosts sc;
    if (modelStages > available) {
      if (!o.chunkBoundaries.empty())
        throw std::invalid_argument(std::to_string(modelStages) + " stages exceed the model's " + std::to_string(available) + " units");
      // Equal fractions of each stage: the one-chunk rows' stages and costs, divided by v.
      const SimCosts whole = costsFromStages(report.stages, o.flopsPerSecond, 2.0, 0.0, {o.linkLatency, o.linkBandwidth});
      for (int k = 0; k < modelStages; ++k) {
        const size_t j = static_cast<size_t>(k / v);
        StageProfile part = report.stages[j];
        part.name += " (" + std::to_string(k % v + 1) + "/" + std::to_string(v) + ")";
        part.parameters /= v;
        part.weightBytes /= v;
        part.activationBytes /= v;
        part.forwardFlops /= v;
        out.stages.push_back(part);
        const bool measured = !report.stageOpCosts.empty();
        const double f = measured ? report.stageOpCosts[j].forward : whole.forward[j];
        const double b = measured ? report.stageOpCosts[j].backward : whole.backward[j];
        const double bi = measured ? report.stageOpCosts[j].backwardInput : whole.backward[j] - whole.weight[j];
        const double w = measured ? report.stageOpCosts[j].weight : whole.weight[j];
        out.costs.forward.push_back(f / v);
        out.costs.backward.push_back(b / v);
        out.costs.backwardInput.push_back(bi / v);
        out.costs.weight.push_back(w / v);
      }
      report.chunkSplit = "fractions";
      out.costs.comm = o.linkLatency;
      return out;
    }
    if (report.granularity == Granularity::Layers) {
      out.stages = layerStages(prof, layerParameterPartition(prof, modelStages), report.samplesPerMicrobatch);
    } else {
      Partition part;
      if (!o.chunkBoundaries.empty()) {
        part = explicitPartition(o.chunkBoundaries, available, modelStages);  // invalid_argument names the problem
      } else if (report.partition == "flops") {
        std::vector<double> flops;
        for (const auto& u : prof.units) flops.push_back(u.flops);
        part = balancedPartition(flops, modelStages);
      } else {
        part = parameterPartition(prof, modelStages);
      }
      out.stages = unitStages(prof, part, report.samplesPerMicrobatch);
    }
    sc = costsFromStages(out.stages, o.flopsPerSecond, 2.0, 0.0, {o.linkLatency, o.linkBandwidth});
    out.costs.forward = sc.forward;
    out.costs.backward = sc.backward;
    out.costs.weight = sc.weight;
    for (size_t k = 0; k < sc.forward.size(); ++k) out.costs.backwardInput.push_back(sc.backward[k] - sc.weight[k]);
    if (!measuredUnits.empty()) {
      const std::vector<UnitOpCosts> m = stageOpCostsOf(measuredUnits, out.stages);
      for (size_t k = 0; k < m.size(); ++k) {
        out.costs.forward[k] = m[k].forward;
        out.costs.backward[k] = m[k].backward;
        out.costs.backwardInput[k] = m[k].backwardInput;
        out.costs.weight[k] = m[k].weight;
      }
    }
    out.costs.comm = o.linkLatency;
    report.chunkSplit = "units";
    return out;
  };
}

// Simulates every schedule over the report's stages (--trace-minibatches minibatches), writes each
// timeline into --trace-dir as <schedule>.json and the trace schedule's into --trace FILE.
void simulateTimelines(const PlanOptions& o, const ParsedOptions& p, int P, const SimCosts& costs, const ChunkedStagesFn& split,
                       PlanReport& report) {
  if (!o.traceDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.traceDir, ec);
    if (ec) throw EngineError(o.traceDir, "cannot create the trace folder: " + ec.message());
  }
  for (const auto& plan : report.comparison.plans) {
    SimResult sim;
    if (plan.chunks > 1) {
      // Several chunks per rank: each rank's own list over the model split into v x P stages;
      // the trace's rows are the model stages (plan.stageRanks puts them on their ranks).
      ScheduleParams sp;
      sp.kind = plan.method.schedule;
      sp.stages = plan.chunks * P;
      sp.microbatches = o.microbatches;
      sp.minibatches = o.traceMinibatches;
      sp.chunks = plan.chunks;
      sim = simulateChunkedSchedule(sp, split(sp.stages).costs);
    } else {
      sim = simulatePlanSchedule(plan.method, P, p.spec, costs, o.traceMinibatches);
    }
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
  std::vector<UnitOpCosts> measuredUnits;
  if (o.stageCosts == "measured") measuredUnits = measureStageCosts(o, fileModel, report, costs);
  const ChunkedStagesFn split = chunkedSplit(o, prof, report, measuredUnits);
  report.comparison = planAll(report.stages, stageSpec(o, p, costs, report), split);
  simulateTimelines(o, p, P, costs, split, report);

  if (o.json)
    out << planReportJson(report).dump(2) << "\n";
  else
    printPlanReport(out, report);
  return 0;
}

}  // namespace

int planCommand(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  if (o.events) return planWithEvents(o, out, [&err](const PlanOptions& j, std::ostream& doc) { return planCommand(j, doc, err); });
  if (!o.stability.empty()) return planStabilityCommand(o, out, err);
  if (!o.opCosts.empty()) return planOpCostsCommand(o, out, err);
  return planGuard("", err, [&] { return run(o, out); }, o.failed);
}

int planGuard(const std::string& subject, std::ostream& err, const std::function<int()>& body,
              const std::function<void(const PlanFailure&)>& failed) {
  const auto fail = [&](const std::string& place, const std::string& problem, int code) {
    err << "pipemare plan: " << (place.empty() ? std::string() : place + ": ") << problem << "\n";
    if (failed) failed({place, problem, code});
    return code;
  };
  try {
    return body();
  } catch (const Usage& e) {
    return fail(e.place, e.problem, 2);
  } catch (const Error& e) {
    return fail(e.place(), e.problem(), e.exitCode());
  } catch (const std::invalid_argument& e) {
    return fail(subject, e.what(), 2);
  } catch (const std::exception& e) {
    return fail(subject, e.what(), 1);
  }
}

int planCommand(const PlanOptions& o) { return planCommand(o, std::cout, std::cerr); }

}  // namespace pm::cli
