#pragma once
// The Compare view: any set of runs laid side by side. A checkable list of the store's runs, a
// metric / x-axis / smoothing / baseline / accuracy-target bar, an overlay plot (one series per
// run, full-resolution data, EMA smoothing applied on the full data for display only) and a
// summary table with ratios against the baseline run. GUI thread only; reads the store through a
// StoreWatcher (the process's one connection) on refresh(), which runs when the watcher reports a
// change in the runs, and at each of its polls while a selected run is running.
#include <QColor>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/events/metric_keys.h"
#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"

class QTreeWidget;
class QTreeWidgetItem;
class QComboBox;
class QDoubleSpinBox;
class QSlider;
class QCheckBox;
class QLabel;
class QTableWidget;

namespace pm::ui {

class CurvePlot;
class MetricChooser;
class StoreWatcher;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  // One plotted run: x on the chosen axis, the stored values (raw) and the drawn values (y:
  // raw smoothed, or raw itself when the series is not smoothed). Points whose x cannot be mapped
  // are left out of all four vectors.
  // The metric name that overlays a per-stage metric's every stage ("stage*/utilization").
  static constexpr const char* kAllStages = "stage*/";
  // "utilization" for "stage3/utilization" (and 3 into *stage); "" for a metric of the run.
  static std::string stageMetricRest(const std::string& key, int* stage = nullptr);

  struct PlottedSeries {
    int64_t runId = 0;
    QString runName;
    QString metric;  // the key drawn (the first or the second metric)
    std::vector<int64_t> steps;
    std::vector<double> x, raw, y;
    // Smoothing is on and the series has enough points for it (smoothingApplies): the plot draws
    // y with the raw values faded under it, and the legend says "smoothed".
    bool smoothed = false;
  };

  // Through `watcher`, which must outlive this view (MainWindow's, shared by every view).
  explicit CompareView(StoreWatcher* watcher, QWidget* parent = nullptr);
  // With a watcher of its own on dbPath, owned by the view (a view on its own, as in tests).
  explicit CompareView(const std::string& dbPath, QWidget* parent = nullptr);
  ~CompareView() override;

  // Runs to compare (ids not in the store are ignored); plotted and tabulated in ascending id order.
  void setSelectedRuns(const std::vector<int64_t>& runIds);
  std::vector<int64_t> selectedRuns() const;
  int runLoads() const { return runLoads_; }  // times a run's data was read from the store (tests)
  // A metric key present in at least one selected run (returns false otherwise).
  bool setMetric(const QString& key);
  QString metric() const;
  // A second metric in the same panel, on the right axis with its own scale ("" for none); false
  // for a key no selected run has.
  bool setSecondMetric(const QString& key);
  QString secondMetric() const { return secondMetric_; }
  QStringList availableMetrics() const;
  void setXAxis(XAxis axis);
  XAxis xAxis() const { return xAxis_; }
  void setSmoothing(double alpha);  // EMA weight, clamped to [0, 0.99]
  double smoothing() const { return smoothing_; }
  // The run the ratios are computed against; must be selected (returns false otherwise).
  // Default: the first selected run.
  bool setBaseline(int64_t runId);
  int64_t baseline() const { return baseline_; }
  void setAccuracyTarget(double target);  // for "time to target"; default 0 = auto
  double accuracyTarget() const { return target_; }  // 0 = auto
  // The target the summary uses: the set one, or with auto the baseline run's best eval accuracy
  // - 0.01 (pipemare compare's default); NaN when the baseline has no accuracy.
  double effectiveAccuracyTarget() const;

  // Saves the plot; PNG or PDF by the suffix. Returns false on failure. The status line says where
  // it was saved, or which file could not be written and why (the folder does not exist, ...).
  bool exportPlot(const QString& path);
  // Writes every plotted point at full resolution in long format to `path`:
  //   run_id,run_name,metric,step,x,value,smoothed   (value = stored, smoothed = drawn)
  // and the summary table (values and ratios against the baseline) to summaryCsvPath(path).
  // Returns false when a file cannot be written; the status line says as exportPlot's does.
  bool exportCsv(const QString& path);
  // "<path without .csv>_summary.csv", e.g. compare.csv -> compare_summary.csv.
  static QString summaryCsvPath(const QString& csvPath);

  // The summary of a selected run (values and ratios against the baseline), if selected.
  std::optional<RunSummary> summaryRow(int64_t runId) const;
  const std::vector<RunSummary>& summaryRows() const { return summaries_; }
  const std::vector<PlottedSeries>& plottedSeries() const { return plotted_; }
  // The stored (unsmoothed) points of `key` of a selected run (empty when absent).
  const std::vector<MetricPoint>& storedPoints(int64_t runId, const std::string& key) const;

  CurvePlot* plot() const { return plot_; }
  QTreeWidget* runList() const { return runList_; }
  // A ticked run's colour: kept while it stays ticked (ticking another run does not recolour it).
  QColor colorOf(int64_t runId) const;
  // Types into the run list's filter box (as the user would).
  void setFilterText(const QString& text);
  QTableWidget* summaryTable() const { return table_; }
  const std::string& lastError() const { return lastError_; }
  QLabel* statusLabel() const { return status_; }  // the line under the view: counts, exports, errors

 public Q_SLOTS:
  // Re-reads the run list and the selected runs' data from the store, then redraws.
  void refresh();

 private:
  static constexpr int kRunColumns = 7;  // id (checkable), name, status, schedule, model, P, N
  // "#<id> <what differs> · <name>": the fields that tell the ticked runs apart (labels_) before
  // the name, so that what is cut of a long label is the name; "#<id> <name>" when none differ.
  QString runLabel(const RunRecord& r) const;
  void refreshLabels();  // labels_ over the ticked runs (loadSelected, once they are loaded)
  std::map<int64_t, std::string> labels_;

  // Construction (compare_view_build.cpp), called by the constructor in this order (the order the
  // widgets are created in is their Tab order).
  QWidget* buildRunPanel();      // left: the run list, its filter box and its buttons
  void setUpControls();          // ranges, tooltips and sizes of the control bar's widgets
  QWidget* buildResultsPanel();  // right: the control rows, the plot and the summary table
  QWidget* buildSummaryBox();    // the summary table under its caption
  void connectControls();
  void connectWatcher();

  void reloadRunList();
  void redrawAll();  // run list, controls, plot and summary from the loaded data
  void loadSelected();
  void syncControls();
  int64_t defaultBaseline() const;
  void rebuildPlot();
  // The status line under the plot; `unsmoothed`: the runs whose series were too short to smooth.
  void showPlotStatus(size_t points, const QStringList& missing, const QStringList& unsmoothed);
  void rebuildSummary();
  void onRunChecked(QTreeWidgetItem* item);
  void exportPlotDialog();
  void exportCsvDialog();
  void assignColors();  // after selected_ changed: free the slots of runs unticked, give new ones the lowest free
  void applyFilter();   // hides the list's rows the filter text does not match
  std::map<int64_t, size_t> colorSlot_;
  QString filterText_;
  void showError(const QString& message);

  StoreWatcher* watcher_;
  std::vector<RunRecord> runs_;           // the store's runs, as listed
  std::vector<int64_t> selected_;         // ascending ids
  std::map<int64_t, RunData> data_;       // loaded data of the selected runs
  std::vector<PlottedSeries> plotted_;
  std::vector<RunSummary> summaries_;

  QString metric_ = metric::kTrainLoss;
  QString secondMetric_;  // "" for none
  XAxis xAxis_ = XAxis::Step;
  double smoothing_ = 0;
  int64_t baseline_ = 0;
  bool baselineChosen_ = false;  // set by setBaseline (the user's choice)
  double target_ = 0;  // 0 = auto
  bool updating_ = false;  // guards control signals while the view updates them itself

  QTreeWidget* runList_;
  MetricChooser* metricBox_;  // grouped keys with a search box
  MetricChooser* secondBox_;  // the same, with "none" first
  QComboBox* xAxisBox_;
  QSlider* smoothSlider_;
  QDoubleSpinBox* smoothSpin_;
  QComboBox* baselineBox_;
  QDoubleSpinBox* targetSpin_;
  QCheckBox* logY_;
  CurvePlot* plot_;
  QTableWidget* table_;
  QLabel* status_;
  std::string lastError_;
  int runLoads_ = 0;
};

}  // namespace pm::ui
