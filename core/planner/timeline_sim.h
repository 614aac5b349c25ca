#pragma once
// Discrete-event simulation of a pipeline: each stage executes its action list (stageActions,
// any schedule, or lists given explicitly) one action at a time, with given forward / backward /
// optimizer-step costs per stage and a link model for the sends. Produces trace records in the
// engine's trace-event form (core/events/event.h, ev::kTrace: stage, action, mb, start, end),
// the makespan and per-stage busy time and utilization. No LibTorch.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/pipeline/schedule.h"
#include "core/planner/planner_types.h"
#include "core/planner/stage_profile.h"

namespace pm {

struct PlanSpec;  // core/planner/analytic_planner.h

// A send occupies the sender for bytes/bandwidth (serialising onto the link) and the message
// arrives `latency` seconds later.
struct LinkModel {
  double latency = 0;    // seconds per message
  double bandwidth = 0;  // bytes per second; 0 = infinite
  // Rendezvous transport (Gloo): a message moves only once its receive is posted, so every
  // receive ends `latency` after both sides are ready, max(receive start, send end), even when the
  // message was sent long before. Otherwise a message arrives `latency` after its send ends.
  bool rendezvous = false;
};

struct SimCosts {
  std::vector<double> forward;   // seconds per microbatch, one per stage
  std::vector<double> backward;  // seconds per microbatch, one per stage: the whole backward (B)
  // The weight-gradient part of `backward` (empty = 0): a split backward's W costs this and its
  // input part (BI) the rest, backward - weight, unless backwardInput gives BI as measured (the
  // split's two parts together usually cost more than the whole backward).
  std::vector<double> weight;
  std::vector<double> backwardInput;  // a split backward's BI, one per stage (empty: backward - weight)
  std::vector<double> step;      // seconds per optimizer step, one per stage (empty = 0)
  std::vector<int64_t> activationBytes;  // sent by stage s to s+1 per microbatch (empty = 0)
  std::vector<int64_t> gradientBytes;    // sent by stage s to s-1 per microbatch (empty = 0)
  LinkModel link;
};

// One executed action. Action names are the engine's: F, B, BI, W, S, send_act, recv_act,
// send_grad, recv_grad. mb: the microbatch id, or the step index for S. A receive spans the time the stage
// waited for the message (zero when it had already arrived).
struct SimTraceRecord {
  int stage = 0;
  std::string action;
  int64_t mb = 0;
  double start = 0, end = 0;
};

struct SimResult {
  std::vector<SimTraceRecord> trace;  // in execution order per stage, stages interleaved
  double makespan = 0;                // end of the last action
  std::vector<double> busy;           // seconds of F, B, BI, W and S per stage
  std::vector<double> firstForward;   // when each stage's first F started
  std::vector<double> lastEnd;        // when each stage's last action ended
  std::vector<double> utilization;    // busy / makespan per stage
  double meanUtilization = 0;         // sum(busy) / (P * makespan)
};

// Runs the lists (one per stage). Throws std::invalid_argument for cost vectors of the wrong size
// or negative costs, and std::runtime_error naming the stuck stages if the lists deadlock.
SimResult simulateTimeline(const std::vector<std::vector<Action>>& lists, const SimCosts& costs);
// Runs stageActions(p, s) for every stage.
SimResult simulateTimeline(const ScheduleParams& p, const SimCosts& costs);

// Per-op costs of one rank's whole share of the model, any unit, and the cost of a dependency that
// crosses ranks (the op-cost planner, `pipemare plan --op-costs`).
struct OpCosts {
  double forward = 0, backwardInput = 0, backwardWeight = 0;  // a whole backward: the two together
  double comm = 0;
};

// Per-stage op costs of a pipeline whose ranks may hold several stages (chunks): one entry per
// model stage, seconds or any unit; `comm` is charged to every dependency that crosses ranks.
struct RankOpCosts {
  std::vector<double> forward, backward, backwardInput, weight;  // F, a whole B, a split backward's BI and W
  std::vector<double> step;  // a chunk's optimizer step (empty = free)
  double comm = 0;
};

// A list schedule over compute actions alone (F, B, BI, W, S; communication actions are ignored),
// one list per rank, each rank holding `chunks` chunks placed on the stages by stageOf(rank, chunk).
// A rank runs its list in order; an op starts once its dependency has ended, `comm` later when
// that ran on another rank: F(s, m) after F(s-1, m); B or BI(s, m) after B or BI(s+1, m), the last
// stage's after its own F(s, m); W(s, m) after BI(s, m). A hand-over between two stages of one
// rank (ZB-V's turn) costs nothing. Per-rank figures (busy, firstForward, lastEnd, utilization)
// are indexed by rank; SimTraceRecord::stage is the model stage the op ran for. Throws
// std::runtime_error naming the stuck ranks on a deadlock, std::invalid_argument on bad costs.
SimResult simulateRankOps(const std::vector<std::vector<Action>>& ranks, int chunks,
                          const std::function<int(int rank, int chunk)>& stageOf, const RankOpCosts& costs);
// The op-cost planner's form (`pipemare plan --op-costs`): per-op costs of one rank's whole share
// of the model, each chunk costing its kind's cost / chunks, a whole backward BI + W.
SimResult simulateOps(const std::vector<std::vector<Action>>& ranks, int stages, int chunks,
                      const std::function<int(int rank, int chunk)>& stageOf, const OpCosts& costs);
// A schedule with several chunks per rank (p.stages counts the model's stages, p.chunks per rank)
// over p.minibatches minibatches: each rank's rankComputeActions, simulated as above.
SimResult simulateChunkedSchedule(const ScheduleParams& p, const RankOpCosts& costs);

// The timeline of a plan row: the engine's action lists of `schedule` over `stages` stages as
// `spec` sets them up (N, update interval, m, timing; engineScheduleParams), for `minibatches`
// minibatches, run with `costs`. Throws as delayParams and simulateTimeline do.
SimResult simulatePlanSchedule(const TrainingMethod& method, int stages, const PlanSpec& spec, const SimCosts& costs,
                               int64_t minibatches);

// Costs from the stage profiles: forward = FLOPs / flopsPerSecond, backward = backwardFactor *
// forward (its weight part, for a split backward, half of it), step = weight bytes / stepBytesPerSecond (0 = free), sends = the stage's output bytes
// downstream and its input bytes upstream.
SimCosts costsFromStages(const std::vector<StageProfile>& stages, double flopsPerSecond, double backwardFactor = 2.0,
                         double stepBytesPerSecond = 0, LinkModel link = {});

// The record as an engine trace event (type "trace"; stage, action, mb, start, end).
Json traceEvent(const SimTraceRecord& r);

}  // namespace pm
