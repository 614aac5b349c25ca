#pragma once
// The workbench's main window. For now: the runs browser over the run store. GUI thread only.
#include <QMainWindow>
#include <string>

namespace pm::ui {

class RunsBrowser;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const std::string& dbPath, QWidget* parent = nullptr);
  RunsBrowser* runsBrowser() const { return runs_; }

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  RunsBrowser* runs_;
};

}  // namespace pm::ui
