#pragma once
// Several live runs at once, one tab each. GUI thread only.
#include <QWidget>
#include <cstdint>
#include <vector>

class QTabWidget;

namespace pm::ui {

class LiveRunView;
class StoreWatcher;

class LivePanel : public QWidget {
  Q_OBJECT
 public:
  LivePanel(const QString& pipemareBinary, const QString& dbPath, QWidget* parent = nullptr);
  LiveRunView* startRun(const QString& experimentFile, const QString& title);
  // Continues a stored run from its latest checkpoint (`pipemare run --resume runId --db STORE`)
  // in a new tab titled `title`; the engine refuses a run that is not stopped, failed or
  // interrupted, or has no checkpoint, and the tab's log says why.
  LiveRunView* resumeRun(int64_t runId, const QString& title);
  // Runs in progress, with those whose tab was closed while they go on (they end off screen).
  int activeRuns() const;
  void stopAll();
  void detachAll();  // leave the runs going when the GUI closes
  LiveRunView* current() const;
  QTabWidget* tabWidget() const { return tabs_; }  // one tab per run shown
  // The process's store connection, handed to the runs started from now on: when one ends, dead
  // runs are marked and every view refreshed (RunProcess::setStoreWatcher). Must outlive the panel.
  void setStoreWatcher(StoreWatcher* watcher) { watcher_ = watcher; }

 Q_SIGNALS:
  void runFinished(const QString& status);
  // A tab's Resume (LiveRunView::resumeRequested), passed on: MainWindow resumes the run as the
  // Runs tab's Resume does, in a new tab here.
  void resumeRequested(int64_t runId, const QString& name);

 private:
  LiveRunView* addView(const QString& title);  // a new tab, current, for a run about to start
  // A tab's close button: a run that has ended closes at once; a run in progress asks, as closing
  // the window does, whether to stop it or leave it running (or cancel).
  void closeTab(int index);
  // Takes the view's tab away; the view goes now when its run has ended, else when it ends.
  void retire(LiveRunView* view);
  QString binary_, db_;
  StoreWatcher* watcher_ = nullptr;
  QTabWidget* tabs_;
  std::vector<LiveRunView*> views_;  // every view not yet deleted, with a tab or retired
};

}  // namespace pm::ui
