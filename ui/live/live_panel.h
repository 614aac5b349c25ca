#pragma once
// Several live runs at once, one tab each. GUI thread only.
#include <QWidget>
#include <vector>

class QTabWidget;

namespace pm::ui {

class LiveRunView;

class LivePanel : public QWidget {
  Q_OBJECT
 public:
  LivePanel(const QString& pipemareBinary, const QString& dbPath, QWidget* parent = nullptr);
  LiveRunView* startRun(const QString& experimentFile, const QString& title);
  int activeRuns() const;
  void stopAll();
  void detachAll();  // leave the runs going when the GUI closes
  LiveRunView* current() const;

 Q_SIGNALS:
  void runFinished(const QString& status);

 private:
  QString binary_, db_;
  QTabWidget* tabs_;
  std::vector<LiveRunView*> views_;
};

}  // namespace pm::ui
