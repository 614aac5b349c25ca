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
enum class ScheduleKind { GPipe, OneFOneB, ZBH1, PipeDream, PipeDream2BW, PipeMare, Interleaved1F1B, ZBV };

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
// Schedules with several model chunks per rank: the compute actions of one rank for one minibatch
// (chunk-tagged), and the stage that chunk c of rank r holds.
using RankGenerator = std::vector<Action> (*)(int ranks, int microbatches, int chunks, int rank);
using ChunkPlacement = int (*)(int ranks, int rank, int chunk);

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
  // Model chunks per rank: 1; a fixed count (zb-v: 2); or 0, the experiment's pipeline.chunks
  // (interleaved-1f1b). With several, the pipeline has chunks x ranks stages, `placement` puts
  // them on ranks (a loop or a V), `rankGenerate` orders a rank's work and `generate` is each
  // stage's share of it (chunkedStageActions).
  int chunks = 1;
  ChunkPlacement placement = nullptr;
  RankGenerator rankGenerate = nullptr;
};

// Every schedule, in the order lists and messages show them.
const std::vector<ScheduleDecl>& scheduleDecls();
const ScheduleDecl& scheduleDecl(ScheduleKind k);  // throws std::invalid_argument for a value outside the table

// The names of the schedules with a trait, for messages ("pipedream or pipemare").
std::string scheduleNamesWhere(bool (*has)(const ScheduleDecl&), const char* conjunction = "or");

bool isAsynchronous(ScheduleKind k);  // !scheduleDecl(k).synchronous

// The model chunks per rank of a schedule: its fixed count, or `configured` (pipeline.chunks)
// when the schedule takes it.
int scheduleChunks(ScheduleKind k, int configured);
bool takesChunks(ScheduleKind k);  // scheduleDecl(k).chunks == 0

}  // namespace pm
