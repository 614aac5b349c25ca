#include "core/planner/planner_types.h"

#include <stdexcept>

namespace pm {

const std::vector<PlanSchedule>& allPlanSchedules() {
  static const std::vector<PlanSchedule> all = {PlanSchedule::GPipe,     PlanSchedule::GPipeRecompute,
                                                PlanSchedule::OneFOneB,  PlanSchedule::ZbH1, PlanSchedule::PipeDream,
                                                PlanSchedule::PipeDream2BW, PlanSchedule::PipeMare,
                                                PlanSchedule::PipeMareT2};
  return all;
}

// The engine schedule's name (the experiment format's), with the variant's suffix.
std::string planScheduleName(PlanSchedule s) {
  const std::string engine = scheduleDecl(engineSchedule(s)).name;
  if (s == PlanSchedule::GPipeRecompute) return engine + "+recompute";
  if (s == PlanSchedule::PipeMareT2) return engine + "+T2";
  return engine;
}

PlanSchedule planScheduleFromName(const std::string& name) {
  for (auto s : allPlanSchedules())
    if (planScheduleName(s) == name) return s;
  if (name == "pipemare+t2") return PlanSchedule::PipeMareT2;
  std::string list;
  for (auto s : allPlanSchedules()) list += (list.empty() ? "" : ", ") + planScheduleName(s);
  throw std::invalid_argument("unknown schedule '" + name + "' (expected one of: " + list + ")");
}

ScheduleKind engineSchedule(PlanSchedule s) {
  switch (s) {
    case PlanSchedule::GPipe:
    case PlanSchedule::GPipeRecompute: return ScheduleKind::GPipe;
    case PlanSchedule::OneFOneB: return ScheduleKind::OneFOneB;
    case PlanSchedule::ZbH1: return ScheduleKind::ZBH1;
    case PlanSchedule::PipeDream: return ScheduleKind::PipeDream;
    case PlanSchedule::PipeDream2BW: return ScheduleKind::PipeDream2BW;
    case PlanSchedule::PipeMare:
    case PlanSchedule::PipeMareT2: return ScheduleKind::PipeMare;
  }
  return ScheduleKind::GPipe;
}

PlanSchedule planScheduleOf(ScheduleKind kind, bool recompute, bool t2) {
  switch (kind) {
    case ScheduleKind::GPipe: return recompute ? PlanSchedule::GPipeRecompute : PlanSchedule::GPipe;
    case ScheduleKind::OneFOneB: return PlanSchedule::OneFOneB;
    case ScheduleKind::ZBH1: return PlanSchedule::ZbH1;
    case ScheduleKind::PipeDream: return PlanSchedule::PipeDream;
    case ScheduleKind::PipeDream2BW: return PlanSchedule::PipeDream2BW;
    case ScheduleKind::PipeMare: return t2 ? PlanSchedule::PipeMareT2 : PlanSchedule::PipeMare;
  }
  return PlanSchedule::GPipe;
}

bool isAsynchronous(PlanSchedule s) { return isAsynchronous(engineSchedule(s)); }

TimingModel timingFromName(const std::string& name) {
  if (name == "paper") return TimingModel::Paper;
  if (name == "1f1b" || name == "software-1f1b" || name == "software") return TimingModel::Software1F1B;
  throw std::invalid_argument("unknown timing model '" + name + "' (expected paper or 1f1b)");
}

std::string timingName(TimingModel t) { return t == TimingModel::Paper ? "paper" : "1f1b"; }

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
