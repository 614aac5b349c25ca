#pragma once
// The planner panel: what the planner predicts for the experiment being designed, before anything
// runs: utilization, bubble, the slowest stage, delay and versions of every schedule side by side,
// and for the selected row its per-stage memory as stacked bars (weights, gradients, optimizer,
// stash, delta, activations) and its predicted timeline as a Gantt chart. Every figure uses the
// design's own partition: each stage's time from its FLOPs, the times the timelines run with, so
// a row's utilization is its timeline's busy share. It asks the engine (`pipemare plan
// --experiment FILE --json --trace FILE --trace-dir DIR` on the design written to a temporary
// file: a timeline per schedule) in a child process, debounced, so the GUI never blocks; the
// engine maps the design to the planner's inputs. Beside it, on request (its button), the
// predicted stability edge of the design's schedule: the largest stable base learning rate and
// the stage that breaks first (`pipemare plan --stability FILE --json`, seconds to minutes, in a
// second child process that the button cancels), set against the design's optimizer.lr as that
// is edited. Both children speak in events (PlanProcess). The stability edge's part is in
// planner_stability.cpp. GUI thread only.
#include <QWidget>
#include <vector>
#include <nlohmann/json.hpp>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTableWidget;
class QTimer;
class QTemporaryDir;

namespace pm::ui {

class GanttPlot;
struct GanttBox;
class PlanProcess;
class StackedBarsPlot;

class PlannerPanel : public QWidget {
  Q_OBJECT
 public:
  PlannerPanel(const QString& pipemareBinary, QWidget* parent = nullptr);
  ~PlannerPanel() override;

  // Re-plan for this experiment (normalised experiment JSON); debounced.
  // `note`: said first under the plan (a design planned with a field at its default).
  void setExperiment(const nlohmann::json& experiment, const QString& note = QString());
  // The design does not validate: clear the plan (it described another design) and say why.
  void setInvalid(const QString& reason);
  const nlohmann::json& plan() const { return plan_; }
  int rowCount() const;
  size_t ganttBoxes() const;
  // The busy share of the timeline shown: the F, B and S boxes' time over stages x its span.
  double ganttBusyShare() const;
  QString ganttTitle() const { return ganttTitle_; }
  double ganttMakespanMs() const;  // the span of the timeline shown
  QString memoryTitle() const { return memoryTitle_; }
  QString statusText() const;
  // The plan row selected: first the design's own, as the planner names it (its schedule,
  // "pipemare+T2" with T2 on, "gpipe+recompute" with recompute); "" before the first plan.
  QString selectedSchedule() const;
  // The timing model the planner uses: "1f1b" | "paper". It follows the experiment's
  // pipeline.timing whenever that changes; in between the user may pick the other.
  QString timingModel() const;
  void setTimingModel(const QString& timing);

  // The stability prediction last finished (`plan --stability --json`), null before the first or
  // after a failure. It holds for the design it was made for whatever that design's lr:
  // stabilityCurrent() tells whether the design shown is still that design.
  const nlohmann::json& stability() const { return stability_; }
  bool stabilityCurrent() const;
  // The edge, the verdict on the design's lr, or the progress, error or "predict again" shown.
  QString stabilityText() const;
  bool stabilityRunning() const;
  // The button's click: starts the prediction for the design shown, or cancels the one running.
  void toggleStability();
  // What the prediction is keyed on: the design without its name, notes and tags, and without
  // optimizer.lr unless a pipemare warm-up (trained at that lr) precedes the estimate; with the
  // planner's timing model.
  static std::string stabilityKey(const nlohmann::json& experiment, const QString& timing);
  // The memory bars and the timeline: side by side where the panel is wide enough for both,
  // else one above the other (Qt::Horizontal | Qt::Vertical).
  Qt::Orientation plotsOrientation() const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 Q_SIGNALS:
  void planned();
  // The planner could not give a plan (it failed, crashed or could not start); the panel is cleared.
  void failed();
  // The stability prediction finished with a result (stability() is set) or failed (the reason shown).
  void stabilityPredicted();
  void stabilityFailed();

 private:
  void runPlanner();
  void planFinished();
  void showFailure(const QString& message);
  void clearPlan(const QString& statusHtml);
  void showPlan();
  void fitTableHeight();
  // The row's memory bars and timeline (its trace from --trace-dir).
  void showSchedule(const QString& schedule);
  // stageRanks: the rank of each stage where ranks hold several (a row per rank), else empty.
  void setGantt(const QString& title, const std::vector<GanttBox>& boxes, int stages, const std::vector<int>& stageRanks = {});
  void setMemoryTitle(const QString& title);
  void connectStability();
  void runStability();
  void cancelStability();
  void stabilityFinished();
  void stabilityFailedWith(const QString& message);
  // The stability line: the verdict on the design's current lr, the progress, or why there is none.
  void showStability();
  // The line for a finished prediction of the design shown: the verdict on its lr against the
  // probed edge and the analytic bound, then every schedule's edges and what the probe rests on.
  QString stabilityVerdictHtml() const;
  void setStabilityRunning(bool running);
  QString binary_;
  nlohmann::json experiment_, plan_;
  std::string experimentTiming_;  // the experiment's pipeline.timing last seen
  QComboBox* timing_;
  QComboBox* costs_;  // the stage times: from FLOPs, or each unit's passes timed (plan --stage-costs)
  QTableWidget* table_;
  StackedBarsPlot* memory_;
  GanttPlot* gantt_;
  QSplitter* plots_;
  QLabel* status_;
  QTimer* debounce_;
  PlanProcess* proc_;  // plan --experiment
  QTemporaryDir* tmp_;
  QString note_;           // setExperiment's note
  QString shownSchedule_;  // the design's row, as the latest plan's trace names it
  QString ganttTitle_, memoryTitle_;
  double ganttBusy_ = 0;  // busy share of the boxes shown
  QPushButton* stabilityButton_;
  QProgressBar* stabilityBusy_;
  QLabel* stabilityLabel_;
  PlanProcess* stabilityProc_;  // plan --stability
  nlohmann::json stability_;       // the last prediction's JSON
  std::string stabilityKey_;       // the design it is of (stabilityKey)
  std::string runningKey_;         // the design the running prediction is of
  QString stabilityProgress_;      // the running prediction's last progress line
  QString stabilityMessage_;       // a failure or a cancel, shown until the next prediction
  bool stabilityCancelled_ = false;
};

}  // namespace pm::ui
