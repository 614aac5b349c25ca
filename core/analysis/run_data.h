#pragma once
// The data a comparison works on (pipemare compare, the Compare view): one run's record and full-resolution metrics, loaded once
// from the store, and the mapping of a metric's points onto the chosen x axis. No Qt; any thread
// (a RunData is a plain value; loadRunData uses the caller's RunStore on the caller's thread).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace pm {

enum class XAxis {
  Step,      // the metric's step
  Samples,   // cumulative training samples: train/samples looked up by step (interpolated between logged steps)
  Updates,   // optimizer updates per stage: step x updatesPerStep (N / update_interval for pipedream and 2bw)
  TrainingTime,  // seconds of training since the run's first recorded point: a resumed run's pauses left out (trainingTime)
  WallClock,     // seconds of wall clock since the run's first recorded point (RunData::t0), pauses included
};

const char* xAxisName(XAxis axis);  // "step", "samples", "optimizer updates", "wall time (s)"

struct RunData {
  RunRecord record;
  // Every metric key, in step order; each stage metric too, as "stage<s>/<key>" (stage0/tau,
  // stage1/weight_gap_t2, stage0/mem/activations, ...).
  std::map<std::string, std::vector<MetricPoint>> metrics;
  std::vector<StageMetricPoint> utilization;                // stage metric "utilization" (stage, step order)
  std::vector<StageMetricPoint> memPeak;                    // stage metric "mem/peak"
  double t0 = 0;  // smallest wall_time over all the run's metric points (0 when it has none)
  // Its pauses (metric time/paused_s, kept out of `metrics`): at each resume, the wall time it
  // resumed at and the seconds paused in all so far.
  std::vector<MetricPoint> pauses;

  // The points of `key`, or an empty vector.
  const std::vector<MetricPoint>& metric(const std::string& key) const;
};

// Optimizer updates a stage makes per minibatch (step): 1 for gpipe, 1f1b and pipemare; N /
// update_interval for pipedream and pipedream-2bw (pipedream at update_interval 1 steps N times a
// minibatch; 2bw with m = 2N once every two). 1 when the configuration does not say.
double updatesPerStep(const RunRecord& run);

// Loads everything the view needs about `runId` (throws StoreError from the store; returns a
// RunData with record.id == 0 when the run does not exist).
RunData loadRunData(const RunStore& store, int64_t runId);

// Seconds of training from the run's first point to `wallTime`: the wall clock less the pauses
// of the resumes before it (a point after a resume subtracts every pause up to that resume).
double trainingTime(const RunData& run, double wallTime);
// How long a run has trained: from its start to its end (now, while it runs), less its pauses
// (RunRecord::paused_s); NaN when it has not started or has no end.
double trainingDuration(const RunRecord& run, double now);

// x values of `points` on `axis`, one per point; NaN where it cannot be mapped (the samples axis
// of a run without train/samples).
std::vector<double> xValues(const RunData& run, const std::vector<MetricPoint>& points, XAxis axis);

// train/samples at `step`: the logged value at that step, else linear interpolation between the
// neighbouring logged steps (from (0, 0) before the first; the last rate after the last). NaN when
// train/samples is absent.
double samplesAtStep(const std::vector<MetricPoint>& samples, int64_t step);

}  // namespace pm
