#pragma once
// What one stage of a pipeline does, decided once from the experiment: its operation list (the
// schedule's actions with the minibatch bookkeeping and evaluation passes between them), the
// synchronous warm-up, the stage's delay and what depends on it (T1's learning rate, T2's decay,
// delay-scaled momentum), and how many samples each optimizer step averages over.
// Pure arithmetic on the configuration: no tensors, no communication, testable on its own.
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "core/config/experiment.h"
#include "core/engine/training_plan.h"
#include "core/pipeline/schedule.h"

namespace pm {

enum class OpKind { Act, MinibatchDone, EvalBatch };

struct StageOp {
  OpKind kind;
  Action act;   // the schedule's action (Act)
  int64_t arg;  // minibatch index (MinibatchDone) or evaluation batch index (EvalBatch)
};

// Where the stages run: the schedule, its chunks per rank and the model's stage count
// (chunkPlace / stageOfChunk / rankCount on it).
ScheduleParams stagePlacement(const Experiment& e);
int stageRank(const Experiment& e, int stage);  // the rank that runs stage `stage`

class StagePlan {
 public:
  // trainSamples / evalSamples: the splits' sizes (evaluation runs when evalSamples > 0).
  // recomputeAheadAlways: recompute a stale forward ahead of its gradient's receive in a
  // single-process run too (tests compare it with the recompute at the backward).
  StagePlan(const Experiment& e, int stage, int stages, int64_t trainSamples, int64_t evalSamples,
            bool recomputeAheadAlways = false);

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == stages_ - 1; }
  ScheduleKind schedule() const { return params_.kind; }
  const ScheduleParams& scheduleParams() const { return params_; }
  const TrainingPlan& training() const { return training_; }
  int64_t microbatches() const { return training_.microbatches(); }

  // The operation list of stage s of this pipeline (a checkpoint compares its own with its
  // neighbours' to find the messages crossing the cut).
  std::vector<StageOp> ops(int s) const;
  const std::vector<StageOp>& ops() const { return ops_; }

  bool asynchronous() const { return async_; }
  int64_t warmupMinibatches() const { return warmupMinibatches_; }
  // Whether microbatch mb runs asynchronously (an asynchronous schedule, after the warm-up).
  bool isAsyncMb(int64_t mb) const { return async_ && mb >= warmupMinibatches_ * training_.microbatches(); }
  // Whether optimizer step k (0-based) belongs to the asynchronous phase.
  bool asyncStep(int64_t k) const { return async_ && k >= warmupMinibatches_; }
  // Asynchronous microbatches whose weights change between their forward and their backward.
  bool staleAtBackward(int64_t mb) const { return stale_.count(mb) > 0; }
  // The stage's delay tau in its asynchronous actions (steps between a forward and its backward, at most).
  int64_t stageDelay() const { return stageDelay_; }
  int64_t stageSteps() const { return stageSteps_; }

  // The learning rate of step k: the optimizer's schedule, and in pipemare's asynchronous phase
  // with T1 tau^-(1 - k/K).
  double learningRate(int64_t k) const;
  // The SGD momentum of step k when the pipemare.momentum_mode changes it; < 0: unchanged.
  double momentumAt(int64_t k) const;
  bool t2() const { return t2_; }
  double t2Decay() const { return t2Decay_; }

  bool recompute() const { return recompute_; }
  // The backward runs as BackwardInput then BackwardWeight (the schedule's declaration).
  bool splitBackward() const { return scheduleDecl(params_.kind).splitBackward; }
  // pipedream / 2bw: a stale microbatch's forward runs on a shadow of its weight version and its
  // graph is kept (not recomputed); see WeightPolicy.
  bool shadowGraphs() const { return shadowGraphs_; }
  bool recomputeAheadAlways() const { return recomputeAheadAlways_; }
  // pipemare: microbatch mb's forward weights are sampled for the weight-gap measurement.
  bool samplesWeightGap(int64_t mb) const;

  // The samples the optimizer step that microbatch mb's backward feeds averages over: its
  // minibatch, or for pipedream and 2bw its group of update_interval microbatches.
  int64_t stepSamples(int64_t mb) const;

  int64_t evalBatchSize() const { return evalBatchSize_; }
  int64_t evalBatches() const { return evalBatches_; }

 private:
  int stage_, stages_;
  ScheduleParams params_;
  ScheduleKind warmupKind_ = ScheduleKind::GPipe;
  TrainingPlan training_;
  OptimizerConfig optimizer_;
  PipeMareConfig pipemare_;
  int64_t logInterval_ = 1;
  bool async_ = false;
  int64_t warmupMinibatches_ = 0;
  int64_t stageDelay_ = 0;
  int64_t annealSteps_ = 1;
  double asyncMomentum_ = -1.0;
  int64_t stageSteps_ = 0;
  bool t2_ = false;
  double t2Decay_ = 0;
  bool recompute_ = false, shadowGraphs_ = false, recomputeAheadAlways_ = false;
  int64_t evalBatchSize_ = 256, evalBatches_ = 0;
  std::unordered_set<int64_t> stale_;
  std::vector<StageOp> ops_;
  mutable std::pair<int64_t, int64_t> stepGroup_{-1, 0};  // (first microbatch, samples) of the last group summed
};

}  // namespace pm
