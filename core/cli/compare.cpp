// pipemare compare: runs side by side, against a baseline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"
#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/events/event.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

std::string fmt(double v, const char* f) {
  if (!std::isfinite(v)) return "-";
  char b[48];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string mib(double bytes) { return fmt(bytes / (1024.0 * 1024.0), "%.2f"); }

struct StageFigures {
  std::map<int, double> utilization;  // last value per stage
  std::map<int, double> peak;         // max mem/peak per stage
};

StageFigures stageFigures(const RunData& d) {
  StageFigures f;
  for (const auto& p : d.utilization)
    if (std::isfinite(p.value)) f.utilization[p.stage] = p.value;
  for (const auto& p : d.memPeak)
    if (std::isfinite(p.value)) f.peak[p.stage] = std::max(f.peak.count(p.stage) ? f.peak[p.stage] : 0.0, p.value);
  return f;
}

Json nanNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// The runs to compare, and the baseline last when it is none of them. Returns the baseline's index.
size_t loadRuns(const RunStore& store, const CompareOptions& o, int64_t baseId, std::vector<RunData>& data) {
  for (int64_t id : o.runs) {
    data.push_back(loadRunData(store, id));
    if (data.back().record.id == 0) throw StoreError(store.path(), "no run with id " + std::to_string(id), true);
  }
  const auto baseIt = std::find_if(data.begin(), data.end(), [&](const RunData& d) { return d.record.id == baseId; });
  if (baseIt != data.end()) return static_cast<size_t>(baseIt - data.begin());
  data.push_back(loadRunData(store, baseId));
  if (data.back().record.id == 0) throw StoreError(store.path(), "no run with id " + std::to_string(baseId) + " (--baseline)", true);
  return data.size() - 1;
}

// --json: the target, the baseline and per run its figures, their ratios and its per-stage figures.
void printJson(const std::vector<RunData>& data, const std::vector<RunSummary>& rows, double target, int64_t baseId) {
  Json arr = Json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& rec = data[i].record;
    Json j{{"id", rec.id}, {"name", rec.name}, {"schedule", rec.schedule}, {"model", rec.model}, {"stages", rec.stages},
           {"microbatches", rec.microbatches}, {"status", toString(rec.status)}, {"baseline", r.isBaseline}};
    for (int f = 0; f < kSummaryFieldCount; ++f) {
      j[summaryFieldInfo(summaryField(f)).key] = nanNull(r.values[static_cast<size_t>(f)]);
      j[std::string(summaryFieldInfo(summaryField(f)).key) + "_ratio"] = nanNull(r.ratios[static_cast<size_t>(f)]);
    }
    const auto sf = stageFigures(data[i]);
    Json stages = Json::array();
    for (const auto& [s, u] : sf.utilization)
      stages.push_back({{"stage", s}, {"utilization", u}, {"peak_memory_bytes", nanNull(sf.peak.count(s) ? sf.peak.at(s) : NAN)}});
    j["per_stage"] = stages;
    arr.push_back(j);
  }
  std::printf("%s\n", Json{{"accuracy_target", nanNull(target)}, {"baseline", baseId}, {"runs", arr}}.dump(2).c_str());
}

// One line per run: its figures. The name column is as wide as the longest name, up to 40
// characters; stored text is shown escaped (escapeForTerminal).
void printFigures(const std::vector<RunData>& data, const std::vector<RunSummary>& rows) {
  std::vector<std::string> names;
  size_t nameWidth = 4;
  for (const auto& d : data) {
    names.push_back(escapeForTerminal(d.record.name));
    nameWidth = std::max(nameWidth, std::min<size_t>(40, textLength(names.back())));
  }
  std::printf("%-5s %s %-13s %3s %3s %-10s %8s %8s %8s %8s %9s %10s %6s %9s\n", "run", padText("name", nameWidth).c_str(),
              "schedule", "P", "N", "status", "loss", "best", "acc", "best acc", "to target", "samples/s", "util", "peak MiB");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& rec = data[i].record;
    std::printf("%-5lld %s %-13s %3d %3d %-10s %8s %8s %8s %8s %9s %10s %6s %9s\n", static_cast<long long>(rec.id),
                padText(fitText(names[i], nameWidth), nameWidth).c_str(), escapeForTerminal(rec.schedule).c_str(), rec.stages,
                rec.microbatches, toString(rec.status),
                fmt(r.value(SummaryField::FinalLoss), "%.4f").c_str(), fmt(r.value(SummaryField::BestLoss), "%.4f").c_str(),
                fmt(r.value(SummaryField::FinalAccuracy), "%.4f").c_str(),
                fmt(r.value(SummaryField::BestAccuracy), "%.4f").c_str(),
                fmt(r.value(SummaryField::TimeToTarget), "%.1fs").c_str(), fmt(r.value(SummaryField::Throughput), "%.0f").c_str(),
                fmt(r.value(SummaryField::Utilization), "%.3f").c_str(), mib(r.value(SummaryField::PeakMemory)).c_str());
  }
}

// One line per run: its ratios to the baseline.
void printRatios(const std::vector<RunSummary>& rows, const RunSummary& baseSummary) {
  std::printf("\nagainst the baseline (ratio = run / baseline; accuracy in points):\n");
  std::printf("%-5s %10s %10s %10s %10s %10s\n", "run", "d acc", "to target", "samples/s", "util", "peak mem");
  for (const auto& r : rows) {
    const double dAcc = (r.value(SummaryField::FinalAccuracy) - baseSummary.value(SummaryField::FinalAccuracy)) * 100.0;
    std::printf("%-5lld %10s %10s %10s %10s %10s%s\n", static_cast<long long>(r.runId), fmt(dAcc, "%+.2f").c_str(),
                fmt(r.ratio(SummaryField::TimeToTarget), "%.2fx").c_str(), fmt(r.ratio(SummaryField::Throughput), "%.2fx").c_str(),
                fmt(r.ratio(SummaryField::Utilization), "%.2fx").c_str(), fmt(r.ratio(SummaryField::PeakMemory), "%.2fx").c_str(),
                r.isBaseline ? "  (baseline)" : "");
  }
}

// One line per run: each stage's last utilization and peak accounted memory.
void printStageFigures(const std::vector<RunData>& data) {
  std::printf("\nper stage (last utilization / peak accounted memory MiB):\n");
  for (const auto& d : data) {
    const auto sf = stageFigures(d);
    std::string line;
    for (const auto& [s, u] : sf.utilization)
      line += " s" + std::to_string(s) + " " + fmt(u, "%.2f") + "/" + mib(sf.peak.count(s) ? sf.peak.at(s) : NAN);
    std::printf("%-5lld%s\n", static_cast<long long>(d.record.id), line.empty() ? " -" : line.c_str());
  }
}

}  // namespace

int compareCommand(const CompareOptions& o) {
  try {
    if (o.runs.size() < 1) throw ConfigError("compare", "give at least one run id");
    auto opened = RunStore::openReadOnly(dbPath(o.db));  // never writes
    RunStore& store = *opened;
    const int64_t baseId = o.baseline > 0 ? o.baseline : o.runs.front();
    std::vector<RunData> data;
    const size_t baseIndex = loadRuns(store, o, baseId, data);
    const RunData& base = data[baseIndex];
    double target = o.target;
    if (target < 0) {  // the baseline's best accuracy minus 0.01
      const RunSummary b = summarizeRun(base, 2.0);
      target = std::isfinite(b.value(SummaryField::BestAccuracy)) ? b.value(SummaryField::BestAccuracy) - 0.01 : NAN;
    }
    const RunSummary baseSummary = summarizeRun(base, target);
    std::vector<RunSummary> rows;
    for (const auto& d : data) {
      rows.push_back(summarizeRun(d, target));
      applyBaseline(rows.back(), baseSummary);
    }
    if (o.json) {
      printJson(data, rows, target, baseId);
      return 0;
    }
    std::printf("compare %zu run(s), baseline run %lld; time to target = training seconds (pauses between sessions left out) until eval accuracy >= %s\n\n", rows.size(),
                static_cast<long long>(baseId), fmt(target, "%.4f").c_str());
    printFigures(data, rows);
    printRatios(rows, baseSummary);
    printStageFigures(data);
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

}  // namespace pm::cli
