#pragma once
// The Sweeps view: the sweeps in the store (`pipemare sweep` runs sharing a sweep id), and for the
// chosen one a heat map of a final metric over two swept keys: one cell per grid point, the value
// written in it, runs that diverged, failed, stopped or are still running marked (D, F, S, …) in
// their own colours. Swept keys on neither axis get a value chooser. Clicking a cell emits
// openRun. GUI thread only; reads the store through a StoreWatcher (the process's one connection)
// when the watcher reports a change while the view is visible, or when it is shown again after one.
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
class QShowEvent;

namespace pm::ui {

class HeatMap;
struct HeatCell;
class StoreWatcher;

class SweepsView : public QWidget {
  Q_OBJECT
 public:
  // Through `watcher`, which must outlive this view (MainWindow's, shared by every view).
  explicit SweepsView(StoreWatcher* watcher, QWidget* parent = nullptr);
  // With a watcher of its own on dbPath, owned by the view (a view on its own, as in tests).
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
  // Re-reads the store when the view is visible and its runs changed (the watcher's polls call it
  // while runs are in progress). True when it refreshed.
  bool refreshIfChanged();
  // Re-reads the runs from the store (keeps the chosen sweep, metric and axes where they still exist).
  void refresh();
  // As a click on the cell: emits openRun when a run is there.
  void activateCell(int row, int col);

 Q_SIGNALS:
  void openRun(int64_t runId);

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void connectSignals();
  void sweepChosen();
  void rebuildAxes(bool keepChoices = true);
  void rebuildGrid();
  void showNoSweep();
  HeatCell heatCell(const SweepCell& c, const QString& metricName, SweepMetric m) const;
  // The chosen sweep's runs, with stand-ins (id 0, "not started") for the points of its recorded
  // grid that no run lies on.
  std::vector<RunRecord> sweepRuns() const;

  StoreWatcher* watcher_;
  // The watcher reported while the view was hidden: on show, refresh() (runsChanged) or
  // refreshIfChanged() (runs in progress).
  bool missedChange_ = false, missedProgress_ = false;
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
