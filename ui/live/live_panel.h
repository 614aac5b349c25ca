#pragma once
// Several live runs at once, one tab each. GUI thread only.
#include <QWidget>
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
  int activeRuns() const;
  void stopAll();
  void detachAll();  // leave the runs going when the GUI closes
  LiveRunView* current() const;
  // The process's store connection, handed to the runs started from now on: when one ends, dead
  // runs are marked and every view refreshed (RunProcess::setStoreWatcher). Must outlive the panel.
  void setStoreWatcher(StoreWatcher* watcher) { watcher_ = watcher; }

 Q_SIGNALS:
  void runFinished(const QString& status);

 private:
  QString binary_, db_;
  StoreWatcher* watcher_ = nullptr;
  QTabWidget* tabs_;
  std::vector<LiveRunView*> views_;
};

}  // namespace pm::ui
