#pragma once
// The compare summary maths (pipemare compare, the Compare view): per-run figures computed from full-resolution data and
// their ratios against a baseline run. No Qt; pure functions, any thread.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace pm {

struct RunData;

enum class SummaryField : int {
  FinalLoss,      // last train/loss (highest step)
  BestLoss,       // min train/loss
  FinalAccuracy,  // last eval/accuracy
  BestAccuracy,   // max eval/accuracy
  TimeToTarget,   // training time (s since the run's first point, pauses left out) at which eval/accuracy first reaches the target
  Throughput,     // mean train/samples_per_s
  Utilization,    // mean over ranks of each rank's last `utilization` (its stages' summed; one stage per rank: the stage's)
  PeakMemory,     // max over ranks of mem/peak over steps (bytes; a rank holding several stages: their peaks summed)
};
inline constexpr int kSummaryFieldCount = 8;

struct SummaryFieldInfo {
  const char* key;      // CSV column name, e.g. "final_loss"
  const char* title;    // table header
  bool higherIsBetter;  // for colouring ratios
};
const SummaryFieldInfo& summaryFieldInfo(SummaryField field);
inline SummaryField summaryField(int i) { return static_cast<SummaryField>(i); }

struct RunSummary {
  int64_t runId = 0;
  std::string name;
  std::array<double, kSummaryFieldCount> values{};  // NaN = not available (e.g. target never reached)
  std::array<double, kSummaryFieldCount> ratios{};  // value / baseline value; NaN when either is NaN or the baseline is 0
  bool isBaseline = false;

  double value(SummaryField f) const { return values[static_cast<size_t>(f)]; }
  double ratio(SummaryField f) const { return ratios[static_cast<size_t>(f)]; }
};

// Figures of one run; ratios are left NaN (see applyBaseline).
RunSummary summarizeRun(const RunData& run, double accuracyTarget);
// Fills `run.ratios` against `baseline` (the baseline's own ratios become 1 where it has a value).
void applyBaseline(RunSummary& run, const RunSummary& baseline);
// The last finite value of a metric's points, NaN when there is none.
double lastFinite(const std::vector<MetricPoint>& points);
// value / base, NaN when either is not finite or base == 0.
double ratioOf(double value, double base);

}  // namespace pm
