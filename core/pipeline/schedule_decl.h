#pragma once
// The one declaration of each pipeline schedule: its name in the experiment format, what kind of
// training it is (synchronous with a flush, or asynchronous with which weight-policy family),
// whether its backward is split, which experiment fields apply to it, and the generator of its
// per-stage action lists. The config rules, the designer's field metadata, StagePlan, the weight
// policies, the planner and the workbench read these traits; none of them switches on a schedule.
// Adding a schedule = one enum value, one row in schedule_decl.cpp, its generator, its tests
// (docs/architecture.md, "How to add a schedule"). Pure data: no LibTorch, no Qt.
#include <cstdint>
#include <string>
#include <vector>

namespace pm {

// pipeline.schedule
enum class ScheduleKind { GPipe, OneFOneB, ZBH1, PipeDream, PipeDream2BW, PipeMare };

// Which weights a pass uses (the engine's WeightPolicy family).
enum class WeightFamily {
  Current,      // synchronous: every pass of a minibatch sees the same weights
  Stash,        // pipedream: a backward uses the version its forward used (one version per microbatch in flight)
  TwoVersions,  // pipedream-2bw: at most two versions, a step per m microbatches
  Predicted,    // pipemare: the current weights (T2: extrapolated back by the delay)
};

struct Action;
struct ScheduleParams;
// The ordered actions of one stage for ScheduleParams (validated by the caller).
using ActionGenerator = std::vector<Action> (*)(const ScheduleParams& p, int stage);

struct ScheduleDecl {
  ScheduleKind kind;
  const char* name;     // the format's value ("zb-h1")
  const char* summary;  // one line for lists and help
  // Synchronous: a flush per minibatch and one step after it (every microbatch of a minibatch sees
  // the same weights). Otherwise asynchronous: steps while microbatches are in flight.
  bool synchronous;
  WeightFamily weights;
  // The backward runs as BackwardInput then BackwardWeight (zero-bubble schedules).
  bool splitBackward;
  // The experiment fields that apply to it (the others must keep their defaults):
  bool takesUpdateInterval;  // pipeline.update_interval (pipedream: steps every u; 2bw: m >= P)
  bool takesTiming;          // pipeline.timing = paper (forwards 2(P-1-s) ahead)
  bool takesPipeMare;        // pipemare.* (T1, T2, warm-up, momentum mode)
  ActionGenerator generate;
};

// Every schedule, in the order lists and messages show them.
const std::vector<ScheduleDecl>& scheduleDecls();
const ScheduleDecl& scheduleDecl(ScheduleKind k);  // throws std::invalid_argument for a value outside the table

// The names of the schedules with a trait, for messages ("pipedream or pipemare").
std::string scheduleNamesWhere(bool (*has)(const ScheduleDecl&), const char* conjunction = "or");

bool isAsynchronous(ScheduleKind k);  // !scheduleDecl(k).synchronous

}  // namespace pm
