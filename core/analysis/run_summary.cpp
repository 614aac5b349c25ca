#include "core/analysis/run_summary.h"
#include "core/events/metric_keys.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/analysis/run_data.h"

namespace pm {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const SummaryFieldInfo kFields[kSummaryFieldCount] = {
    {"final_loss", "Final loss", false},
    {"best_loss", "Best loss", false},
    {"final_accuracy", "Final acc.", true},
    {"best_accuracy", "Best acc.", true},
    {"time_to_target_s", "Time to target", false},
    {"throughput_samples_per_s", "Throughput", true},
    {"utilization", "Utilization", true},
    {"peak_memory_bytes", "Peak memory", false},
};

template <typename Better>
double bestFinite(const std::vector<MetricPoint>& pts, Better better) {
  double best = kNaN;
  for (const auto& p : pts)
    if (std::isfinite(p.value) && (std::isnan(best) || better(p.value, best))) best = p.value;
  return best;
}

// Samples over time across logged windows of equal sample counts: the harmonic mean of their rates.
double windowThroughput(const std::vector<MetricPoint>& pts) {
  double inverse = 0;
  size_t n = 0;
  for (const auto& p : pts)
    if (std::isfinite(p.value) && p.value > 0) {
      inverse += 1.0 / p.value;
      ++n;
    }
  return n ? static_cast<double>(n) / inverse : kNaN;
}
}  // namespace

double lastFinite(const std::vector<MetricPoint>& pts) {
  for (auto it = pts.rbegin(); it != pts.rend(); ++it)
    if (std::isfinite(it->value)) return it->value;
  return kNaN;
}

const SummaryFieldInfo& summaryFieldInfo(SummaryField field) { return kFields[static_cast<int>(field)]; }

double ratioOf(double value, double base) {
  if (!std::isfinite(value) || !std::isfinite(base) || base == 0) return kNaN;
  return value / base;
}

RunSummary summarizeRun(const RunData& run, double accuracyTarget) {
  RunSummary s;
  s.runId = run.record.id;
  s.name = run.record.name;
  s.values.fill(kNaN);
  s.ratios.fill(kNaN);
  auto set = [&](SummaryField f, double v) { s.values[static_cast<size_t>(f)] = v; };

  const auto& loss = run.metric(metric::kTrainLoss);
  set(SummaryField::FinalLoss, lastFinite(loss));
  set(SummaryField::BestLoss, bestFinite(loss, [](double a, double b) { return a < b; }));
  const auto& acc = run.metric(metric::kEvalAccuracy);
  set(SummaryField::FinalAccuracy, lastFinite(acc));
  set(SummaryField::BestAccuracy, bestFinite(acc, [](double a, double b) { return a > b; }));
  for (const auto& p : acc)
    if (std::isfinite(p.value) && p.value >= accuracyTarget) {
      set(SummaryField::TimeToTarget, trainingTime(run, p.wall_time));
      break;
    }
  // Training throughput: samples over time across the logged windows (each a log_interval of
  // minibatches, start-up and evaluation excluded); the plain mean of their rates overweighted
  // fast windows.
  set(SummaryField::Throughput, windowThroughput(run.metric(metric::kTrainSamplesPerS)));

  // A rank runs its stages on one thread and holds them on one device (several chunks per rank:
  // interleaved-1f1b, zb-v): its utilization is its stages' summed, its peak their peaks summed
  // (an upper bound: they need not peak at one moment). With one stage per rank these are the
  // stage's own figures.
  const std::vector<int>& ranks = run.record.stage_ranks;
  auto rankOf = [&](int stage) { return stage >= 0 && static_cast<size_t>(stage) < ranks.size() ? ranks[static_cast<size_t>(stage)] : stage; };
  // Points come ordered by (stage, step): the last finite one per stage wins.
  std::map<int, double> lastUtil;
  for (const auto& p : run.utilization)
    if (std::isfinite(p.value)) lastUtil[p.stage] = p.value;
  if (!lastUtil.empty()) {
    std::map<int, double> rankUtil;
    for (const auto& [stage, v] : lastUtil) rankUtil[rankOf(stage)] += v;
    double sum = 0;
    for (const auto& [rank, v] : rankUtil) sum += v;
    set(SummaryField::Utilization, sum / static_cast<double>(rankUtil.size()));
  }
  std::map<int, double> stagePeak;
  for (const auto& p : run.memPeak)
    if (std::isfinite(p.value)) stagePeak[p.stage] = std::max(stagePeak.count(p.stage) ? stagePeak[p.stage] : 0.0, p.value);
  std::map<int, double> rankPeak;
  for (const auto& [stage, v] : stagePeak) rankPeak[rankOf(stage)] += v;
  double peak = kNaN;
  for (const auto& [rank, v] : rankPeak)
    if (std::isnan(peak) || v > peak) peak = v;
  set(SummaryField::PeakMemory, peak);
  return s;
}

void applyBaseline(RunSummary& run, const RunSummary& baseline) {
  for (size_t i = 0; i < run.values.size(); ++i) run.ratios[i] = ratioOf(run.values[i], baseline.values[i]);
  run.isBaseline = run.runId == baseline.runId;
}

}  // namespace pm
