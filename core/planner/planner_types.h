#pragma once
// The planner's vocabulary. What it compares are training methods (core/pipeline/training_method.h:
// a schedule from its declaration, with recompute and PipeMare's T1/T2), its timing is the
// format's PipelineTiming; its own is only the optimizer category whose state it accounts.
// No LibTorch.
#include <string>
#include <vector>

#include "core/config/choices.h"
#include "core/pipeline/schedule.h"
#include "core/pipeline/training_method.h"

namespace pm {

// The planner's row of a design: {kind, recompute, T2} where planMethods() has that row, else
// the row without the variants it lacks (1f1b with recompute is 1f1b: recompute changes its
// memory's kind only for gpipe in this accounting; T2 exists only where pipemare.* applies).
TrainingMethod planMethodOf(ScheduleKind kind, bool recompute = false, bool t2 = false);
// A planner row by name (planMethods()' names; "pipemare+t2" too); throws std::invalid_argument
// listing the rows otherwise.
TrainingMethod planMethodFromName(const std::string& name);

// Paper: a fine-grained pipeline where each stage does one forward and one backward per time
// step (the PipeMare paper's model). Software1F1B: a stage runs one forward or one backward at a
// time, as this engine's schedules do. The format's pipeline.timing values.
// "paper" | "1f1b" (also "software-1f1b"); throws std::invalid_argument otherwise.
PipelineTiming timingFromName(const std::string& name);
std::string timingName(PipelineTiming t);  // "paper" | "1f1b"

enum class OptimizerKind { Sgd, SgdMomentum, Adam };
// "sgd" | "sgd-momentum" | "adam"; throws std::invalid_argument otherwise.
OptimizerKind optimizerFromName(const std::string& name);
std::string optimizerName(OptimizerKind o);
// Optimizer state in units of the weights: sgd 0, sgd-momentum 1 (momentum), adam 2 (two moments).
int optimizerStateMultiple(OptimizerKind o);

}  // namespace pm
