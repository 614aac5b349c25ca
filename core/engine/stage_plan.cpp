#include "core/engine/stage_plan.h"

#include <algorithm>
#include <cmath>

#include "core/engine/lr_schedule.h"

namespace pm {

ScheduleParams stagePlacement(const Experiment& e) {
  ScheduleParams p;
  p.kind = e.pipeline.schedule;
  p.chunks = pipelineChunks(e);
  p.stages = modelStages(e);
  return p;
}

int stageRank(const Experiment& e, int stage) { return chunkPlace(stagePlacement(e), stage).rank; }

StagePlan::StagePlan(const Experiment& e, int stage, int stages, int64_t trainSamples, int64_t evalSamples,
                     bool recomputeAheadAlways)
    : stage_(stage),
      stages_(stages),
      training_(e, trainSamples),
      optimizer_(e.optimizer),
      pipemare_(e.pipemare),
      logInterval_(std::max<int64_t>(1, e.training.log_interval)),
      recompute_(e.pipeline.recompute),
      recomputeAheadAlways_(recomputeAheadAlways) {
  const ScheduleKind kind = e.pipeline.schedule;
  params_.kind = kind;
  params_.stages = stages;
  params_.chunks = pipelineChunks(e);
  params_.microbatches = training_.microbatches();
  params_.minibatches = training_.totalSteps();
  const ScheduleDecl& decl = scheduleDecl(kind);
  // The asynchronous schedules step every update_interval backwards; those that do not take the
  // field (pipemare) once per minibatch, N.
  params_.update_interval = decl.takesUpdateInterval ? std::max(1, e.pipeline.update_interval) : training_.microbatches();
  params_.paper_timing = e.pipeline.timing == PipelineTiming::Paper;
  async_ = !decl.synchronous;
  if (decl.takesPipeMare) warmupMinibatches_ = training_.warmupMinibatches(e.pipemare.warmup_epochs);
  warmupKind_ = e.pipemare.warmup_schedule == WarmupSchedule::OneFOneB ? ScheduleKind::OneFOneB : ScheduleKind::GPipe;
  evalBatchSize_ = std::max<int64_t>(e.data.batch_size, 256);
  if (evalSamples > 0) evalBatches_ = (evalSamples + evalBatchSize_ - 1) / evalBatchSize_;

  const std::vector<Action> acts = stageActionsWithWarmup(params_, warmupKind_, warmupMinibatches_, stage_);
  const int64_t N = training_.microbatches();
  if (async_) {
    // The stage's delay in its (asynchronous part of the) list: what T1 and T2 scale by.
    std::vector<Action> asyncPart;
    for (const auto& a : acts)
      if (a.kind == ActionKind::Step ? true : a.mb >= warmupMinibatches_ * N) asyncPart.push_back(a);
    stageDelay_ = maxObservedDelay(asyncPart);
    annealSteps_ = t1AnnealSteps(e.pipemare, training_.stepsPerEpoch());
    t2_ = decl.takesPipeMare && e.pipemare.t2 && stageDelay_ > 0;
    t2Decay_ = e.pipemare.decay;
    if (e.pipemare.momentum_mode == MomentumMode::DelayScaled && e.optimizer.name == OptimizerType::Sgd) {
      // Asynchrony acts like extra momentum (Mitliagkas et al. 2016): implicit ~ tau/(1+tau).
      // Applied from the first asynchronous step; a synchronous warm-up keeps the configured one.
      const double tau = static_cast<double>(stageDelay_);
      asyncMomentum_ = std::max(0.0, e.optimizer.momentum - tau / (1.0 + tau));
    }
    for (const int64_t mb : staleMicrobatches(acts)) stale_.insert(mb);
  }
  for (const auto& a : acts)
    if (a.kind == ActionKind::Step) ++stageSteps_;
  // The families that keep each microbatch's weights (stash, two versions) keep its graph too.
  shadowGraphs_ = (decl.weights == WeightFamily::Stash || decl.weights == WeightFamily::TwoVersions) && !recompute_ && !last();
  ops_ = ops(stage_);
}

std::vector<StageOp> StagePlan::ops(int s) const {
  const std::vector<Action> acts = stageActionsWithWarmup(params_, warmupKind_, warmupMinibatches_, s);
  const int64_t N = training_.microbatches();
  std::vector<StageOp> ops;
  // A minibatch is complete after its last backward and the send/step right after it; then
  // come the bookkeeping (MinibatchDone) and, when due, the evaluation passes.
  int64_t backwards = 0, pending = -1;
  auto flushPending = [&] {
    if (pending < 0) return;
    ops.push_back({OpKind::MinibatchDone, Action{ActionKind::Step, -1}, pending});
    if (training_.evalDue(pending + 1) && evalBatches_ > 0)
      for (int64_t b = 0; b < evalBatches_; ++b) ops.push_back({OpKind::EvalBatch, Action{ActionKind::Step, -1}, b});
    pending = -1;
  };
  for (size_t i = 0; i < acts.size(); ++i) {
    ops.push_back({OpKind::Act, acts[i], 0});
    // A microbatch's backward ends with its weight gradients (Backward, or BackwardWeight when split).
    if ((acts[i].kind == ActionKind::Backward || acts[i].kind == ActionKind::BackwardWeight) && ++backwards % N == 0) pending = backwards / N - 1;
    const bool nextTrails = i + 1 < acts.size() && (acts[i + 1].kind == ActionKind::SendGrad || acts[i + 1].kind == ActionKind::Step);
    if (!nextTrails) flushPending();
  }
  flushPending();
  return ops;
}

double StagePlan::learningRate(int64_t k) const {
  double lr = baseLearningRate(optimizer_, k, std::max<int64_t>(1, stageSteps_));
  if (asyncStep(k) && scheduleDecl(params_.kind).takesPipeMare && pipemare_.t1)
    lr = t1LearningRate(lr, static_cast<double>(stageDelay_), k - warmupMinibatches_, annealSteps_);
  return lr;
}

double StagePlan::momentumAt(int64_t k) const {
  if (asyncMomentum_ < 0.0) return -1.0;
  return asyncStep(k) ? asyncMomentum_ : optimizer_.momentum;
}

bool StagePlan::samplesWeightGap(int64_t mb) const {
  return isAsyncMb(mb) && !last() && scheduleDecl(params_.kind).weights == WeightFamily::Predicted && mb % (training_.microbatches() * logInterval_) == 0;
}

int64_t StagePlan::stepSamples(int64_t mb) const {
  const int64_t N = training_.microbatches();
  if (!scheduleDecl(params_.kind).takesUpdateInterval) return training_.minibatchSize(mb / N);
  // pipedream and 2bw step after every update_interval backwards, in microbatch order, and once
  // more after the last: the step's group is [mb - mb % u, + u), cut at the end of the run.
  // Summed once per group (microbatches go forward in order), not per microbatch.
  const int64_t u = params_.update_interval;
  const int64_t begin = mb - mb % u, end = std::min(begin + u, training_.totalSteps() * N);
  if (begin != stepGroup_.first) {
    int64_t n = 0;
    for (int64_t i = begin; i < end; ++i) n += training_.microbatchSize(i);
    stepGroup_ = {begin, n};
  }
  return stepGroup_.second;
}

}  // namespace pm
