#include "core/analysis/run_data.h"
#include "core/analysis/stored_run.h"
#include "core/events/metric_keys.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/config/choices.h"

namespace pm {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<MetricPoint> kNoPoints;
}  // namespace

const char* xAxisName(XAxis axis) {
  switch (axis) {
    case XAxis::Step: return "step";
    case XAxis::Samples: return "samples";
    case XAxis::Updates: return "optimizer updates";
    case XAxis::TrainingTime: return "training time (s)";
    case XAxis::WallClock: return "wall clock (s)";
  }
  return "step";
}

const std::vector<MetricPoint>& RunData::metric(const std::string& key) const {
  auto it = metrics.find(key);
  return it == metrics.end() ? kNoPoints : it->second;
}

RunData loadRunData(const RunStore& store, int64_t runId) {
  RunData d;
  auto rec = store.getRun(runId);
  if (!rec) return d;
  d.record = std::move(*rec);
  bool any = false;
  for (const std::string& key : store.metricKeys(runId)) {
    auto pts = store.loadMetric(runId, key);
    if (key == metric::kTimePaused) {  // not a curve: when the run paused, and for how long
      d.pauses = std::move(pts);
      std::sort(d.pauses.begin(), d.pauses.end(), [](const MetricPoint& a, const MetricPoint& b) { return a.wall_time < b.wall_time; });
      continue;
    }
    for (const auto& p : pts)
      if (std::isfinite(p.wall_time) && (!any || p.wall_time < d.t0)) {
        d.t0 = p.wall_time;
        any = true;
      }
    d.metrics.emplace(key, std::move(pts));
  }
  d.utilization = store.loadStageMetric(runId, "utilization");
  d.memPeak = store.loadStageMetric(runId, "mem/peak");
  // Every per-stage metric as "stage<s>/<key>" (tau, weight_gap, lr, mem/activations, ...), its
  // wall time that of the run-level point logged at the same step (NaN when there is none).
  std::map<int64_t, double> wallAt;
  for (const auto& [key, pts] : d.metrics)
    for (const auto& p : pts) wallAt.emplace(p.step, p.wall_time);
  for (const std::string& key : store.stageMetricKeys(runId)) {
    for (const auto& p : key == "utilization" ? d.utilization : key == "mem/peak" ? d.memPeak : store.loadStageMetric(runId, key)) {
      const auto w = wallAt.find(p.step);
      d.metrics[metric::stageKey(p.stage, key)].push_back({p.step, w == wallAt.end() ? kNaN : w->second, p.value});
    }
  }
  return d;
}

double samplesAtStep(const std::vector<MetricPoint>& samples, int64_t step) {
  if (samples.empty()) return kNaN;
  auto it = std::lower_bound(samples.begin(), samples.end(), step,
                             [](const MetricPoint& p, int64_t s) { return p.step < s; });
  if (it != samples.end() && it->step == step) {
    // Several rows for one step: the latest wins.
    auto last = it;
    while (std::next(last) != samples.end() && std::next(last)->step == step) ++last;
    return last->value;
  }
  const double s = static_cast<double>(step);
  if (it == samples.begin()) {
    if (it->step <= 0) return it->value;
    return it->value * s / static_cast<double>(it->step);
  }
  const MetricPoint& a = *std::prev(it);
  if (it == samples.end()) {
    if (a.step <= 0) return a.value;
    return a.value + (s - static_cast<double>(a.step)) * (a.value / static_cast<double>(a.step));
  }
  const MetricPoint& b = *it;
  const double f = (s - static_cast<double>(a.step)) / static_cast<double>(b.step - a.step);
  return a.value + f * (b.value - a.value);
}

double updatesPerStep(const RunRecord& run) {
  const PipelineConfig& p = readStoredExperiment(run).experiment.pipeline;
  if (!scheduleDecl(p.schedule).takesUpdateInterval || p.update_interval <= 0) return 1;
  return static_cast<double>(p.microbatches) / static_cast<double>(p.update_interval);
}

double trainingTime(const RunData& run, double wallTime) {
  // The pauses so far as of the latest resume at or before wallTime (every point of a session
  // comes after its resume, every point of an earlier one before it).
  double paused = 0;
  for (const auto& p : run.pauses)
    if (p.wall_time <= wallTime) paused = p.value;
  return wallTime - run.t0 - paused;
}

double trainingDuration(const RunRecord& run, double now) {
  const double end = run.finished_at > 0 ? run.finished_at : (run.status == RunStatus::Running ? now : 0);
  if (!(run.started_at > 0) || !(end > 0)) return kNaN;
  return std::max(0.0, end - run.started_at - run.paused_s);
}

std::vector<double> xValues(const RunData& run, const std::vector<MetricPoint>& points, XAxis axis) {
  std::vector<double> x;
  x.reserve(points.size());
  const double perStep = axis == XAxis::Updates ? updatesPerStep(run.record) : 1;
  const auto& samples = run.metric(metric::kTrainSamples);
  for (const auto& p : points) {
    switch (axis) {
      case XAxis::Step: x.push_back(static_cast<double>(p.step)); break;
      case XAxis::Updates: x.push_back(static_cast<double>(p.step) * perStep); break;
      case XAxis::Samples: x.push_back(samplesAtStep(samples, p.step)); break;
      case XAxis::TrainingTime: x.push_back(trainingTime(run, p.wall_time)); break;
      case XAxis::WallClock: x.push_back(p.wall_time - run.t0); break;
    }
  }
  return x;
}

}  // namespace pm
