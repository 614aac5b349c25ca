#pragma once
// What a stage measures about itself: compute and wait time, samples, memory by category (with
// the transient peaks of each forward and backward, measured by TensorMemoryMeter on the CPU),
// the delays its microbatches saw, the weight versions it held and pipemare's weight gap.
// Totals over the run, and a window since the last stage event that each report closes.
// One per stage, used by one thread.
#include <cstdint>

#include "core/engine/memory_accounting.h"
#include "core/events/event.h"

namespace pm {

class StageMeter {
 public:
  // measureTensors: bracket actions with TensorMemoryMeter (CPU stages when it is installed).
  StageMeter(bool measureTensors, double now);

  bool measuresTensors() const { return measure_; }

  void addCompute(double s) { compute_ += s, winCompute_ += s; }
  void addWait(double s) { wait_ += s, winWait_ += s; }
  // Time that counts in the run's totals but not in the training window (evaluation).
  void addOutsideWindow(double compute, double wait) { compute_ += compute, wait_ += wait; }
  // The training window starts now (the stage is set up).
  void startWindow(double now) { winStart_ = now; }
  // Time that is no part of the training window (evaluation, writing a checkpoint).
  void leaveOutOfWindow(double s) { winStart_ += s; }
  void addSamples(int64_t n) { samples_ += n, winSamples_ += n; }
  int64_t samples() const { return samples_; }
  // Samples per second in the window so far.
  double windowRate(double now) const;

  // The memory the stage holds now, by category (the peaks follow it).
  void setMemory(const StageMemory& m);
  const StageMemory& memory() const { return mem_; }

  // One action's tensors, from begin() to end(): what it left allocated and its transient peak,
  // counted above `activationsBefore` (what was in flight when it started).
  class Action {
   public:
    Action(StageMeter& meter, int64_t activationsBefore);
    // Bytes allocated since the action began and still live; 0 when not measuring.
    int64_t kept() const;
    // Records the transient peak (activations before + the meter's peak above the start).
    void end();

   private:
    StageMeter& meter_;
    int64_t activationsBefore_ = 0, liveBefore_ = 0;
  };

  void noteInflight(int64_t n) { inflightMax_ = n > inflightMax_ ? n : inflightMax_; }
  void noteRecompute() { ++winRecomputed_; }
  void noteDelay(int64_t lag);
  void noteVersions(int64_t held);
  void noteGap(double gap, double gapT2);

  // The stage event's measured fields for the window that ends at `now` (compute_s, wait_s,
  // idle_s, utilization, memory, rss, inflight_max, recomputed; with `async` also tau, tau_mean,
  // tau_expected, versions and the weight gap); then a new window starts.
  void closeWindow(Json& st, double now, bool async, int64_t stageDelay, int64_t versionsHeldNow);
  // The summary's measured fields.
  void summarize(Json& s, bool async, int64_t stageDelay) const;
  // The totals a checkpoint keeps, and their restore (a new window starts at `now`).
  void save(Json& meta) const;
  void restore(const Json& meta, double now);

 private:
  void noteActionPeak(int64_t activationsAtPeak);

  bool measure_;
  double compute_ = 0, wait_ = 0;
  double winCompute_ = 0, winWait_ = 0, winStart_ = 0;
  int64_t samples_ = 0, winSamples_ = 0;
  int64_t resumedSamples_ = 0;  // samples_ as restored from a checkpoint (this session's start)
  StageMemory mem_;
  int64_t inflightMax_ = 0;
  int64_t winPeakActivations_ = 0, winPeakStash_ = 0, winPeakTotal_ = 0;
  int64_t winRecomputed_ = 0;  // stage forwards recomputed for a backward in the window
  int64_t winTauMax_ = 0, winTauCount_ = 0, winVersionsMax_ = 1, winGapCount_ = 0;
  double winTauSum_ = 0, winGapSum_ = 0, winGapT2Sum_ = 0;
  int64_t tauMax_ = 0, versionsMax_ = 1;
};

}  // namespace pm
