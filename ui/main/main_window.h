#pragma once
// The workbench's main window: Design (experiment designer beside the planner's predictions),
// Live (runs in progress, one tab each), Runs (the store), Sweeps (a sweep's final metric as a
// heat map), Compare, Timeline (a run's measured schedule beside the planner's prediction); the
// menus File, Edit (undo of design edits), Run, View (the tabs by keyboard) and Help (shortcuts,
// documentation, About).
// GUI thread only. The window owns the process's one connection to the run store (a StoreWatcher)
// and hands it to every view: none opens the store itself.
#include <QMainWindow>
#include <cstdint>
#include <string>

class QTabWidget;

namespace pm::ui {

class RunsBrowser;
class CompareView;
class DesignerView;
class LivePanel;
class PlannerPanel;
class StoreWatcher;
class SweepsView;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // presetDir: the experiments/ folder; pipemareBinary: the engine executable ("" = next to this one).
  explicit MainWindow(const std::string& dbPath, const QString& presetDir = {}, const QString& pipemareBinary = {},
                      QWidget* parent = nullptr);
  DesignerView* designer() const { return designer_; }
  LivePanel* livePanel() const { return live_; }
  PlannerPanel* plannerPanel() const { return planner_; }
  // Starts the experiment (JSON text) as a live run; returns false with a message box on failure.
  bool startRun(const QString& experimentJson, const QString& name);
  RunsBrowser* runsBrowser() const { return runs_; }
  CompareView* compareView() const { return compare_; }
  SweepsView* sweepsView() const { return sweeps_; }
  TimelineView* timelineView() const { return timeline_; }
  StoreWatcher* storeWatcher() const { return watcher_; }
  // Selects the run in the Runs tab and shows its trace in the Timeline tab (when it has one);
  // switches to the Runs tab when `show`. False when the store has no such run.
  bool openRun(int64_t runId, bool show = true);
  // Shows the tab whose title (without '&') matches `name`, case-insensitively. False if none.
  bool selectTab(const QString& name);
  // Lays these stored runs side by side in the Compare tab, plotting `metric` ("KEY,SECOND": a
  // second metric on the right axis; empty: the view's
  // default). Returns what is wrong (a run not in the store, a metric none of them recorded),
  // empty when all is well.
  QString compareRuns(const std::vector<int64_t>& runIds, const QString& metric);

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  QTabWidget* buildTabs(const QString& presetDir, const QString& binary);
  // The menus, in the menu bar's order: File, Edit, Run, View, Help.
  void buildFileMenu(QTabWidget* tabs);
  void buildEditMenu();
  void buildRunMenu();
  void buildViewMenu(QTabWidget* tabs);
  void buildHelpMenu(const QString& binary);
  void showShortcuts();
  void openDocumentation();
  void restoreSettings(const QString& presetDir);

  StoreWatcher* watcher_;  // made first (the views read through it), destroyed after them
  RunsBrowser* runs_;
  CompareView* compare_ = nullptr;
  DesignerView* designer_ = nullptr;
  LivePanel* live_ = nullptr;
  PlannerPanel* planner_ = nullptr;
  SweepsView* sweeps_ = nullptr;
  TimelineView* timeline_ = nullptr;
  QString dbPath_;
  bool askOnClose_ = true;

 public:
  // What closing does while runs are active ("stop" | "leave"), instead of asking (a signal, tests);
  // such a close does not ask about unsaved design edits either.
  void setCloseAnswer(const QString& answer) { closeAnswer_ = answer; }

 private:
  QString closeAnswer_;
};

}  // namespace pm::ui
