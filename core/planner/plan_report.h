#pragma once
// Rendering a plan comparison: the text table of `pipemare plan` and its JSON form. No LibTorch.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/planner/analytic_planner.h"
#include "core/planner/stage_profile.h"

namespace pm {

// A simulated timeline: the engine's action lists of one schedule over `minibatches` minibatches
// with the stages' simulated costs.
struct PlanTraceInfo {
  std::string file;  // its Chrome trace ("" = not written)
  std::string schedule;
  int64_t minibatches = 0;
  double makespan = 0;     // simulated seconds
  double utilization = 0;  // busy share of the stages' time on it: F, B and S over P x makespan
};

struct PlanReport {
  std::string model;
  Granularity granularity = Granularity::Layers;
  std::string partition = "parameters";  // units: parameters | flops | explicit
  int64_t samplesPerMicrobatch = 1;
  std::vector<StageProfile> stages;
  PlanComparison comparison;
  // "flops": the utilization of every schedule uses each stage's forward+backward time from its
  // FLOPs (stageTimes, the timelines' costs); "measured": from its passes timed (stageOpCosts); "equal": equal stages are assumed (the paper's
  // setting, or stageCostsNote says why the profile could not give them).
  std::string stageCosts = "equal";
  std::string stageCostsNote;
  std::vector<double> stageTimes;  // simulated forward+backward seconds per stage, per microbatch
  // "measured": each stage's F, B, BI and W timed on one microbatch (the timelines' costs; empty otherwise).
  std::vector<UnitOpCosts> stageOpCosts;
  std::vector<PlanTraceInfo> timelines;  // one per schedule, in comparison.plans order (may be empty)
  std::optional<PlanTraceInfo> trace;
  // Why the design's own schedule has no row of its own ("" when it has one): several chunks per
  // rank, which the analytic rows (one stage per rank) do not cover.
  std::string designNote;
  // How the chunked rows split the model: "units" (v x P stages of the model's units or layers, as
  // the engine), "fractions" (each of the P stages cut into v equal parts: the model has fewer
  // units than v x P), "" (no chunked row).
  std::string chunkSplit;
};

// One row per schedule, the ratios and the accounting line.
void printPlanReport(std::ostream& out, const PlanReport& r);
// The same content as JSON (bytes, not MiB), plus per-stage figures.
Json planReportJson(const PlanReport& r);

}  // namespace pm
