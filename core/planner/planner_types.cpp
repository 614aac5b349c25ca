#include "core/planner/planner_types.h"

#include <stdexcept>

namespace pm {

TrainingMethod planMethodOf(ScheduleKind kind, bool recompute, bool t2) {
  const TrainingMethod tries[] = {{kind, recompute, false, t2}, {kind, false, false, t2}, {kind, recompute}, {kind}};
  for (const TrainingMethod& m : tries)
    for (const TrainingMethod& row : planMethods())
      if (row == m) return row;
  return TrainingMethod{kind};
}

TrainingMethod planMethodFromName(const std::string& name) { return trainingMethodAmong(name, planMethods()); }

PipelineTiming timingFromName(const std::string& name) {
  if (name == "paper") return PipelineTiming::Paper;
  if (name == "1f1b" || name == "software-1f1b" || name == "software") return PipelineTiming::Software1F1B;
  throw std::invalid_argument("unknown timing model '" + name + "' (expected paper or 1f1b)");
}

std::string timingName(PipelineTiming t) { return t == PipelineTiming::Paper ? "paper" : "1f1b"; }

OptimizerKind optimizerFromName(const std::string& name) {
  if (name == "sgd") return OptimizerKind::Sgd;
  if (name == "sgd-momentum" || name == "momentum") return OptimizerKind::SgdMomentum;
  if (name == "adam" || name == "adamw") return OptimizerKind::Adam;
  throw std::invalid_argument("unknown optimizer '" + name + "' (expected sgd, sgd-momentum or adam)");
}

std::string optimizerName(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::SgdMomentum: return "sgd-momentum";
    case OptimizerKind::Adam: return "adam";
  }
  return "unknown";
}

int optimizerStateMultiple(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::Sgd: return 0;
    case OptimizerKind::SgdMomentum: return 1;
    case OptimizerKind::Adam: return 2;
  }
  return 0;
}

}  // namespace pm
