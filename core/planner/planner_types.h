#pragma once
// The planner's vocabulary: the schedules it compares (the engine's five plus gpipe with
// activation recompute and pipemare with T2), the two timing models of the delays, and the
// optimizers whose state it accounts. No LibTorch.
#include <string>
#include <vector>

#include "core/pipeline/schedule.h"

namespace pm {

enum class PlanSchedule { GPipe, GPipeRecompute, OneFOneB, ZbH1, PipeDream, PipeDream2BW, PipeMare, PipeMareT2 };

// gpipe, gpipe+recompute, 1f1b, zb-h1, pipedream, pipedream-2bw, pipemare, pipemare+T2
const std::vector<PlanSchedule>& allPlanSchedules();
std::string planScheduleName(PlanSchedule s);
// Throws std::invalid_argument for an unknown name (message lists the names).
PlanSchedule planScheduleFromName(const std::string& name);
// The engine schedule whose action lists it runs (recompute and T2 do not change the order).
ScheduleKind engineSchedule(PlanSchedule s);
// The plan row of an engine schedule: gpipe with activation recompute is gpipe+recompute,
// pipemare with T2 pipemare+T2; every other schedule is its own row (recompute and T2 change
// nothing there).
PlanSchedule planScheduleOf(ScheduleKind kind, bool recompute = false, bool t2 = false);
bool isAsynchronous(PlanSchedule s);

// Paper: a fine-grained pipeline where each stage does one forward and one backward per time
// step (the PipeMare paper's model). Software1F1B: a stage runs one forward or one backward at a
// time, as this engine's schedules do.
enum class TimingModel { Paper, Software1F1B };
// "paper" | "1f1b" (also "software-1f1b"); throws std::invalid_argument otherwise.
TimingModel timingFromName(const std::string& name);
std::string timingName(TimingModel t);  // "paper" | "1f1b"

enum class OptimizerKind { Sgd, SgdMomentum, Adam };
// "sgd" | "sgd-momentum" | "adam"; throws std::invalid_argument otherwise.
OptimizerKind optimizerFromName(const std::string& name);
std::string optimizerName(OptimizerKind o);
// Optimizer state in units of the weights: sgd 0, sgd-momentum 1 (momentum), adam 2 (two moments).
int optimizerStateMultiple(OptimizerKind o);

}  // namespace pm
