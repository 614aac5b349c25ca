// The table of a sweep (`pipemare sweep`, `pipemare runs list --sweep ID`): one row per grid point,
// and for a two-parameter sweep the final metric as a matrix.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/analysis/sweep_tags.h"
#include "core/cli/sweep.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

// Four decimals, or three significant digits for a value that would not fit the column (a
// diverged run's loss).
std::string num(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, std::abs(v) >= 1e4 ? "%.3g" : "%.4f", v);
  return b;
}

// The swept value of `key` on the run, as shown.
std::string shownValue(const RunRecord& r, const std::string& key) { return escapeForTerminal(sweepTagValue(r, key)); }

// `s` right-aligned in `w` characters.
std::string rightAligned(const std::string& s, size_t w) { return std::string(w > textLength(s) ? w - textLength(s) : 0, ' ') + s; }

// A cell of the matrix: a letter for a run without a final metric of its own, else the metric.
std::string matrixCell(const RunRecord& r, bool accuracy) {
  if (r.id == 0) return ".";  // a stand-in from notStartedPoints: the point has not started
  switch (r.status) {
    case RunStatus::Diverged: return "D";
    case RunStatus::Failed: return "F";
    case RunStatus::Stopped:
    case RunStatus::Interrupted: return "S";
    case RunStatus::Running:
    case RunStatus::Created: return "...";
    case RunStatus::Finished: break;
  }
  return num(accuracy ? r.final_accuracy : r.final_loss);
}

// The grid of a two-parameter sweep as a matrix: rows = first key, columns = second key.
void printSweepMatrix(const std::vector<RunRecord>& runs, const std::vector<std::string>& keys) {
  const bool acc = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return !std::isnan(r.final_accuracy); });
  std::vector<std::string> rows, cols;
  std::map<std::pair<std::string, std::string>, const RunRecord*> cell;
  for (const auto& r : runs) {
    const auto a = shownValue(r, keys[0]), b = shownValue(r, keys[1]);
    if (std::find(rows.begin(), rows.end(), a) == rows.end()) rows.push_back(a);
    if (std::find(cols.begin(), cols.end(), b) == cols.end()) cols.push_back(b);
    cell[{a, b}] = &r;
  }
  std::printf("\nfinal %s (rows %s, columns %s; D = diverged, F = failed, S = stopped, . = not started):\n", acc ? "accuracy" : "loss",
              escapeForTerminal(keys[0]).c_str(), escapeForTerminal(keys[1]).c_str());
  size_t rowWidth = 12, colWidth = 10;
  for (const auto& rv : rows) rowWidth = std::max(rowWidth, textLength(rv));
  for (const auto& c : cols) colWidth = std::max(colWidth, textLength(c));
  std::printf("%s", std::string(rowWidth, ' ').c_str());
  for (const auto& c : cols) std::printf(" %s", rightAligned(c, colWidth).c_str());
  std::printf("\n");
  for (const auto& rv : rows) {
    std::printf("%s", padText(rv, rowWidth).c_str());
    for (const auto& c : cols) {
      auto it = cell.find({rv, c});
      std::printf(" %s", rightAligned(it != cell.end() ? matrixCell(*it->second, acc) : "", colWidth).c_str());
    }
    std::printf("\n");
  }
}

}  // namespace

// Stored text (sweep ids, swept values, messages) is shown escaped (escapeForTerminal); columns are
// measured in characters.
void printSweepTable(const std::vector<RunRecord>& runs, const std::string& sweepId) {
  const auto keys = sweepKeys(runs);
  const auto notStarted = std::count_if(runs.begin(), runs.end(), [](const RunRecord& r) { return r.id == 0; });
  std::printf("sweep %s: %zu run(s)%s, swept %s\n", escapeForTerminal(sweepId).c_str(),
              runs.size() - static_cast<size_t>(notStarted),
              notStarted ? (", " + std::to_string(notStarted) + " point(s) not started").c_str() : "",
              keys.empty() ? "-" : escapeForTerminal(join(keys, ", ")).c_str());
  std::vector<size_t> width;  // each key's column: as wide as its name and its longest value
  for (const auto& k : keys) {
    size_t w = textLength(escapeForTerminal(k));
    for (const auto& r : runs) w = std::max(w, textLength(shownValue(r, k)));
    width.push_back(w);
  }
  for (size_t i = 0; i < keys.size(); ++i) std::printf("%s ", padText(escapeForTerminal(keys[i]), width[i]).c_str());
  std::printf("%5s %-11s %9s %9s  %s\n", "run", "status", "loss", "accuracy", "message");
  for (const auto& r : runs) {
    for (size_t i = 0; i < keys.size(); ++i) std::printf("%s ", padText(shownValue(r, keys[i]), width[i]).c_str());
    const std::string message = escapeForTerminal(r.status_message);
    const std::string msg = textLength(message) > 60 ? firstChars(message, 59) + "~" : message;
    std::printf("%5s %-11s %9s %9s  %s\n", r.id > 0 ? std::to_string(r.id).c_str() : "-", sweepPointStatus(r).c_str(),
                num(r.final_loss).c_str(), num(r.final_accuracy).c_str(), msg.c_str());
  }
  if (keys.size() == 2) printSweepMatrix(runs, keys);
}

}  // namespace pm::cli
