// A stage's reports: the per-minibatch step, progress and stage events, evaluation through the
// pipeline, the schedule trace, memory accounting, the summary and the saved state.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>

#ifdef PIPEMARE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/engine/stage_worker.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

void StageWorker::minibatchDone(int64_t k) {
  const int64_t done = k + 1;
  const double now = monotonicSeconds();
  if (last_) {
    const double loss = lossSum_.count(k) ? lossSum_[k] / static_cast<double>(std::max<int64_t>(1, lossSamples_[k])) : NAN;
    lossSum_.erase(k);
    lossSamples_.erase(k);
    lastLoss_ = loss;
    const auto& guard = e_.training.divergence_guard;
    const bool hit = guard.enabled && (!std::isfinite(loss) || loss > guard.max_loss);
    // The step a stop halts at is logged too: the stored curve then ends where the run stopped, and
    // its last loss is the summary's final loss (runs list and the run's own report agree).
    if (plan_.logDue(done) || hit || k == haltAfter_) {
      Json s = makeEvent(ev::kStep);
      s["step"] = done;
      s["epoch"] = plan_.epochAt(done);
      s["samples"] = samples_;
      s["loss"] = loss;
      s["lr"] = lastLr_;
      const double windowRate = static_cast<double>(winSamples_) / std::max(1e-9, now - winStart_);
      s["samples_per_s"] = windowRate;
      sink_->emit(s);
      Json p = makeEvent(ev::kProgress);
      p["step"] = done;
      p["total_steps"] = plan_.totalSteps();
      p["epoch"] = plan_.epochAt(done);
      const double elapsed = now - runStart_;
      p["elapsed_s"] = elapsed;
      // The rate since this session's first logged step: start-up (data, partition profile) is
      // not a cost the remaining steps pay again.
      const int64_t remaining = plan_.totalSteps() - done;
      if (etaStep_ < 0) {
        etaStep_ = done;
        etaTime_ = now;
      }
      // Until a second point: the window's throughput (as the step event shows it).
      const double samplesPerStep = static_cast<double>(samples_) / static_cast<double>(done);
      p["eta_s"] = done > etaStep_ ? (now - etaTime_) / static_cast<double>(done - etaStep_) * static_cast<double>(remaining)
                   : windowRate > 0 ? static_cast<double>(remaining) * samplesPerStep / windowRate
                                    : elapsed / static_cast<double>(done) * static_cast<double>(remaining);
      sink_->emit(p);
    }
    if (hit) {
      diverged_ = true;
      divergedMessage_ = "loss " + (std::isfinite(loss) ? std::to_string(loss) : std::string("is not finite")) +
                         " at step " + std::to_string(done) + " (training.divergence_guard.max_loss = " +
                         std::to_string(guard.max_loss) + ")";
      finished_ = true;
    }
  }
  if (plan_.logDue(done) || finished_) {
    updateMemory();
    const double wall = std::max(1e-9, now - winStart_);
    Json st = makeEvent(ev::kStage);
    st["stage"] = stage_;
    st["rank"] = comm_ ? comm_->rank() : stage_;
    st["step"] = done;
    st["compute_s"] = winCompute_;
    st["wait_s"] = winWait_;
    st["idle_s"] = std::max(0.0, wall - winCompute_ - winWait_);
    st["utilization"] = std::min(1.0, winCompute_ / wall);
    // Activations: the peak of the in-flight bytes over the window (at a minibatch boundary
    // nothing is in flight, so the current value would always read 0).
    StageMemory reported = mem_;
    reported.activations = std::max(winPeakActivations_, mem_.activations);
    reported.stash = std::max(winPeakStash_, mem_.stash);
    st["memory"] = reported.toJson();
    // The total is the window's highest sum at one moment: the categories' own window peaks need
    // not coincide (the first forward's activations came before any gradient existed).
    st["memory"]["total"] = std::max(winPeakTotal_, mem_.total());
    st["rss"] = processRssBytes();
#ifdef PIPEMARE_WITH_CUDA
    if (device_.is_cuda()) {
      // The CUDA caching allocator's figures for this stage's device, beside the accounted ones.
      const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
      const auto agg = static_cast<size_t>(c10::cuda::CUDACachingAllocator::StatType::AGGREGATE);
      st["cuda"] = {{"allocated", stats.allocated_bytes[agg].current},
                    {"allocated_peak", stats.allocated_bytes[agg].peak},
                    {"reserved", stats.reserved_bytes[agg].current}};
    }
#endif
    st["inflight_max"] = maxInflight_;
    st["lr"] = lastLr_;
    st["recomputed"] = winRecomputed_;
    winRecomputed_ = 0;
    if (asyncSchedule_) {
      st["tau"] = winTauMax_;
      st["tau_mean"] = winTauCount_ ? winTauSum_ / static_cast<double>(winTauCount_) : 0.0;
      st["tau_expected"] = stageDelay_;
      st["versions"] = winVersionsMax_;
      if (winGapCount_ > 0) {
        st["weight_gap"] = winGapSum_ / static_cast<double>(winGapCount_);
        st["weight_gap_t2"] = winGapT2Sum_ / static_cast<double>(winGapCount_);
      }
      winTauMax_ = winTauCount_ = winGapCount_ = 0;
      winTauSum_ = winGapSum_ = winGapT2Sum_ = 0;
      winVersionsMax_ = versions_.versionsHeld();
    }
    sink_->emit(st);
    winCompute_ = winWait_ = 0;
    winPeakActivations_ = 0;
    winPeakTotal_ = 0;
    winPeakStash_ = 0;
    winStart_ = now;
    winSamples_ = 0;
  }
  const bool halt = haltAfter_ == k;
  const int64_t every = e_.training.checkpoint_every;
  if (!checkpointDir_.empty() && !finished_ && done < plan_.totalSteps() && (halt || (every > 0 && done % every == 0))) {
    const double c0 = monotonicSeconds();
    saveCheckpoint(done);
    winStart_ += monotonicSeconds() - c0;  // the next training window leaves the checkpoint's writing out
  }
  if (halt) halted_ = true;
}

void StageWorker::evalBatch(int64_t b) {
  const double t0 = monotonicSeconds();
  double waited = 0;
  torch::NoGradGuard ng;
  module_->eval();
  torch::Tensor x;
  std::vector<int64_t> idx;
  const int64_t begin = b * evalBatchSize_, end = std::min(eval_->size(), begin + evalBatchSize_);
  for (int64_t i = begin; i < end; ++i) idx.push_back(i);
  Batch batch;
  if (first_ || last_) batch = eval_->get(idx);
  if (first_) {
    x = batch.x.to(device_);
  } else {
    const double w0 = monotonicSeconds();
    x = comm_->recv(stage_ - 1, kTagEval).to(device_);
    waited = monotonicSeconds() - w0;
  }
  torch::Tensor out = runModule(x);
  if (!last_) {
    comm_->send(out, stage_ + 1, kTagEval);
  } else {
    if (b == 0) {
      evalLoss_ = 0;
      evalCorrect_ = evalPredictions_ = evalSamples_ = 0;
    }
    const torch::Tensor y = batch.y.to(device_);
    evalLoss_ += computeLoss(out, y, eval_->task()).item<double>() * static_cast<double>(batch.size());
    evalCorrect_ += countCorrect(out, y, eval_->task());
    evalPredictions_ += batch.y.numel();
    evalSamples_ += batch.size();
    if (b == evalBatches_ - 1) {
      // The minibatch count this evaluation follows: the latest MinibatchDone before it.
      int64_t after = 0;
      for (size_t i = pc_; i-- > 0;)
        if (ops_[i].kind == OpKind::MinibatchDone) {
          after = ops_[i].arg + 1;
          break;
        }
      Json ev = makeEvent(ev::kEval);
      ev["step"] = after;
      ev["epoch"] = plan_.epochAt(after);
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
  }
  module_->train();
  const double t1 = monotonicSeconds();
  wait_ += waited;
  compute_ += (t1 - t0) - waited;
  // The training window (samples/s, utilization, waits) leaves evaluation out: it ran between two
  // minibatches, and counted there it made the window after each evaluation look many times
  // slower (and busier).
  winStart_ += t1 - t0;
}

void StageWorker::emitTrace(const char* action, int64_t mb, double start, double end, int64_t minibatch) {
  if (!plan_.traceDue(minibatch)) return;
  Json t = makeEvent(ev::kTrace);
  t["stage"] = stage_;
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
  if (stage_ == 0) {
    traceOrigin_ = runStart_;  // what it publishes (moved back by restore() on a resume)
    comm_->putControl("trace-clock/boot", boot);
    comm_->putControl("trace-clock/monotonic_ns", std::llround(runStart_ * 1e9));
    comm_->putControl("trace-clock/wall_ns", std::llround((wallNow - (monoNow - runStart_)) * 1e9));
    return;
  }
  // Stage 0 writes wall_ns last: once it is there, the other two are.
  const int64_t wall0 = awaitControl("trace-clock/wall_ns", monoNow + e_.execution.timeout_s, "stage 0 did not publish its clock");
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

int64_t StageWorker::activationBytes() const {
  int64_t n = 0;
  for (const auto& kv : inflight_) {
    const InFlight& f = kv.second;
    n += tensorBytes(f.input) + tensorBytes(f.target) + (f.keptBytes >= 0 ? f.keptBytes : tensorBytes(f.output));
  }
  for (const auto& kv : received_) n += tensorBytes(kv.second);
  for (const auto& kv : gradsIn_) n += tensorBytes(kv.second);
  for (const auto& kv : gradsOut_) n += tensorBytes(kv.second);
  return n;
}

void StageWorker::updateMemory() {
  mem_.weights = moduleWeightBytes(*module_);
  mem_.gradients = moduleGradientBytes(*module_);
  mem_.optimizer = optimizerStateBytes(*optimizer_);
  mem_.activations = activationBytes();
  mem_.stash = versions_.stashBytes();
  mem_.delta = t2_ ? t2_->bytes() : 0;
  mem_.peak = std::max(mem_.peak, mem_.total());
  winPeakActivations_ = std::max(winPeakActivations_, mem_.activations);
  winPeakStash_ = std::max(winPeakStash_, mem_.stash);
  winPeakTotal_ = std::max(winPeakTotal_, mem_.total());
}

void StageWorker::noteActionPeak(int64_t activationsAtPeak) {
  const int64_t atPeak = mem_.total() - mem_.activations + activationsAtPeak;
  winPeakActivations_ = std::max(winPeakActivations_, activationsAtPeak);
  winPeakTotal_ = std::max(winPeakTotal_, atPeak);
  mem_.peak = std::max(mem_.peak, atPeak);
}

Json StageWorker::summary() const {
  Json s{{"stage", stage_}, {"compute_s", compute_}, {"wait_s", wait_}, {"samples", samples_},
         {"peak_memory", mem_.peak}, {"inflight_max", maxInflight_}};
  if (resumedSamples_ > 0) s["resumed_samples"] = resumedSamples_;
  if (asyncSchedule_) {
    s["tau_max"] = tauMax_;
    s["tau_expected"] = stageDelay_;
    s["versions_max"] = versionsMax_;
  }
  if (last_) {
    s["final_loss"] = lastLoss_;
    s["final_eval_loss"] = lastEvalLoss_;
    s["final_accuracy"] = lastAccuracy_;
    s["best_accuracy"] = bestAccuracy_;
  }
  return s;
}

std::vector<torch::Tensor> StageWorker::stateTensors() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : module_->named_parameters()) out.push_back(p.value().detach().cpu().clone());
  for (const auto& b : module_->named_buffers()) out.push_back(b.value().detach().cpu().clone());
  return out;
}

void StageWorker::saveState(const std::string& path) const { torch::save(stateTensors(), path); }

}  // namespace pm
