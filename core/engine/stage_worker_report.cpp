// A stage's reports: the per-minibatch step, progress and stage events, evaluation through the
// pipeline, the schedule trace, the summary and the saved state.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>

#ifdef PIPEMARE_WITH_CUDA
#include "core/util/torch_compat.h"
#endif

#include "core/engine/stage_worker.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

void StageWorker::minibatchDone(int64_t k) {
  const int64_t done = k + 1;
  const double now = monotonicSeconds();
  const TrainingPlan& training = plan_.training();
  if (plan_.last()) {
    const double loss = executor_.takeMinibatchLoss(k);
    lastLoss_ = loss;
    const auto& guard = e_.training.divergence_guard;
    const bool hit = guard.enabled && (!std::isfinite(loss) || loss > guard.max_loss);
    // The step a stop halts at is logged too: the stored curve then ends where the run stopped, and
    // its last loss is the summary's final loss (runs list and the run's own report agree).
    if (training.logDue(done) || hit || k == haltAfter_) emitStepAndProgress(done, loss, now);
    if (hit) {
      diverged_ = true;
      divergedMessage_ = "loss " + (std::isfinite(loss) ? std::to_string(loss) : std::string("is not finite")) +
                         " at step " + std::to_string(done) + " (training.divergence_guard.max_loss = " +
                         std::to_string(guard.max_loss) + ")";
      finished_ = true;
    }
  }
  if (training.logDue(done) || finished_) emitStageEvent(done, now);
  const bool halt = haltAfter_ == k;
  const int64_t every = e_.training.checkpoint_every;
  if (checkpoints_.enabled() && !finished_ && done < training.totalSteps() && (halt || (every > 0 && done % every == 0))) {
    const double c0 = monotonicSeconds();
    saveCheckpoint(done);
    meter_.leaveOutOfWindow(monotonicSeconds() - c0);  // the next training window leaves the checkpoint's writing out
  }
  if (halt) halted_ = true;
}

void StageWorker::emitStepAndProgress(int64_t done, double loss, double now) {
  const TrainingPlan& training = plan_.training();
  Json s = makeEvent(ev::kStep);
  s["step"] = done;
  s["epoch"] = training.epochAt(done);
  s["samples"] = meter_.samples();
  s["loss"] = loss;
  s["lr"] = executor_.lastLr();
  const double windowRate = meter_.windowRate(now);
  s["samples_per_s"] = windowRate;
  sink_->emit(s);
  Json p = makeEvent(ev::kProgress);
  p["step"] = done;
  p["total_steps"] = training.totalSteps();
  p["epoch"] = training.epochAt(done);
  const double elapsed = now - runStart_;
  p["elapsed_s"] = elapsed;
  // The rate since this session's first logged step: start-up (data, partition profile) is
  // not a cost the remaining steps pay again.
  const int64_t remaining = training.totalSteps() - done;
  if (etaStep_ < 0) {
    etaStep_ = done;
    etaTime_ = now;
  }
  // Until a second point: the window's throughput (as the step event shows it).
  const double samplesPerStep = static_cast<double>(meter_.samples()) / static_cast<double>(done);
  p["eta_s"] = done > etaStep_ ? (now - etaTime_) / static_cast<double>(done - etaStep_) * static_cast<double>(remaining)
               : windowRate > 0 ? static_cast<double>(remaining) * samplesPerStep / windowRate
                                : elapsed / static_cast<double>(done) * static_cast<double>(remaining);
  sink_->emit(p);
}

void StageWorker::emitStageEvent(int64_t done, double now) {
  executor_.updateMemory();
  Json st = makeEvent(ev::kStage);
  st["stage"] = plan_.stage();
  st["rank"] = rank_;
  st["step"] = done;
  st["lr"] = executor_.lastLr();
  meter_.closeWindow(st, now, plan_.asynchronous(), plan_.stageDelay(), executor_.policy().versionsHeld());
#ifdef PIPEMARE_WITH_CUDA
  if (executor_.device().is_cuda()) {
    // The CUDA caching allocator's figures for this stage's device, beside the accounted ones.
    const auto stats = compat::cudaAllocatorStats(executor_.device().index());
    st["cuda"] = {{"allocated", stats.allocated}, {"allocated_peak", stats.allocatedPeak}, {"reserved", stats.reserved}};
  }
#endif
  sink_->emit(st);
}

void StageWorker::evalBatch(int64_t b) {
  const double t0 = monotonicSeconds();
  double waited = 0;
  torch::NoGradGuard ng;
  const int64_t size = plan_.evalBatchSize();
  std::vector<int64_t> idx;
  const int64_t begin = b * size, end = std::min(eval_->size(), begin + size);
  for (int64_t i = begin; i < end; ++i) idx.push_back(i);
  Batch batch;
  if (plan_.first() || plan_.last()) batch = eval_->get(idx);
  torch::Tensor x;
  if (plan_.first()) {
    x = batch.x.to(executor_.device());
  } else {
    const double w0 = monotonicSeconds();
    x = comm_->recv(plan_.stage() - 1, kTagEval).to(executor_.device());
    waited = monotonicSeconds() - w0;
  }
  const torch::Tensor out = executor_.evaluate(x);
  if (!plan_.last()) {
    comm_->send(out, plan_.stage() + 1, kTagEval);
  } else {
    if (b == 0) {
      evalLoss_ = 0;
      evalCorrect_ = evalPredictions_ = evalSamples_ = 0;
    }
    const torch::Tensor y = batch.y.to(executor_.device());
    evalLoss_ += computeLoss(out, y, eval_->task()).item<double>() * static_cast<double>(batch.size());
    evalCorrect_ += countCorrect(out, y, eval_->task());
    evalPredictions_ += batch.y.numel();
    evalSamples_ += batch.size();
    if (b == plan_.evalBatches() - 1) emitEval();
  }
  const double t1 = monotonicSeconds();
  meter_.addOutsideWindow((t1 - t0) - waited, waited);
  // The training window (samples/s, utilization, waits) leaves evaluation out: it runs between two
  // minibatches, and counted there it would make the window after each evaluation look many times
  // slower (and busier).
  meter_.leaveOutOfWindow(t1 - t0);
}

void StageWorker::emitEval() {
  // The minibatch count this evaluation follows: the latest MinibatchDone before it.
  int64_t after = 0;
  for (size_t i = pc_; i-- > 0;)
    if (ops()[i].kind == OpKind::MinibatchDone) {
      after = ops()[i].arg + 1;
      break;
    }
  Json ev = makeEvent(ev::kEval);
  ev["step"] = after;
  ev["epoch"] = plan_.training().epochAt(after);
  lastEvalLoss_ = evalLoss_ / static_cast<double>(std::max<int64_t>(1, evalSamples_));
  ev["loss"] = lastEvalLoss_;
  if (eval_->task() == Task::LanguageModel) ev["perplexity"] = std::exp(lastEvalLoss_);
  if (eval_->task() != Task::Regression) {
    lastAccuracy_ = static_cast<double>(evalCorrect_) / static_cast<double>(std::max<int64_t>(1, evalPredictions_));
    ev["accuracy"] = lastAccuracy_;
    if (std::isnan(bestAccuracy_) || lastAccuracy_ > bestAccuracy_) bestAccuracy_ = lastAccuracy_;
  }
  ev["samples"] = evalSamples_;
  sink_->emit(ev);
}

void StageWorker::emitTrace(const char* action, int64_t mb, double start, double end, int64_t minibatch) {
  if (!plan_.training().traceDue(minibatch)) return;
  Json t = makeEvent(ev::kTrace);
  t["stage"] = plan_.stage();
  t["action"] = action;
  t["mb"] = mb;
  t["start"] = start - traceOrigin_;
  t["end"] = end - traceOrigin_;
  sink_->emit(t);
}

namespace {
// This boot of this machine (Linux: /proc/sys/kernel/random/boot_id), hashed; 0 when unknown.
// Two processes with the same id read the same monotonic clock.
// PIPEMARE_TRACE_CLOCK=wall takes the across-machines path on one machine too (for tests).
int64_t bootIdentity() {
  if (const char* mode = std::getenv("PIPEMARE_TRACE_CLOCK"); mode && std::string(mode) == "wall") return 0;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id) || id.empty()) return 0;
  const auto h = static_cast<int64_t>(std::hash<std::string>{}(id) & 0x3fffffffffffffffULL);
  return h == 0 ? 1 : h;
}
}  // namespace

void StageWorker::agreeTraceClock() {
  if (!comm_->sharedControl()) return;
  const int64_t boot = bootIdentity();
  // Rank 0's start on both clocks, in nanoseconds (the store keeps integers).
  const double monoNow = monotonicSeconds(), wallNow = wallClockSeconds();
  if (plan_.stage() == 0) {
    traceOrigin_ = runStart_;  // what it publishes (moved back by restore() on a resume)
    comm_->putControl("trace-clock/boot", boot);
    comm_->putControl("trace-clock/monotonic_ns", std::llround(runStart_ * 1e9));
    comm_->putControl("trace-clock/wall_ns", std::llround((wallNow - (monoNow - runStart_)) * 1e9));
    return;
  }
  // Stage 0 writes wall_ns last: once it is there, the other two are.
  const int64_t wall0 = awaitControl(*comm_, "trace-clock/wall_ns", monoNow + e_.execution.timeout_s, e_.execution.timeout_s,
                                     "stage " + std::to_string(plan_.stage()), "stage 0 did not publish its clock");
  int64_t boot0 = 0, mono0 = 0;
  comm_->getControl("trace-clock/boot", boot0);
  comm_->getControl("trace-clock/monotonic_ns", mono0);
  if (boot != 0 && boot == boot0) {
    traceOrigin_ = static_cast<double>(mono0) * 1e-9;
  } else {
    const double m = monotonicSeconds(), w = wallClockSeconds();
    traceOrigin_ = m - (w - static_cast<double>(wall0) * 1e-9);
  }
}

Json StageWorker::summary() const {
  Json s{{"stage", plan_.stage()}};
  meter_.summarize(s, plan_.asynchronous(), plan_.stageDelay());
  if (plan_.last()) {
    s["final_loss"] = lastLoss_;
    s["final_eval_loss"] = lastEvalLoss_;
    s["final_accuracy"] = lastAccuracy_;
    s["best_accuracy"] = bestAccuracy_;
  }
  return s;
}

void StageWorker::saveState(const std::string& path) const { torch::save(stateTensors(), path); }

}  // namespace pm
