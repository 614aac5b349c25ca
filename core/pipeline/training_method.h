#pragma once
// A training method: a schedule (its declaration, schedule_decl.h) and the variants that change
// what it keeps or how it updates: activation recompute, PipeMare's T1 (learning-rate rescheduling
// by delay) and T2 (discrepancy correction). The planner's rows, the stability predictor's rows
// and the study's variants are lists of these, named as the experiment format names the schedule
// with the variants appended: "gpipe", "gpipe+recompute", "pipemare+T2", "pipemare+T1+T2".
// Pure data: no LibTorch, no Qt.
#include <string>
#include <vector>

#include "core/pipeline/schedule_decl.h"

namespace pm {

struct TrainingMethod {
  ScheduleKind schedule = ScheduleKind::GPipe;
  bool recompute = false;  // activations recomputed in the backward from the stage's stored input
  bool t1 = false;         // pipemare's T1 (only where the schedule takes pipemare.*)
  bool t2 = false;         // pipemare's T2 (idem)

  const ScheduleDecl& decl() const { return scheduleDecl(schedule); }
  std::string name() const;
  bool operator==(const TrainingMethod& o) const {
    return schedule == o.schedule && recompute == o.recompute && t1 == o.t1 && t2 == o.t2;
  }
  bool operator!=(const TrainingMethod& o) const { return !(*this == o); }
};

// A method by its name; the variants in any order, "t1"/"t2" also lower-case. Throws
// std::invalid_argument naming the problem: an unknown schedule or variant, or T1/T2 on a schedule
// that does not take pipemare.*.
TrainingMethod trainingMethodFromName(const std::string& name);

// The first of `among` named `name` (as trainingMethodFromName reads it); throws
// std::invalid_argument listing `among`'s names otherwise.
TrainingMethod trainingMethodAmong(const std::string& name, const std::vector<TrainingMethod>& among);

// The methods the planner compares, one row each: every schedule in declaration order, gpipe also
// with recompute (the only schedule whose memory recompute changes in kind), pipemare also with T2.
const std::vector<TrainingMethod>& planMethods();

// The stability predictor's rows (pipemare plan --stability): every schedule, in declaration order,
// then each schedule that takes pipemare.* with T1. gpipe+recompute shares gpipe's numerics and
// pipemare+T2 shares pipemare's row in that model (T2 makes the stale gradient consistent; the
// delay stays tau); a synchronous schedule's delay is 0, so gpipe, 1f1b and zb-h1 share one edge.
const std::vector<TrainingMethod>& stabilityMethods();
// The row that predicts a method: its schedule, with T1 where it takes pipemare.* and has T1 on.
TrainingMethod stabilityMethodOf(const TrainingMethod& method);

// The row of the empirical probe (core/planner/stability_probe.h) that measures a method: every
// synchronous schedule, chunked or not, computes gpipe's update; recompute changes no number; T1
// and T2 only where the schedule takes pipemare.* (T2 is its own row: the probe trains, and T2
// changes the weights a stale gradient is computed at).
TrainingMethod probeMethodOf(const TrainingMethod& method);

// "a, b, c": the names of a list, for messages.
std::string trainingMethodNames(const std::vector<TrainingMethod>& methods);

}  // namespace pm
