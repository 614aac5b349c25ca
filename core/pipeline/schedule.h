#pragma once
// Pipeline schedules as pure functions: (schedule, P, N, stage, ...) -> the ordered list of
// actions that stage executes. The runtime only executes actions; it never decides the order.
// No LibTorch. Stages are 0-based (s = 0 is the input side); microbatch ids are global across the
// run (minibatch k holds microbatches k*N .. k*N+N-1).
#include <cstdint>
#include <string>
#include <vector>

#include "core/pipeline/schedule_decl.h"

namespace pm {

enum class ActionKind {
  RecvAct,   // receive the activation of `mb` from stage s-1
  Forward,   // forward of `mb`
  SendAct,   // send the activation of `mb` to stage s+1
  RecvGrad,  // receive the gradient w.r.t. this stage's output for `mb` from stage s+1
  Backward,  // backward of `mb`: the input gradient and the weight gradients together
  SendGrad,  // send the gradient w.r.t. this stage's input for `mb` to stage s-1
  Step,      // optimizer step of this stage; `mb` = index of the step at this stage (0-based)
  // The backward split in two (zero-bubble schedules, ../shared/docs/schedules.md):
  BackwardInput,   // the input gradient of `mb` alone, sent upstream at once (trace "BI")
  BackwardWeight,  // the weight gradients of `mb`, later (trace "W"); needs its BackwardInput
};

struct Action {
  ActionKind kind;
  int64_t mb;     // microbatch id (global), or the step index for Step
  int chunk = 0;  // the model chunk of the rank it runs on (schedules with several chunks per rank)
  bool operator==(const Action& o) const { return kind == o.kind && mb == o.mb && chunk == o.chunk; }
};

// ScheduleKind and each schedule's traits and generator are declared once, in schedule_decl.h.

struct ScheduleParams {
  ScheduleKind kind = ScheduleKind::GPipe;
  int stages = 1;             // P >= 1
  int microbatches = 1;       // N >= 1: microbatches per minibatch
  int64_t minibatches = 1;    // number of minibatches covered by the list (>= 1)
  // Microbatches (backwards) between two optimizer steps of a stage for the asynchronous
  // schedules: pipedream: update_interval; pipedream-2bw: m; pipemare: N. Ignored by gpipe/1f1b,
  // which step once per minibatch after the flush.
  int update_interval = 1;
  // pipedream / pipemare: how far forwards run ahead of backwards. false: software 1F1B, P-1-s
  // warm-up forwards at stage s (P-s microbatches in flight). true: the PipeMare paper's
  // fine-grained pipeline, 2(P-1-s) warm-up forwards (2(P-1-s)+1 in flight, as the paper's timing
  // model): a stage then has a whole microbatch of slack on each message round trip, so message
  // latency stops costing utilization, for one more stored input per downstream stage and a
  // longer delay.
  bool paper_timing = false;
  // Model chunks per rank (interleaved-1f1b: pipeline.chunks; zb-v: 2; the others 1). `stages`
  // counts the model's stages, chunks x ranks: stage s runs on rank chunkPlace(p, s).rank.
  int chunks = 1;
};

// The actions of one stage for the whole list, including the communication actions
// (stage 0 has no RecvAct/SendGrad, stage P-1 no SendAct/RecvGrad).
//  gpipe:  per minibatch: F of all N microbatches, then B of all N in reverse order, then Step.
//  1f1b:   per minibatch: min(P-1-s, N) warm-up forwards, then alternate F,B, then the remaining
//          backwards (in microbatch order), then Step.
//  pipedream / pipedream-2bw / pipemare: one continuous 1F1B over all minibatches*N microbatches
//          (warm-up min(P-1-s, total) forwards, 2(P-1-s) with paper_timing, then F,B alternating,
//          then cool-down backwards),
//          with a Step after every `update_interval` backwards at this stage (and one after the
//          final backward if some are left over).
// Validates p and the stage, then runs the schedule's generator (its ScheduleDecl's).
std::vector<Action> stageActions(const ScheduleParams& p, int stage);

// The generators the declarations name (unvalidated input; call stageActions).
std::vector<Action> gpipeActions(const ScheduleParams& p, int stage);
std::vector<Action> oneFOneBActions(const ScheduleParams& p, int stage);
std::vector<Action> asyncOneFOneBActions(const ScheduleParams& p, int stage);  // pipedream, 2bw, pipemare
std::vector<Action> zbH1StageActions(const ScheduleParams& p, int stage);     // zbH1Actions(P, N, minibatches, stage)

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024; schedules.md section 2) for one
// stage, per minibatch: min(N, P-1-s) warm-up forwards; then F(next) and BI(oldest) alternately,
// the k-th BI (k = 0, 1, ...) followed by W(k - s) once k >= s; after the last F the remaining BI,
// each followed by its W as above; then every W left, in microbatch order; then Step. The step
// follows the stage's last W. With communication actions: RecvGrad before and SendGrad after BI.
std::vector<Action> zbH1Actions(int stages, int microbatches, int64_t minibatches, int stage);

// Schedules with v model chunks per rank (schedules.md sections 3 and 4), as compute actions only
// (F, B or BI and W, S; the messages follow from the placement): one rank's list for one minibatch
// of N microbatches. Planner schedules: the engine holds one chunk per rank.
// Interleaved 1F1B (Megatron's virtual stages, "loop" placement: stage c*P + r is chunk c of rank
// r). Needs v >= 2 and N % P == 0 (std::invalid_argument otherwise, saying so).
std::vector<Action> interleaved1F1BActions(int stages, int microbatches, int chunks, int rank);
int interleavedStage(int stages, int rank, int chunk);  // c*P + r
// ZB-V (two chunks in a V: chunk 0 is stage r, chunk 1 stage 2P-1-r), split backward.
std::vector<Action> zbVActions(int stages, int microbatches, int rank);
int zbVStage(int stages, int rank, int chunk);  // r, or 2P-1-r
std::vector<Action> zbVRankActions(int stages, int microbatches, int chunks, int rank);  // zbVActions (chunks = 2)

// Schedules with several chunks per rank in the engine: the ranks (stages / chunks), where a stage
// runs, and a rank's compute actions over the whole run: the one-minibatch list of its
// declaration repeated with microbatch ids offset by k*N, its step one Step(k) per chunk.
int rankCount(const ScheduleParams& p);
// Throws std::invalid_argument naming the first parameter out of range (stages, microbatches,
// minibatches, update interval, paper timing, chunks) for p's schedule.
void checkScheduleParams(const ScheduleParams& p);
struct ChunkPlace {
  int rank = 0;
  int chunk = 0;
};
ChunkPlace chunkPlace(const ScheduleParams& p, int stage);
int stageOfChunk(const ScheduleParams& p, int rank, int chunk);
std::vector<Action> rankComputeActions(const ScheduleParams& p, int rank);
// The generator of the chunked declarations: stage s's share of its rank's compute actions (its
// chunk's, in the rank's order), each wrapped in its communication actions as for one chunk per
// rank; messages between two chunks of one rank (ZB-V's turn at rank P-1) are handed over
// locally by the engine, but listed the same.
std::vector<Action> chunkedStageActions(const ScheduleParams& p, int stage);

// How a rank interleaves its chunks' lists. Each chunk's list is a sequence of entries in one of
// three roles: Lead (a receive, run when the rank reaches the compute it precedes), Compute (the
// k-th compute of the chunk is the k-th of that chunk in the rank's order), Trail (a send or
// bookkeeping, run at once after what it follows). Returns (chunk, index) in execution order:
// for each compute of `rankCompute`, its chunk's entries up to it and the trailing ones after it;
// then whatever is left, chunk by chunk.
enum class OrderRole { Lead, Compute, Trail };
std::vector<std::pair<int, size_t>> mergeRankOrder(const std::vector<std::vector<OrderRole>>& chunkRoles,
                                                   const std::vector<Action>& rankCompute);
OrderRole orderRole(ActionKind k);
// The order of rank r over stageActions(p, stageOfChunk(p, r, c)) for c = 0..chunks-1 (for one
// chunk per rank: its own list, in order).
std::vector<std::pair<int, size_t>> rankOrder(const ScheduleParams& p, int rank);

// Synchronous warm-up followed by an asynchronous schedule (PipeMare's warm-up): the first
// `warmupMinibatches` minibatches use `warmup` (gpipe or 1f1b, flushed), then the same stage
// continues with `p.kind` over the remaining p.minibatches - warmupMinibatches minibatches.
// Microbatch ids and step indices continue across the switch (the asynchronous part's ids are
// offset by warmupMinibatches * N and its steps by the warm-up's step count).
std::vector<Action> stageActionsWithWarmup(const ScheduleParams& p, ScheduleKind warmup, int64_t warmupMinibatches,
                                           int stage);

// The name of an action in trace records ("F", "B", "BI", "W", "S", "recv_act", "send_act",
// "recv_grad", "send_grad"), shared by the engine's trace events and the planner's simulated traces.
const char* traceActionName(ActionKind k);

// Compact text form for literal tests: compute actions only, e.g. "F0 F1 B1 B0 S0".
// withComm: include comm actions too ("rA0 F0 sA0 rG0 B0 sG0 S0").
std::string actionsToString(const std::vector<Action>& actions, bool withComm = false);

// Executes all stages' lists against unbounded FIFO channels (sends never block, a receive
// waits for its message) and reports whether every stage finishes. On a deadlock, `detail`
// names the stuck stages and their next actions. Also checks message order: each receive must
// match the microbatch id of the message at the head of its channel.
struct ScheduleCheck {
  bool ok = false;
  std::string detail;
  int64_t rounds = 0;  // number of global ticks (every stage advancing at most one action per tick)
};
// Throws std::invalid_argument on invalid parameters, like stageActions.
ScheduleCheck checkSchedule(const ScheduleParams& p);

// The same check on explicitly given lists (one per stage, P = stageLists.size()), e.g. a
// hand-edited or recorded list. Every stage must forward and backward each microbatch id in
// [0, totalMicrobatches) exactly once (B after F; or BI after F and W after BI), with the matching
// communication actions, number its Steps 0, 1, 2, ..., and step only with no W pending.  checkSchedule(p) = this applied to stageActions(p, 0..P-1).
// Tick model (both overloads): in each tick every unfinished stage attempts its next action once;
// every action takes one tick; a message becomes receivable in the tick AFTER the one in which it
// was sent (so the result does not depend on the order in which stages are visited).
ScheduleCheck checkSchedule(const std::vector<std::vector<Action>>& stageLists,
                            int64_t totalMicrobatches);

// The same check with ranks as the executors: each rank runs its chunks' lists in rankOrder
// (a rank waiting on a receive waits with all its chunks), messages flow between stages, also
// between two chunks of one rank. For one chunk per rank it is checkSchedule(p).
ScheduleCheck checkRankSchedule(const ScheduleParams& p);

// One action in the text form of actionsToString ("F3", "rA3", "S1", ...).
std::string actionToString(const Action& a);

// Delay tau_s observed in the list: for each backward of `mb` at stage s, the number of Step
// actions between F(mb) and B(mb) at that stage. Returns the maximum over microbatches
// (steady state value for long lists).
// For the lists above (derived in tests/core/pipeline/schedule_test.cpp): gpipe/1f1b 0; the
// asynchronous schedules ceil((P-1-s) / update_interval) once minibatches*N >= P-1-s +
// update_interval, i.e. pipedream (1) P-1-s, pipemare (N) ceil((P-1-s)/N), pipedream-2bw with m >= P
// 1 on every stage but the last (0 there).
int64_t maxObservedDelay(const std::vector<Action>& actions);

// The microbatches of one stage's list whose backward comes after a Step that followed their
// forward (delay > 0): their weights change in between, so an asynchronous runtime recomputes
// them and need not keep their forward's autograd graph. In list order.
std::vector<int64_t> staleMicrobatches(const std::vector<Action>& actions);

}  // namespace pm
