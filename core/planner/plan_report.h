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

struct PlanTraceInfo {
  std::string file;
  std::string schedule;
  int64_t minibatches = 0;
  double makespan = 0;     // simulated seconds
  double utilization = 0;  // simulated mean utilization
};

struct PlanReport {
  std::string model;
  Granularity granularity = Granularity::Layers;
  std::string partition = "parameters";  // units: parameters | flops | explicit
  int64_t samplesPerMicrobatch = 1;
  std::vector<StageProfile> stages;
  PlanComparison comparison;
  std::optional<PlanTraceInfo> trace;
};

// One row per schedule, the ratios and the accounting line.
void printPlanReport(std::ostream& out, const PlanReport& r);
// The same content as JSON (bytes, not MiB), plus per-stage figures.
Json planReportJson(const PlanReport& r);

}  // namespace pm
