#include "core/engine/stage_meter.h"

#include <algorithm>
#include <cmath>

#include "core/engine/tensor_memory_meter.h"
#include "core/util/system_info.h"

namespace pm {

namespace {
double jsonNum(const Json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || !it->is_number()) ? NAN : it->get<double>();
}
}  // namespace

StageMeter::StageMeter(bool measureTensors, double now) : measure_(measureTensors), winStart_(now) {}

double StageMeter::windowRate(double now) const {
  return static_cast<double>(winSamples_) / std::max(1e-9, now - winStart_);
}

void StageMeter::setMemory(const StageMemory& m) {
  const int64_t peak = mem_.peak;
  mem_ = m;
  mem_.peak = std::max(peak, mem_.total());
  winPeakActivations_ = std::max(winPeakActivations_, mem_.activations);
  winPeakStash_ = std::max(winPeakStash_, mem_.stash);
  winPeakTotal_ = std::max(winPeakTotal_, mem_.total());
}

StageMeter::Action::Action(StageMeter& meter, int64_t activationsBefore) : meter_(meter), activationsBefore_(activationsBefore) {
  if (!meter_.measure_) return;
  liveBefore_ = TensorMemoryMeter::live();
  TensorMemoryMeter::resetPeak();
}

int64_t StageMeter::Action::kept() const {
  return meter_.measure_ ? std::max<int64_t>(0, TensorMemoryMeter::live() - liveBefore_) : 0;
}

void StageMeter::Action::end() {
  if (meter_.measure_) meter_.noteActionPeak(activationsBefore_ + TensorMemoryMeter::peak() - liveBefore_);
}

void StageMeter::noteActionPeak(int64_t activationsAtPeak) {
  const int64_t atPeak = mem_.total() - mem_.activations + activationsAtPeak;
  winPeakActivations_ = std::max(winPeakActivations_, activationsAtPeak);
  winPeakTotal_ = std::max(winPeakTotal_, atPeak);
  mem_.peak = std::max(mem_.peak, atPeak);
}

void StageMeter::noteDelay(int64_t lag) {
  winTauMax_ = std::max(winTauMax_, lag);
  tauMax_ = std::max(tauMax_, lag);
  winTauSum_ += static_cast<double>(lag);
  ++winTauCount_;
}

void StageMeter::noteVersions(int64_t held) {
  winVersionsMax_ = std::max(winVersionsMax_, held);
  versionsMax_ = std::max(versionsMax_, held);
}

void StageMeter::noteGap(double gap, double gapT2) {
  winGapSum_ += gap;
  winGapT2Sum_ += gapT2;
  ++winGapCount_;
}

void StageMeter::closeWindow(Json& st, double now, bool async, int64_t stageDelay, int64_t versionsHeldNow) {
  const double wall = std::max(1e-9, now - winStart_);
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
  st["inflight_max"] = inflightMax_;
  st["recomputed"] = winRecomputed_;
  winRecomputed_ = 0;
  if (async) {
    st["tau"] = winTauMax_;
    st["tau_mean"] = winTauCount_ ? winTauSum_ / static_cast<double>(winTauCount_) : 0.0;
    st["tau_expected"] = stageDelay;
    st["versions"] = winVersionsMax_;
    if (winGapCount_ > 0) {
      st["weight_gap"] = winGapSum_ / static_cast<double>(winGapCount_);
      st["weight_gap_t2"] = winGapT2Sum_ / static_cast<double>(winGapCount_);
    }
    winTauMax_ = winTauCount_ = winGapCount_ = 0;
    winTauSum_ = winGapSum_ = winGapT2Sum_ = 0;
    winVersionsMax_ = versionsHeldNow;
  }
  winCompute_ = winWait_ = 0;
  winPeakActivations_ = winPeakTotal_ = winPeakStash_ = 0;
  winStart_ = now;
  winSamples_ = 0;
}

void StageMeter::summarize(Json& s, bool async, int64_t stageDelay) const {
  s["compute_s"] = compute_;
  s["wait_s"] = wait_;
  s["samples"] = samples_;
  s["peak_memory"] = mem_.peak;
  s["inflight_max"] = inflightMax_;
  if (resumedSamples_ > 0) s["resumed_samples"] = resumedSamples_;
  if (async) {
    s["tau_max"] = tauMax_;
    s["tau_expected"] = stageDelay;
    s["versions_max"] = versionsMax_;
  }
}

void StageMeter::save(Json& meta) const {
  meta["samples"] = samples_;
  meta["compute_s"] = compute_;
  meta["wait_s"] = wait_;
  meta["tau_max"] = tauMax_;
  meta["versions_max"] = versionsMax_;
  meta["inflight_max"] = inflightMax_;
  meta["peak"] = mem_.peak;
}

void StageMeter::restore(const Json& m, double now) {
  samples_ = m.value("samples", int64_t{0});
  resumedSamples_ = samples_;
  compute_ = jsonNum(m, "compute_s");
  wait_ = jsonNum(m, "wait_s");
  tauMax_ = m.value("tau_max", int64_t{0});
  versionsMax_ = m.value("versions_max", int64_t{1});
  inflightMax_ = m.value("inflight_max", int64_t{0});
  mem_.peak = m.value("peak", int64_t{0});
  winStart_ = now;
}

}  // namespace pm
