#pragma once
// The planner panel: what the planner predicts for the experiment being designed, before anything
// runs: utilization, bubble, the slowest stage, delay and versions of every schedule side by side,
// and for the selected row its per-stage memory as stacked bars (weights, gradients, optimizer,
// stash, delta, activations) and its predicted timeline as a Gantt chart. Every figure uses the
// design's own partition: each stage's time from its FLOPs, the times the timelines run with, so
// a row's utilization is its timeline's busy share. It asks the engine (`pipemare plan
// --experiment FILE --json --trace FILE --trace-dir DIR` on the design written to a temporary
// file: a timeline per schedule) in a child process, debounced, so the GUI never blocks; the
// engine maps the design to the planner's inputs. GUI thread only.
#include <QWidget>
#include <vector>
#include <nlohmann/json.hpp>

class QComboBox;
class QLabel;
class QProcess;
class QTableWidget;
class QTimer;
class QTemporaryDir;

namespace pm::ui {

class GanttPlot;
struct GanttBox;
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
  // The busy share of the timeline shown: the F, B and S boxes' time over stages x its span.
  double ganttBusyShare() const;
  QString ganttTitle() const { return ganttTitle_; }
  QString memoryTitle() const { return memoryTitle_; }
  QString statusText() const;
  // The plan row selected: first the design's own, as the planner names it (its schedule,
  // "pipemare+T2" with T2 on, "gpipe+recompute" with recompute); "" before the first plan.
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
  void planFinished(int code, bool crashed);
  void showFailure(const QString& message);
  void clearPlan(const QString& statusHtml);
  void showPlan();
  // The row's memory bars and timeline (its trace from --trace-dir).
  void showSchedule(const QString& schedule);
  void setGantt(const QString& title, const std::vector<GanttBox>& boxes, int stages);
  void setMemoryTitle(const QString& title);
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
  QString shownSchedule_;  // the design's row, as the latest plan's trace names it
  QString ganttTitle_, memoryTitle_;
  double ganttBusy_ = 0;  // busy share of the boxes shown
};

}  // namespace pm::ui
