#include "ui/main/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QKeySequence>
#include <QMenuBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include "ui/runs/runs_browser.h"

namespace pm::ui {

MainWindow::MainWindow(const std::string& dbPath, QWidget* parent) : QMainWindow(parent), runs_(new RunsBrowser(dbPath, this)) {
  setWindowTitle(tr("PipeMare Workbench"));
  auto* tabs = new QTabWidget(this);
  tabs->addTab(runs_, tr("Runs"));
  setCentralWidget(tabs);

  auto* file = menuBar()->addMenu(tr("&File"));
  auto* refresh = file->addAction(tr("&Refresh runs"));
  refresh->setShortcut(QKeySequence::Refresh);
  connect(refresh, &QAction::triggered, runs_, &RunsBrowser::refresh);
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
  statusBar()->showMessage(tr("Store: %1").arg(QString::fromStdString(dbPath)));

  QSettings settings;
  if (!restoreGeometry(settings.value("main/geometry").toByteArray())) resize(1280, 760);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings settings;
  settings.setValue("main/geometry", saveGeometry());
  e->accept();
}

}  // namespace pm::ui
