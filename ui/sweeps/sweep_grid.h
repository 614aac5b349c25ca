#pragma once
// The grid of a sweep, without Qt: which sweeps a store holds, the swept keys of a sweep's runs
// (from their "key=value" tags, as pm::cli::sweepKeys), the values along each axis (numerically
// sorted when they are all numbers, in first-seen order otherwise) and one cell per grid point
// with its run, the chosen final metric and a status mark. Unit tested (tests/ui/sweeps_test.cpp).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/analysis/sweep_tags.h"  // sweepKeys, sweepTagValue
#include "core/store/run_store.h"

namespace pm::ui {

enum class SweepMetric { FinalAccuracy, FinalLoss };

struct SweepInfo {
  std::string id;
  int runs = 0;
};

// The distinct non-empty sweep ids of `runs`, newest sweep first (by its highest run id).
std::vector<SweepInfo> listSweeps(const std::vector<RunRecord>& runs);

// True when `s` is a whole finite number ("0.05", "1e-3", "2").
bool isNumber(const std::string& s);

// The distinct values of `key` among `runs`: sorted numerically when all are numbers, otherwise
// in the order they first appear (runs taken by ascending id).
std::vector<std::string> axisValues(const std::vector<RunRecord>& runs, const std::string& key);

// The mark of a grid point that never started (a stand-in from notStartedPoints): U+00B7, UTF-8.
inline constexpr const char* kNotStartedMark = "\xC2\xB7";

// The mark of a status drawn instead of a value: "D" diverged, "F" failed, "S" stopped or
// interrupted, "…" (U+2026, UTF-8) running or created; "" for finished runs. (A stand-in from
// notStartedPoints is marked kNotStartedMark instead.)
std::string statusMark(RunStatus status);

// The metric value as written in a cell: accuracy with 3 decimals, loss with 4 significant digits,
// "-" when not finite.
std::string formatMetric(double value, SweepMetric metric);

struct SweepCell {
  int row = 0, col = 0;
  int64_t runId = 0;     // 0: no run at this grid point (status "not started" where the sweep's grid has one)
  int runs = 0;          // how many runs fell on this point (the newest is shown)
  std::string runName, message;
  std::string status;    // as shown: sweepPointStatus ("" where no run and no stand-in is)
  double value = 0;      // the metric (NaN when absent)
  std::string mark;      // statusMark of the run's status, kNotStartedMark for a stand-in
  std::string text;      // what the cell shows: the mark, or the formatted value
};

struct SweepGrid {
  std::string rowKey, colKey;                     // "" = a single row / column
  std::vector<std::string> rowValues, colValues;  // {""} for a missing key
  std::vector<SweepCell> cells;                   // rows() * cols(), row-major
  double minValue = 0, maxValue = 0;              // over the finite values of unmarked cells
  bool hasValues = false;                         // false: no unmarked cell has a finite value

  int rows() const { return static_cast<int>(rowValues.size()); }
  int cols() const { return static_cast<int>(colValues.size()); }
  const SweepCell* cell(int row, int col) const;
  int64_t runAt(int row, int col) const;  // 0 outside the grid or where no run is
  int filledCells() const;                // cells with a run
  int notStartedCells() const;            // cells of the recorded grid that no run reached
};

// The grid of `runs` (one sweep's runs, with notStartedPoints' stand-ins if known) over rowKey x
// colKey. Runs whose tags do not match the
// `fixed` values (key -> value, for swept keys on neither axis) are left out. Either key may be
// "" (a single row or column).
SweepGrid buildSweepGrid(const std::vector<RunRecord>& runs, const std::string& rowKey, const std::string& colKey,
                         SweepMetric metric, const std::map<std::string, std::string>& fixed = {});

}  // namespace pm::ui
