#pragma once
// The Timeline view: a stored run's measured schedule trace (what each stage did when, from the
// store) as a Gantt chart on top, and below it the planner's predicted timeline of the same
// experiment (`pipemare plan --against RUN --trace FILE`, or `plan --experiment FILE --trace FILE`
// on the run's stored experiment; in a child process so the GUI never blocks) for as many
// minibatches as the measured trace holds. Zoom and pan each chart with the mouse (wheel,
// drag); Fit (or double-click, R) shows all of it again; "Link time axes" makes the two charts
// zoom and pan together, on one time scale. Under each chart a one-line summary: makespan, actions by kind
// and what the shown window holds. GUI thread only; reads the store through a StoreWatcher (the
// process's one connection) and re-reads the list of runs when the watcher reports a change.
#include <QString>
#include <QStringList>
#include <QWidget>
#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTemporaryDir;

namespace pm::ui {

class PlanProcess;

class GanttPlot;
struct GanttBox;
class StoreWatcher;

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  // pipemareBinary: the engine executable that plans (`pipemare plan`). Through `watcher`, which must
  // outlive this view (MainWindow's, shared by every view).
  TimelineView(StoreWatcher* watcher, const QString& pipemareBinary, QWidget* parent = nullptr);
  // With a watcher of its own on dbPath, owned by the view (a view on its own, as in tests).
  TimelineView(const std::string& dbPath, const QString& pipemareBinary, QWidget* parent = nullptr);
  ~TimelineView() override;

  int runCount() const;      // runs with a stored trace, in the chooser
  int64_t currentRun() const;  // 0 when none
  GanttPlot* measuredPlot() const { return measured_; }
  GanttPlot* predictedPlot() const { return predicted_; }
  QString measuredSummary() const;
  QString predictedSummary() const;
  // Memory per stage and category, the planner's prediction beside the run's measured peak
  // (from `plan --against`); empty with a note when the prediction did not come from the run.
  QTableWidget* memoryTable() const { return memory_; }
  QString memoryNote() const;
  bool predicting() const;
  QStringList planArguments() const { return planArgs_; }  // of the latest prediction
  int predictedMinibatches() const;
  void setPredictedMinibatches(int n);  // re-plans
  bool axesLinked() const;
  const std::string& lastError() const { return lastError_; }

 public Q_SLOTS:
  // Re-reads the runs that have a trace (keeps the shown run when it is still there).
  void refresh();
  // Shows that run (re-reading the store when it is not listed yet). False when it has no trace.
  bool setRun(int64_t runId);

 Q_SIGNALS:
  // The predicted timeline is shown (ok) or the planner failed (the summary says why).
  void predictionFinished(bool ok);

 private:
  void buildLayout();
  void connectSignals();
  void showRun(int64_t runId);
  void clearShownRun();
  void requestPrediction();
  void showPrediction(const std::vector<GanttBox>& boxes, int stages);
  void planFailed(const QString& message);
  void updateSummaries();
  // With the axes linked: both charts reach the longer makespan, and `from`'s window goes to the other.
  void linkViews(GanttPlot* from);
  // Running the planner and reading its answer (timeline_planner.cpp).
  void startPlanner();
  bool answerIsStale();
  void planFinished();
  void planEndedWithout(const QString& message, const QString& place, int exitCode);
  // Fills the memory table from `plan --against`'s per_stage (predicted, measured per category).
  void showMemory(const nlohmann::json& plan);

  StoreWatcher* watcher_;
  QString binary_;
  std::unique_ptr<QTemporaryDir> tmp_;
  QComboBox* runBox_;
  QPushButton* refreshButton_;
  GanttPlot* measured_;
  GanttPlot* predicted_;
  QLabel* measuredLabel_;
  QLabel* predictedLabel_;
  QTableWidget* memory_;
  QLabel* memoryLabel_;
  QSpinBox* minibatches_;
  QCheckBox* linkAxes_;
  bool linking_ = false;  // one chart's window is being copied to the other
  PlanProcess* proc_;  // plan --against | --experiment, in events
  bool updating_ = false;
  bool pending_ = false;     // a prediction was asked for while the planner was busy
  int64_t shownRun_ = 0;
  bool storeHasRuns_ = false;  // at the last refresh(), with or without a trace: else the empty state says how to make one
  int64_t plannedRun_ = 0;  // the run the running planner was started for
  // The prediction of a run with a recorded partition comes from `plan --against` (the run's
  // own partition, timing and measured action costs); otherwise, or when that fails, from
  // `plan --experiment` on the run's stored experiment (simulated costs).
  bool against_ = false, againstFailed_ = false;
  std::string model_, schedule_, configJson_;
  bool singleMode_ = false;  // the shown run ran all stages in one process (execution.mode single)
  bool chunked_ = false;     // the shown run's ranks held several stages each (interleaved 1F1B, ZB-V)
  int stages_ = 0, microbatches_ = 0;
  QString measuredCounts_, predictedCounts_, predictedError_;
  QStringList planArgs_;
  std::string lastError_;
};

}  // namespace pm::ui
