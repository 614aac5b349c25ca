#pragma once
// The planner panel: what the planner predicts for the experiment being designed, before anything
// runs: utilization, bubble, delay and versions of every schedule side by side, per-stage memory
// as stacked bars (weights, gradients, optimizer, stash, delta, activations) and the predicted
// timeline as a Gantt chart. It asks the engine (`pipemare plan --json --trace`) in a child
// process, debounced, so the GUI never blocks. GUI thread only.
#include <QWidget>
#include <nlohmann/json.hpp>

class QComboBox;
class QLabel;
class QProcess;
class QTableWidget;
class QTimer;
class QTemporaryDir;

namespace pm::ui {

class GanttPlot;
class StackedBarsPlot;

class PlannerPanel : public QWidget {
  Q_OBJECT
 public:
  PlannerPanel(const QString& pipemareBinary, QWidget* parent = nullptr);
  ~PlannerPanel() override;

  // Re-plan for this experiment (normalised experiment JSON); debounced.
  void setExperiment(const nlohmann::json& experiment);
  // The design does not validate: clear the plan (it described another design) and say why.
  void setInvalid(const QString& reason);
  const nlohmann::json& plan() const { return plan_; }
  int rowCount() const;
  size_t ganttBoxes() const;
  QString statusText() const;
  // The plan row of the design being shown: its schedule, "pipemare+T2" with T2 on,
  // "gpipe+recompute" with recompute ("" before the first plan).
  QString selectedSchedule() const;
  // The timing model the planner uses: "1f1b" | "paper". It follows the experiment's
  // pipeline.timing whenever that changes; in between the user may pick the other.
  QString timingModel() const;
  void setTimingModel(const QString& timing);

 Q_SIGNALS:
  void planned();
  // The planner could not give a plan (it failed, crashed or could not start); the panel is cleared.
  void failed();

 private:
  void runPlanner();
  void showFailure(const QString& message);
  void clearPlan(const QString& statusHtml);
  void showPlan();
  void showSchedule(const QString& schedule);
  QString binary_;
  nlohmann::json experiment_, plan_;
  std::string experimentTiming_;  // the experiment's pipeline.timing last seen
  QComboBox* timing_;
  QTableWidget* table_;
  StackedBarsPlot* memory_;
  GanttPlot* gantt_;
  QLabel* status_;
  QTimer* debounce_;
  QProcess* proc_;
  QTemporaryDir* tmp_;
  QString shownSchedule_;
};

// The share of a pipemare run's minibatches that its synchronous warm-up takes
// (pipemare.warmup_epochs over training.epochs, or over training.steps when that is set and the
// size of an epoch is known without the data); 0 when there is no warm-up or it cannot be told.
double warmupFraction(const nlohmann::json& experiment);

// The `pipemare plan` options that describe an experiment's design: model, stages, microbatches,
// batch, optimizer, `scheduleRow` (a plan row such as "pipemare+T2"), unit granularity, its
// partition (explicit boundaries, or FLOPs standing in for a measured "time" partition), a
// language model's context, update interval / m, and a pipemare warm-up's share. Not the timing
// model, --json or --trace. Missing sections read as the planner's defaults.
QStringList plannerDesignArgs(const nlohmann::json& experiment, const QString& scheduleRow);

}  // namespace pm::ui
