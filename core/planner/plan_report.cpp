#include "core/planner/plan_report.h"

#include <cstdio>

namespace pm {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, size_t w, bool left = false) {
  if (s.size() >= w) return s;
  return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

std::string mib(int64_t bytes) { return fmt("%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0)); }

Json memoryJson(const MemoryBreakdown& m) {
  return {{"weights", m.weights},         {"gradients", m.gradients}, {"optimizer", m.optimizer},
          {"stash", m.stash},             {"delta", m.delta},         {"activations", m.activations},
          {"weight_and_optimizer", m.weightAndOptimizer()}, {"total", m.total()}};
}

std::string stagesText(const PlanReport& r) {
  const auto P = r.stages.size();
  if (r.granularity == Granularity::Layers) {
    bool single = true;
    for (const auto& s : r.stages) single = single && s.end - s.begin == 1;
    return std::to_string(P) + (single ? " stages (one per weight layer)" : " stages (weight layers partitioned by parameters)");
  }
  if (r.partition == "explicit") return std::to_string(P) + " stages (units split at the given boundaries)";
  if (r.partition == "flops") return std::to_string(P) + " stages (units balanced by forward FLOPs)";
  return std::to_string(P) + " stages (units partitioned by parameters, as the engine)";
}

// How the utilization treats the stages' times, in words.
std::string stageCostsText(const PlanReport& r) {
  if (r.stageCosts != "flops" && r.stageCosts != "measured")
    return "equal stages assumed" + (r.stageCostsNote.empty() ? std::string() : " (" + r.stageCostsNote + ")");
  const auto& p = r.comparison.plans.front();
  const double P = static_cast<double>(r.stages.size());
  const std::string source = r.stageCosts == "measured"
                                 ? "each stage's forward+backward time as measured on one microbatch (F, B; zb-h1 its BI and W)"
                                 : "each stage's forward+backward time from its forward FLOPs (backward 2x forward)";
  return source + "; slowest stage " +
         std::to_string(p.bottleneckStage) + " does " + fmt("%.1f", p.bottleneckShare * 100) + " % of the work (" +
         fmt("%.1f", 100 / P) + " % with equal stages), so an unflushed pipeline reaches at most " +
         fmt("%.3f", 1 / (P * p.bottleneckShare));
}

Json timelineJson(const PlanTraceInfo& t) {
  Json j = {{"minibatches", t.minibatches},
            {"makespan_s", t.makespan},
            {"utilization", t.utilization},
            {"bubble", 1.0 - t.utilization}};
  if (!t.file.empty()) j["file"] = t.file;
  return j;
}

}  // namespace

void printPlanReport(std::ostream& out, const PlanReport& r) {
  const auto& c = r.comparison;
  out << "pipemare plan: " << r.model << ", " << stagesText(r) << ", N = " << c.spec.microbatches
      << " microbatches of " << r.samplesPerMicrobatch << " sample" << (r.samplesPerMicrobatch == 1 ? "" : "s")
      << ", optimizer " << optimizerName(c.spec.optimizer) << ", timing " << timingName(c.spec.timing) << "\n";
  out << "accounting: " << accountingText(c.spec) << "\n";
  if (!r.designNote.empty()) out << "design: " << r.designNote << "\n";
  out << "\n";

  const char* cats[] = {"weights", "grads", "optim", "stash", "delta", "activ"};
  // Column groups: 55 characters of schedule figures, 8 per category + 9 for the stage total, then totals.
  out << pad("", 55) << " | " << pad("per-stage max (MiB)", 6 * 8 + 9, true) << " | total over stages (MiB)\n";
  out << pad("schedule", 16, true) << pad("util", 7) << pad("bubble", 8) << pad("max_tau", 8) << pad("versions", 9)
      << pad("in_flt", 7) << " |";
  for (const char* k : cats) out << pad(k, 8);
  out << pad("stage", 9) << " |";
  for (const char* k : cats) out << pad(k, 9);
  out << pad("total", 10) << "\n";
  for (const auto& p : c.plans) {
    const auto& mx = p.perStageMax;
    const auto& t = p.total;
    out << pad(p.method.name(), 16, true) << pad(fmt("%.3f", p.utilization), 7)
        << pad(fmt("%.3f", p.bubble), 8) << pad(std::to_string(p.maxTau), 8) << pad(std::to_string(p.maxVersions), 9)
        << pad(std::to_string(p.maxInFlight), 7) << " |";
    for (int64_t v : {mx.weights, mx.gradients, mx.optimizer, mx.stash, mx.delta, mx.activations}) out << pad(mib(v), 8);
    out << pad(mib(p.maxStageTotal), 9) << " |";
    for (int64_t v : {t.weights, t.gradients, t.optimizer, t.stash, t.delta, t.activations}) out << pad(mib(v), 9);
    out << pad(mib(t.total()), 10) << "\n";
  }
  for (const auto& p : c.plans)
    if (p.chunks > 1) {
      out << p.method.name() << ": " << p.chunks << " chunks on each of " << p.stages << " ranks (" << p.chunks * p.stages
          << " stages, " << (r.chunkSplit == "fractions" ? "each of the P stages cut into equal parts: the model has fewer units than that"
                                                          : "the units partitioned as the engine does")
          << "); its per-stage columns are per rank, in_flt counts chunk activations (one chunk's of one microbatch)\n";
    }
  for (const auto& [method, why] : c.notPlanned) out << method.name() << ": not planned: " << why << "\n";
  const auto& gp = c.plan(TrainingMethod{ScheduleKind::GPipe});
  const auto& mare = c.plan(TrainingMethod{ScheduleKind::PipeMare});
  const auto& pd = c.plan(TrainingMethod{ScheduleKind::PipeDream});
  const auto& pt = c.plan(TrainingMethod{ScheduleKind::PipeMare, false, false, true});
  out << "\nutilization pipemare/gpipe: " << fmt("%.2f", c.utilizationRatio()) << "x (" << fmt("%.3f", mare.utilization)
      << " vs " << fmt("%.3f", gp.utilization) << ")\n";
  if (c.spec.warmupFraction > 0) {
    const double u = c.warmupUtilization();
    out << "pipemare after a synchronous warm-up (gpipe) of " << fmt("%.0f", c.spec.warmupFraction * 100)
        << " % of the minibatches: utilization " << fmt("%.3f", u) << " (time-weighted: " << fmt("%.3f", gp.utilization)
        << " during the warm-up, then " << fmt("%.3f", mare.utilization) << "), " << fmt("%.2f", u / gp.utilization)
        << "x gpipe\n";
  }
  out << "weight+optimizer memory pipedream/pipemare+T2: " << fmt("%.2f", c.memoryRatio()) << "x ("
      << mib(pd.total.weightAndOptimizer()) << " MiB vs " << mib(pt.total.weightAndOptimizer())
      << " MiB, summed over stages); pipedream/pipemare without T2: " << fmt("%.2f", c.memoryRatioNoDelta()) << "x\n";
  out << "stage costs: " << stageCostsText(r) << "\n";
  if (!r.stageOpCosts.empty()) {
    out << "measured per microbatch (ms):";
    for (size_t s = 0; s < r.stageOpCosts.size(); ++s) {
      const UnitOpCosts& c = r.stageOpCosts[s];
      out << (s ? ";" : "") << " stage " << s << " F " << fmt("%.2f", 1e3 * c.forward) << " B " << fmt("%.2f", 1e3 * c.backward)
          << " BI " << fmt("%.2f", 1e3 * c.backwardInput) << " W " << fmt("%.2f", 1e3 * c.weight);
    }
    out << "\n";
  }
  if (!r.timelines.empty()) {
    const int64_t k = r.timelines.front().minibatches;
    out << "simulated timelines (" << k << (k == 1 ? " minibatch" : " minibatches")
        << ", fill and drain included), utilization:";
    for (const auto& t : r.timelines) out << " " << t.schedule << " " << fmt("%.3f", t.utilization) << (&t == &r.timelines.back() ? "" : ",");
    out << "\n";
    // Utilization counts every pass as busy; where a schedule computes more (a split backward's
    // BI + W costs more than B when measured), only the makespan says which finishes first.
    out << "simulated makespan (ms):";
    for (const auto& t : r.timelines) out << " " << t.schedule << " " << fmt("%.3f", t.makespan * 1e3) << (&t == &r.timelines.back() ? "" : ",");
    out << "\n";
  }
  if (r.trace) {
    out << "trace: " << r.trace->file << " (" << r.trace->schedule << ", " << r.trace->minibatches
        << " minibatches simulated, makespan " << fmt("%.3f", r.trace->makespan * 1e3) << " ms, utilization "
        << fmt("%.3f", r.trace->utilization) << ")\n";
  }
}

Json planReportJson(const PlanReport& r) {
  const auto& c = r.comparison;
  Json j;
  j["model"] = r.model;
  j["granularity"] = granularityName(r.granularity);
  j["partition"] = r.partition;
  j["stages"] = r.stages.size();
  if (!r.designNote.empty()) j["design_note"] = r.designNote;
  j["microbatches"] = c.spec.microbatches;
  j["samples_per_microbatch"] = r.samplesPerMicrobatch;
  j["optimizer"] = optimizerName(c.spec.optimizer);
  j["timing"] = timingName(c.spec.timing);
  j["accounting"] = accountingText(c.spec);
  j["stage_costs"] = r.stageCosts;
  if (!r.stageCostsNote.empty()) j["stage_costs_note"] = r.stageCostsNote;
  j["stage_time_s"] = r.stageTimes;
  if (!r.stageOpCosts.empty()) {
    Json ops = Json::array();
    for (const auto& c : r.stageOpCosts)
      ops.push_back({{"forward_s", c.forward}, {"backward_s", c.backward}, {"backward_input_s", c.backwardInput}, {"weight_s", c.weight}});
    j["stage_op_costs"] = ops;
  }
  Json stages = Json::array();
  for (const auto& s : r.stages)
    stages.push_back({{"name", s.name},
                      {"begin", s.begin},
                      {"end", s.end},
                      {"parameters", s.parameters},
                      {"weight_bytes", s.weightBytes},
                      {"input_bytes", s.inputBytes},
                      {"activation_bytes", s.activationBytes},
                      {"output_bytes", s.outputBytes},
                      {"forward_flops", s.forwardFlops}});
  j["stage_profiles"] = std::move(stages);
  Json plans = Json::array();
  for (size_t i = 0; i < c.plans.size(); ++i) {
    const auto& p = c.plans[i];
    Json tau = Json::array(), versions = Json::array(), flight = Json::array(), totals = Json::array();
    Json memByStage = Json::array();
    for (const auto& s : p.perStage) {
      memByStage.push_back(memoryJson(s.memory));
      tau.push_back(s.timing.tau);
      versions.push_back(s.timing.versions);
      flight.push_back(s.timing.inFlight);
      totals.push_back(s.memory.total());
    }
    Json maxMem = memoryJson(p.perStageMax);
    maxMem["stage_total"] = p.maxStageTotal;
    plans.push_back({{"schedule", p.method.name()},
                     {"utilization", p.utilization},
                     {"bubble", p.bubble},
                     {"update_interval", p.updateInterval},
                     {"max_tau", p.maxTau},
                     {"max_versions", p.maxVersions},
                     {"max_in_flight", p.maxInFlight},
                     {"memory", {{"per_stage_max", maxMem}, {"total", memoryJson(p.total)}}},
                     {"per_stage", {{"tau", tau}, {"versions", versions}, {"in_flight", flight}, {"total_bytes", totals},
                                    {"memory", memByStage}}},
                     {"bottleneck", {{"stage", p.bottleneckStage >= 0 ? Json(p.bottleneckStage) : Json()},
                                     {"share", p.bottleneckShare}}}});
    plans.back()["chunks"] = p.chunks;
    if (p.chunks > 1) {
      plans.back()["stage_ranks"] = p.stageRanks;
      plans.back()["per_stage_is"] = "rank";
    }
    if (i < r.timelines.size()) plans.back()["timeline"] = timelineJson(r.timelines[i]);
  }
  j["schedules"] = std::move(plans);
  if (!r.chunkSplit.empty()) j["chunk_split"] = r.chunkSplit;
  Json notPlanned = Json::array();
  for (const auto& [method, why] : c.notPlanned) notPlanned.push_back({{"schedule", method.name()}, {"why", why}});
  j["not_planned"] = std::move(notPlanned);
  j["warmup_fraction"] = c.spec.warmupFraction;
  j["utilization_pipemare_with_warmup"] = c.warmupUtilization();
  j["ratios"] = {{"utilization_pipemare_over_gpipe", c.utilizationRatio()},
                 {"weight_optimizer_memory_pipedream_over_pipemare_t2", c.memoryRatio()},
                 {"weight_optimizer_memory_pipedream_over_pipemare", c.memoryRatioNoDelta()}};
  if (r.trace)
    j["trace"] = {{"file", r.trace->file},
                  {"schedule", r.trace->schedule},
                  {"minibatches", r.trace->minibatches},
                  {"makespan_s", r.trace->makespan},
                  {"utilization", r.trace->utilization}};
  return j;
}

}  // namespace pm
