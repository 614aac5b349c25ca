#pragma once
// The Sweeps view: the sweeps in the store (`pipemare sweep` runs sharing a sweep id), and for the
// chosen one a heat map of a final metric over two swept keys: one cell per grid point, the value
// written in it, runs that diverged, failed, stopped or are still running marked (D, F, S, …) in
// their own colours. Swept keys on neither axis get a value chooser. Clicking a cell emits
// openRun. GUI thread only; opens its own read connection to the store, read on refresh().
#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ui/sweeps/sweep_grid.h"

class QComboBox;
class QHBoxLayout;
class QLabel;
class QPushButton;

namespace pm {
class RunStore;
}

namespace pm::ui {

class HeatMap;

class SweepsView : public QWidget {
  Q_OBJECT
 public:
  explicit SweepsView(const std::string& dbPath, QWidget* parent = nullptr);
  ~SweepsView() override;

  int sweepCount() const;
  QString currentSweep() const;
  bool setSweep(const QString& sweepId);
  void setMetric(SweepMetric metric);
  SweepMetric metric() const;
  // Axes by key ("" = none: a single row or column). False when the key is not swept.
  bool setAxes(const QString& rowKey, const QString& colKey);
  const std::vector<std::string>& sweptKeys() const { return keys_; }
  const SweepGrid& grid() const { return grid_; }
  HeatMap* heatMap() const { return map_; }
  QString statusText() const;
  const std::string& lastError() const { return lastError_; }

 public Q_SLOTS:
  // Re-reads the store when the view is visible and its runs changed (a timer calls it every 3 s).
  // True when it refreshed.
  bool refreshIfChanged();
  // Re-reads the runs from the store (keeps the chosen sweep, metric and axes where they still exist).
  void refresh();
  // As a click on the cell: emits openRun when a run is there.
  void activateCell(int row, int col);

 Q_SIGNALS:
  void openRun(int64_t runId);

 private:
  void sweepChosen();
  void rebuildAxes(bool keepChoices = true);
  void rebuildGrid();
  // The chosen sweep's runs, with stand-ins (id 0, "not started") for the points of its recorded
  // grid that no run lies on.
  std::vector<RunRecord> sweepRuns() const;

  std::string dbPath_;
  std::unique_ptr<RunStore> store_;
  std::vector<RunRecord> runs_;
  std::map<std::string, std::vector<GridAxis>> grids_;  // sweep id -> its recorded grid (empty: none recorded), read once
  std::vector<std::string> keys_;
  SweepGrid grid_;
  bool updating_ = false;

  QComboBox* sweepBox_;
  QComboBox* metricBox_;
  QComboBox* rowBox_;
  QComboBox* colBox_;
  QPushButton* refreshButton_;
  QWidget* fixedBar_;
  QHBoxLayout* fixedLayout_;
  std::vector<QComboBox*> fixedBoxes_;  // one per swept key on neither axis (objectName = the key)
  HeatMap* map_;
  QLabel* status_;
  std::string lastError_;
};

}  // namespace pm::ui
