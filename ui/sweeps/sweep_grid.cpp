#include "ui/sweeps/sweep_grid.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pm::ui {

namespace {

std::vector<const RunRecord*> byId(const std::vector<RunRecord>& runs) {
  std::vector<const RunRecord*> out;
  out.reserve(runs.size());
  for (const auto& r : runs) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const RunRecord* a, const RunRecord* b) { return a->id < b->id; });
  return out;
}

double metricOf(const RunRecord& r, SweepMetric m) { return m == SweepMetric::FinalAccuracy ? r.final_accuracy : r.final_loss; }

}  // namespace

std::vector<SweepInfo> listSweeps(const std::vector<RunRecord>& runs) {
  std::vector<SweepInfo> out;
  std::vector<int64_t> newest;
  for (const auto& r : runs) {
    if (r.sweep_id.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const SweepInfo& s) { return s.id == r.sweep_id; });
    if (it == out.end()) {
      out.push_back({r.sweep_id, 1});
      newest.push_back(r.id);
    } else {
      ++it->runs;
      auto& n = newest[static_cast<size_t>(it - out.begin())];
      n = std::max(n, r.id);
    }
  }
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return newest[a] > newest[b]; });
  std::vector<SweepInfo> sorted;
  for (size_t i : order) sorted.push_back(out[i]);
  return sorted;
}

bool isNumber(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno == 0 && std::isfinite(v);
}

std::vector<std::string> axisValues(const std::vector<RunRecord>& runs, const std::string& key) {
  std::vector<std::string> values;
  if (key.empty()) return {""};
  for (const RunRecord* r : byId(runs)) {
    const std::string v = sweepTagValue(*r, key);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  if (!values.empty() && std::all_of(values.begin(), values.end(), isNumber))
    std::stable_sort(values.begin(), values.end(),
                     [](const std::string& a, const std::string& b) { return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr); });
  return values;
}

std::string statusMark(RunStatus status) {
  switch (status) {
    case RunStatus::Diverged: return "D";
    case RunStatus::Failed: return "F";
    case RunStatus::Stopped:
    case RunStatus::Interrupted: return "S";
    case RunStatus::Running:
    case RunStatus::Created: return "\xE2\x80\xA6";  // …
    case RunStatus::Finished: break;
  }
  return "";
}

std::string formatMetric(double value, SweepMetric metric) {
  if (!std::isfinite(value)) return "-";
  char b[32];
  if (metric == SweepMetric::FinalAccuracy)
    std::snprintf(b, sizeof b, "%.3f", value);
  else
    std::snprintf(b, sizeof b, "%.4g", value);
  return b;
}

const SweepCell* SweepGrid::cell(int row, int col) const {
  if (row < 0 || col < 0 || row >= rows() || col >= cols()) return nullptr;
  return &cells[static_cast<size_t>(row * cols() + col)];
}

int64_t SweepGrid::runAt(int row, int col) const {
  const SweepCell* c = cell(row, col);
  return c ? c->runId : 0;
}

int SweepGrid::notStartedCells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const SweepCell& c) { return c.runId == 0 && c.mark == kNotStartedMark; }));
}

int SweepGrid::filledCells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const SweepCell& c) { return c.runId != 0; }));
}

SweepGrid buildSweepGrid(const std::vector<RunRecord>& runs, const std::string& rowKey, const std::string& colKey,
                         SweepMetric metric, const std::map<std::string, std::string>& fixed) {
  std::vector<RunRecord> kept;
  for (const auto& r : runs) {
    bool match = true;
    for (const auto& [k, v] : fixed)
      if (k != rowKey && k != colKey && sweepTagValue(r, k) != v) match = false;
    if (match) kept.push_back(r);
  }
  SweepGrid g;
  g.rowKey = rowKey;
  g.colKey = colKey;
  g.rowValues = axisValues(kept, rowKey);
  g.colValues = axisValues(kept, colKey);
  if (g.rowValues.empty()) g.rowValues = {""};
  if (g.colValues.empty()) g.colValues = {""};
  g.cells.resize(static_cast<size_t>(g.rows() * g.cols()));
  for (int r = 0; r < g.rows(); ++r)
    for (int c = 0; c < g.cols(); ++c) {
      auto& cell = g.cells[static_cast<size_t>(r * g.cols() + c)];
      cell.row = r;
      cell.col = c;
      cell.value = NAN;
    }
  auto indexOf = [](const std::vector<std::string>& values, const std::string& v) {
    return static_cast<int>(std::find(values.begin(), values.end(), v) - values.begin());
  };
  for (const RunRecord* run : byId(kept)) {  // ascending id: the newest run of a point wins
    const int r = rowKey.empty() ? 0 : indexOf(g.rowValues, sweepTagValue(*run, rowKey));
    const int c = colKey.empty() ? 0 : indexOf(g.colValues, sweepTagValue(*run, colKey));
    auto& cell = g.cells[static_cast<size_t>(r * g.cols() + c)];
    if (run->id == 0) {  // a point never started: only where no run is
      if (cell.runId == 0) {
        cell.status = sweepPointStatus(*run);  // "not started"
        cell.mark = kNotStartedMark;
        cell.text = cell.mark;
      }
      continue;
    }
    cell.runId = run->id;
    ++cell.runs;
    cell.runName = run->name;
    cell.status = toString(run->status);
    cell.message = run->status_message;
    cell.value = metricOf(*run, metric);
    cell.mark = statusMark(run->status);
  }
  for (auto& cell : g.cells) {
    if (cell.runId == 0) continue;
    cell.text = cell.mark.empty() ? formatMetric(cell.value, metric) : cell.mark;
    if (!cell.mark.empty() || !std::isfinite(cell.value)) continue;
    if (!g.hasValues) {
      g.minValue = g.maxValue = cell.value;
      g.hasValues = true;
    } else {
      g.minValue = std::min(g.minValue, cell.value);
      g.maxValue = std::max(g.maxValue, cell.value);
    }
  }
  return g;
}

}  // namespace pm::ui
