#include "ui/main/main_window.h"

#include <algorithm>

#include <QAction>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QLabel>
#include <QFile>
#include <QMessageBox>
#include <QVBoxLayout>
#include <QHBoxLayout>
#include <QTextBrowser>
#include <QDialog>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QStringList>
#include <QUrl>

#include "core/util/paths.h"
#include "ui/compare/compare_view.h"
#include "ui/main/about_box.h"
#include "ui/designer/designer_view.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_view.h"
#include "ui/live/run_process.h"
#include "ui/planner/planner_panel.h"
#include "ui/runs/runs_browser.h"
#include "ui/store/store_watcher.h"
#include "ui/sweeps/sweeps_view.h"
#include "ui/timeline/timeline_view.h"

namespace pm::ui {

namespace {

// A menu entry's text as the user reads it (without the '&' of its mnemonic).
QString plainText(const QAction* a) { return QString(a->text()).remove(QLatin1Char('&')); }

// The documentation's front page, README.md (it links docs/): in the source checkout, for a
// workbench run from the build tree, or in the installation's share/doc/pipemare beside the
// presets' share/pipemare. Empty when neither has it.
QString documentationFile() {
  const QString data = QString::fromStdString(pipemareDataDir());
  const QStringList candidates{data + QStringLiteral("/README.md"), data + QStringLiteral("/../doc/pipemare/README.md")};
  for (const QString& candidate : candidates)
    if (QFileInfo(candidate).isFile()) return QFileInfo(candidate).canonicalFilePath();
  return {};
}

}  // namespace

MainWindow::MainWindow(const std::string& dbPath, const QString& presetDir, const QString& pipemareBinary, QWidget* parent)
    : QMainWindow(parent),
      watcher_(new StoreWatcher(dbPath)),  // parented at the end of the constructor
      runs_(new RunsBrowser(watcher_, this)),
      dbPath_(QString::fromStdString(dbPath)) {
  // [*]: Qt shows "*" there while the window is modified (the design has unsaved edits).
  setWindowTitle(tr("PipeMare Workbench[*]"));
  setWindowIcon(workbenchIcon());  // the title bar's icon (compiled in: ui/main/about_box.cpp)
  const QString binary = pipemareBinary.isEmpty() ? defaultPipemareBinary() : pipemareBinary;
  QTabWidget* tabs = buildTabs(presetDir, binary);
  setCentralWidget(tabs);

  buildFileMenu(tabs);
  buildEditMenu();
  buildRunMenu();
  buildViewMenu(tabs);
  buildHelpMenu(binary);
  // A permanent widget, which a timed message ("no schedule trace") does not hide.
  auto* storeLabel = new QLabel(tr("Store: %1").arg(QString::fromStdString(dbPath)), this);
  storeLabel->setObjectName(QStringLiteral("storeLabel"));
  storeLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  statusBar()->addPermanentWidget(storeLabel);
  restoreSettings(presetDir);
  // The window's last child, so destroyed after the views that read through it.
  watcher_->setParent(this);
}

// The tabs: Design (designer beside the planner), Live, Runs, Sweeps, Compare and Timeline.
QTabWidget* MainWindow::buildTabs(const QString& presetDir, const QString& binary) {
  auto* tabs = new QTabWidget(this);
  designer_ = new DesignerView(presetDir, this);
  designer_->setEngineBinary(binary);
  planner_ = new PlannerPanel(binary, this);
  auto* design = new QSplitter(Qt::Horizontal, this);
  design->addWidget(designer_);
  design->addWidget(planner_);
  design->setStretchFactor(0, 2);
  design->setStretchFactor(1, 3);
  const int designTab = tabs->addTab(design, tr("Design"));
  // The window title names the open design's file ("new design" for none), as desktop programs do.
  const auto nameFile = [this](const QString& file) {
    setWindowTitle(tr("%1[*] - PipeMare Workbench").arg(file.isEmpty() ? tr("new design") : QFileInfo(file).fileName()));
  };
  connect(designer_, &DesignerView::fileChanged, this, nameFile);
  nameFile(designer_->currentFile());
  // Unsaved edits of the design: "*" in the window title and on the Design tab.
  connect(designer_, &DesignerView::modifiedChanged, this, [this, tabs, designTab](bool modified) {
    setWindowModified(modified);
    tabs->setTabText(designTab, modified ? tr("Design *") : tr("Design"));
  });
  live_ = new LivePanel(binary, dbPath_, this);
  live_->setStoreWatcher(watcher_);  // a run that ends marks dead runs and refreshes every view
  tabs->addTab(live_, tr("Live"));
  tabs->addTab(runs_, tr("Runs"));
  // Resume, from the Runs tab's context menu or a stopped run's Live tab: the run continues from
  // its checkpoint in a new Live tab.
  const auto resume = [this, tabs](int64_t id, const QString& name) {
    live_->resumeRun(id, tr("%1 (resumed)").arg(name.isEmpty() ? tr("run %1").arg(id) : name));
    tabs->setCurrentWidget(live_);
  };
  connect(runs_, &RunsBrowser::resumeRequested, this, resume);
  connect(live_, &LivePanel::resumeRequested, this, resume);
  connect(designer_, &DesignerView::validityChanged, this, [this](bool valid) {
    QString note;
    if (valid)
      planner_->setExperiment(designer_->runnableJson());
    else if (const nlohmann::json despite = designer_->plannableDespiteInvalid(&note); despite.is_object())
      planner_->setExperiment(despite, note);  // a field one schedule uses does not blank every row
    else
      planner_->setInvalid(designer_->validationMessage());
  });
  connect(designer_, &DesignerView::runRequested, this, [this, tabs](const QString& json, const QString& name) {
    if (startRun(json, name)) tabs->setCurrentWidget(live_);
  });
  sweeps_ = new SweepsView(watcher_, this);
  tabs->addTab(sweeps_, tr("Sweeps"));
  connect(sweeps_, &SweepsView::openRun, this, [this](int64_t id) { openRun(id); });
  compare_ = new CompareView(watcher_, this);
  tabs->addTab(compare_, tr("Compare"));
  timeline_ = new TimelineView(watcher_, binary, this);
  tabs->addTab(timeline_, tr("Timeline"));
  return tabs;
}

void MainWindow::buildRunMenu() {
  auto* runMenu = menuBar()->addMenu(tr("&Run"));
  auto* runAction = runMenu->addAction(tr("&Run the designed experiment"));
  runAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  connect(runAction, &QAction::triggered, designer_, &DesignerView::requestRun);
  auto* stopAction = runMenu->addAction(tr("&Stop the current live run"));
  stopAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  connect(stopAction, &QAction::triggered, this, [this] {
    if (auto* v = live_->current()) v->stop();
  });
}

void MainWindow::buildFileMenu(QTabWidget* tabs) {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open experiment..."));
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, designer_, &DesignerView::openDialog);
  // The design files last opened or saved, listed afresh each time the submenu opens.
  auto* recent = file->addMenu(tr("Open Recent"));
  recent->setObjectName(QStringLiteral("openRecentMenu"));
  connect(recent, &QMenu::aboutToShow, this, [this, recent] {
    recent->clear();
    const QStringList files = designer_->recentFiles();
    for (const QString& path : files) {
      QAction* entry = recent->addAction(QString(path).replace(QLatin1Char('&'), QStringLiteral("&&")));
      connect(entry, &QAction::triggered, designer_, [this, path] { designer_->openRecent(path); });
    }
    if (files.isEmpty()) recent->addAction(tr("(no recent files)"))->setEnabled(false);
    recent->addSeparator();
    QAction* clear = recent->addAction(tr("Clear Recent"));
    clear->setEnabled(!files.isEmpty());
    connect(clear, &QAction::triggered, designer_, &DesignerView::clearRecentFiles);
  });
  auto* save = file->addAction(tr("S&ave experiment"));
  save->setObjectName(QStringLiteral("saveAction"));
  save->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));  // Save as... has the platform's own (Ctrl+Shift+S)
  connect(save, &QAction::triggered, designer_, &DesignerView::save);
  auto* saveAs = file->addAction(tr("&Save experiment as..."));
  // The platform's Save As (on some X11 and Wayland sessions Qt has none for it) and Ctrl+Shift+S,
  // which the README promises, whatever the platform says.
  saveAs->setObjectName(QStringLiteral("saveAsAction"));
  QList<QKeySequence> saveAsKeys = QKeySequence::keyBindings(QKeySequence::SaveAs);
  if (!saveAsKeys.contains(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S))) saveAsKeys << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S);
  saveAs->setShortcuts(saveAsKeys);
  connect(saveAs, &QAction::triggered, designer_, &DesignerView::saveAsDialog);
  auto* refresh = file->addAction(tr("&Refresh runs"));
  refresh->setShortcut(QKeySequence(Qt::Key_F5));  // not QKeySequence::Refresh: Ctrl+R on GNOME, which is Run
  // Every view re-reads (through the watcher's runsChanged); runs whose launcher died since are
  // marked interrupted first, as when the workbench starts.
  connect(refresh, &QAction::triggered, this, [this] {
    watcher_->markDeadRunsInterrupted();
    watcher_->refresh();
  });
  // Ctrl+K: lay the runs selected in the runs browser side by side in the Compare tab.
  auto* compareSelected = file->addAction(tr("&Compare selected runs"));
  compareSelected->setObjectName(QStringLiteral("compareSelectedAction"));
  compareSelected->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
  connect(compareSelected, &QAction::triggered, this, [this, tabs] {
    const auto ids = runs_->selectedRunIds();
    if (!ids.empty()) compare_->setSelectedRuns(ids);
    tabs->setCurrentWidget(compare_);
  });
  // Ctrl+T: the measured and predicted timeline of the run selected in the runs browser.
  auto* timelineSelected = file->addAction(tr("Show the &timeline of the selected run"));
  timelineSelected->setObjectName(QStringLiteral("timelineSelectedAction"));
  timelineSelected->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
  connect(timelineSelected, &QAction::triggered, this, [this, tabs] {
    const auto ids = runs_->selectedRunIds();
    if (!ids.empty() && !timeline_->setRun(ids.front()))
      statusBar()->showMessage(tr("Run %1 has no schedule trace").arg(ids.front()), 5000);
    tabs->setCurrentWidget(timeline_);
  });
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));  // QKeySequence::Quit is empty on some platforms (offscreen)
  connect(quit, &QAction::triggered, this, &QWidget::close);
}

// Edit: undo and redo of the design's field edits (the Design tab's; disabled in the other tabs).
void MainWindow::buildEditMenu() {
  auto* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(designer_->undoAction());
  edit->addAction(designer_->redoAction());
}

// View: each tab by Ctrl+1 .. Ctrl+6 (in the tabs' order), the next and previous tab by Ctrl+Tab
// and Ctrl+Shift+Tab (wrapping around).
void MainWindow::buildViewMenu(QTabWidget* tabs) {
  auto* view = menuBar()->addMenu(tr("&View"));
  for (int i = 0; i < tabs->count() && i < 9; ++i) {
    auto* showTab = view->addAction(QStringLiteral("&") + tabs->tabText(i));
    showTab->setObjectName(QStringLiteral("showTab%1Action").arg(i + 1));
    showTab->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    connect(showTab, &QAction::triggered, tabs, [tabs, i] { tabs->setCurrentIndex(i); });
  }
  view->addSeparator();
  auto* next = view->addAction(tr("&Next tab"));
  next->setObjectName(QStringLiteral("nextTabAction"));
  next->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Tab));
  connect(next, &QAction::triggered, tabs, [tabs] { tabs->setCurrentIndex((tabs->currentIndex() + 1) % tabs->count()); });
  auto* previous = view->addAction(tr("&Previous tab"));
  previous->setObjectName(QStringLiteral("previousTabAction"));
  // Shift+Tab arrives as Backtab; Qt's shortcut map also tries it as Shift+Tab.
  previous->setShortcut(QKeySequence(QKeyCombination(Qt::ControlModifier | Qt::ShiftModifier, Qt::Key_Tab)));
  connect(previous, &QAction::triggered, tabs,
          [tabs] { tabs->setCurrentIndex((tabs->currentIndex() + tabs->count() - 1) % tabs->count()); });
}

// Help: the keyboard shortcuts, the documentation, and About (the icon, the version, and the BLAS
// library the engine loads: it asks `pipemare version`, since the workbench does not load LibTorch).
void MainWindow::buildHelpMenu(const QString& binary) {
  auto* help = menuBar()->addMenu(tr("&Help"));
  auto* keys = help->addAction(tr("&Keyboard shortcuts"));
  keys->setObjectName(QStringLiteral("shortcutsAction"));
  keys->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
  connect(keys, &QAction::triggered, this, &MainWindow::showShortcuts);
  auto* docs = help->addAction(tr("&Documentation"));
  docs->setObjectName(QStringLiteral("documentationAction"));
  docs->setShortcut(QKeySequence(Qt::Key_F1));
  connect(docs, &QAction::triggered, this, &MainWindow::openDocumentation);
  help->addSeparator();
  auto* about = help->addAction(tr("&About PipeMare Workbench"));
  about->setObjectName(QStringLiteral("aboutAction"));
  connect(about, &QAction::triggered, this, [this, binary] { showAboutBox(this, binary); });
}

// Every menu entry that has a shortcut, read from the menus themselves (so the list cannot fall
// behind them), and the Design tab's rule for the mouse wheel.
void MainWindow::showShortcuts() {
  QString rows;
  // The menu bar's menus, in the order they were added (its order).
  for (const QMenu* menu : menuBar()->findChildren<QMenu*>(QString(), Qt::FindDirectChildrenOnly)) {
    const QString menuName = QString(menu->title()).remove(QLatin1Char('&'));
    for (QAction* a : menu->actions()) {
      if (a->shortcuts().isEmpty()) continue;
      QStringList keys;
      for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText).toHtmlEscaped();
      rows += QStringLiteral("<tr><td><b>%1</b></td><td>%2 &gt; %3</td></tr>")
                  .arg(keys.join(QStringLiteral(", ")), menuName.toHtmlEscaped(), plainText(a).toHtmlEscaped());
    }
  }
  QMessageBox box(QMessageBox::NoIcon, tr("Keyboard shortcuts"), QString(), QMessageBox::Ok, this);
  box.setObjectName(QStringLiteral("shortcutsBox"));
  box.setTextFormat(Qt::RichText);
  box.setText(QStringLiteral("<table cellspacing='6'>%1</table>").arg(rows) +
              tr("<p>In the Design tab, the mouse wheel changes a spin box or drop-down only while it has the "
                 "keyboard focus (click it, or Tab to it); elsewhere the wheel scrolls the form.</p>"));
  box.exec();
}

// README.md in a window of the workbench's own (the desktop may have no viewer for Markdown: F1
// then said "No program could open README.md"), its links to docs/ followed there; a button opens
// it in the desktop's viewer where there is one. A message says where it was looked for when it
// is not installed.
void MainWindow::openDocumentation() {
  const QString file = documentationFile();
  if (file.isEmpty()) {
    const QString data = QString::fromStdString(pipemareDataDir());
    QMessageBox::information(this, tr("Documentation"),
                             tr("The documentation is not installed: there is no README.md in %1 or in %2.")
                                 .arg(data, QDir::cleanPath(data + QStringLiteral("/../doc/pipemare"))));
    return;
  }
  auto* viewer = findChild<QDialog*>(QStringLiteral("documentationViewer"));
  if (!viewer) {
    viewer = new QDialog(this);
    viewer->setObjectName(QStringLiteral("documentationViewer"));
    viewer->setWindowTitle(tr("PipeMare Workbench documentation"));
    viewer->resize(900, 700);
    auto* browser = new QTextBrowser(viewer);
    browser->setObjectName(QStringLiteral("documentationBrowser"));
    browser->setOpenLinks(true);
    browser->setOpenExternalLinks(true);  // web links in the desktop's browser
    auto* external = new QPushButton(tr("Open in the desktop's viewer"), viewer);
    connect(external, &QPushButton::clicked, viewer, [browser] { QDesktopServices::openUrl(browser->source()); });
    auto* close = new QPushButton(tr("Close"), viewer);
    connect(close, &QPushButton::clicked, viewer, &QDialog::close);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(external);
    buttons->addStretch(1);
    buttons->addWidget(close);
    auto* layout = new QVBoxLayout(viewer);
    layout->addWidget(browser, 1);
    layout->addLayout(buttons);
  }
  viewer->findChild<QTextBrowser*>(QStringLiteral("documentationBrowser"))
      ->setSource(QUrl::fromLocalFile(file), QTextDocument::MarkdownResource);
  viewer->show();
  viewer->raise();
  viewer->activateWindow();
}

// The designer's last file (else the quickstart preset) and the saved preferences.
void MainWindow::restoreSettings(const QString& presetDir) {
  QSettings settings;
  if (!restoreGeometry(settings.value("main/geometry").toByteArray())) resize(1400, 860);
  const QString last = settings.value("designer/lastFile").toString();
  if (!last.isEmpty() && QFile::exists(last)) designer_->loadFile(last);
  else if (!presetDir.isEmpty() && QFile::exists(presetDir + "/quickstart.json")) designer_->loadFile(presetDir + "/quickstart.json");
  if (designer_->valid()) planner_->setExperiment(designer_->runnableJson());
  // Preferences: the Compare view's x axis, smoothing and accuracy target, and the last tab.
  // (absent keys keep the view's own defaults)
  compare_->setXAxis(static_cast<XAxis>(settings.value("compare/xAxis", static_cast<int>(compare_->xAxis())).toInt()));
  compare_->setSmoothing(settings.value("compare/smoothing", compare_->smoothing()).toDouble());
  compare_->setAccuracyTarget(settings.value("compare/accuracyTarget", compare_->accuracyTarget()).toDouble());
  if (auto* tabs = findChild<QTabWidget*>()) tabs->setCurrentIndex(settings.value("main/tab", 0).toInt());
}

bool MainWindow::startRun(const QString& experimentJson, const QString& name) {
  // The experiment the run used is kept as a file in PipeMare's data directory
  // ($XDG_DATA_HOME/pipemare/run-experiments; experiments/ beside it holds the user's own presets,
  // which the designer lists); the run's record holds the configuration too.
  const QString dir = QString::fromStdString(dataHomeDir()) + "/run-experiments";
  QDir().mkpath(dir);
  const QString file = dir + "/" + QString(name).replace(QRegularExpression("[^A-Za-z0-9_.-]"), "_") + "-" +
                       QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz") + ".json";
  QFile f(file);
  if (!f.open(QIODevice::WriteOnly) || f.write(experimentJson.toUtf8()) < 0) {
    QMessageBox::warning(this, tr("Run"), tr("Cannot write %1: %2").arg(file, f.errorString()));
    return false;
  }
  f.close();
  live_->startRun(file, name);
  return true;
}

bool MainWindow::openRun(int64_t runId, bool show) {
  if (!runs_->selectRun(runId)) {
    statusBar()->showMessage(tr("No run %1 in the store").arg(runId), 5000);
    return false;
  }
  timeline_->setRun(runId);
  if (show)
    if (auto* tabs = qobject_cast<QTabWidget*>(centralWidget())) tabs->setCurrentWidget(runs_);
  return true;
}

QString MainWindow::compareRuns(const std::vector<int64_t>& runIds, const QString& metric) {
  compare_->setSelectedRuns(runIds);
  if (!compare_->lastError().empty()) return tr("--compare: %1").arg(QString::fromStdString(compare_->lastError()));
  const auto shown = compare_->selectedRuns();
  QStringList missing;
  for (int64_t id : runIds)
    if (std::find(shown.begin(), shown.end(), id) == shown.end() && !missing.contains(QString::number(id)))
      missing << QString::number(id);
  if (!missing.isEmpty())
    return tr("--compare: no run %1 in the store %2").arg(missing.join(", "), dbPath_);
  // "KEY" or "KEY,SECOND": the second on the right axis of the same panel.
  const QStringList keys = metric.split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (keys.size() > 2) return tr("--metric: at most two metrics, KEY or KEY,SECOND (found '%1')").arg(metric);
  for (int i = 0; i < keys.size(); ++i)
    if (!(i == 0 ? compare_->setMetric(keys[i]) : compare_->setSecondMetric(keys[i])))
      return tr("--metric: none of the compared runs recorded '%1' (they have: %2)").arg(keys[i], compare_->availableMetrics().join(", "));
  return {};
}

bool MainWindow::selectTab(const QString& name) {
  auto* tabs = qobject_cast<QTabWidget*>(centralWidget());
  if (!tabs) return false;
  for (int i = 0; i < tabs->count(); ++i) {
    QString title = tabs->tabText(i).remove(QLatin1Char('&'));
    if (title.endsWith(QStringLiteral(" *"))) title.chop(2);  // the Design tab's mark of unsaved edits
    if (title.compare(name, Qt::CaseInsensitive) == 0) {
      tabs->setCurrentIndex(i);
      return true;
    }
  }
  return false;
}

void MainWindow::closeEvent(QCloseEvent* e) {
  // Cancel keeps the design's unsaved edits and the window. A close that is answered in advance
  // (a signal: setCloseAnswer) asks nothing, as nobody may be there to answer.
  if (closeAnswer_.isEmpty() && !designer_->confirmClose()) {
    e->ignore();
    return;
  }
  if (live_->activeRuns() > 0) {
    QString answer = closeAnswer_;
    if (answer.isEmpty()) {
      QMessageBox box(QMessageBox::Question, tr("Runs in progress"),
                      tr("%1 run(s) are still in progress. Stop them, or leave them running? Runs left running keep "
                         "recording into the store and show in the Runs tab next time.").arg(live_->activeRuns()),
                      QMessageBox::NoButton, this);
      auto* stop = box.addButton(tr("Stop them"), QMessageBox::DestructiveRole);
      auto* leave = box.addButton(tr("Leave running"), QMessageBox::AcceptRole);
      box.addButton(QMessageBox::Cancel);
      box.exec();
      QAbstractButton* clicked = box.clickedButton();
      answer = clicked == static_cast<QAbstractButton*>(stop) ? "stop" : clicked == static_cast<QAbstractButton*>(leave) ? "leave" : "";
    }
    if (answer == "stop") {
      live_->stopAll();
    } else if (answer == "leave") {
      live_->detachAll();
    } else {
      e->ignore();
      return;
    }
  }
  QSettings settings;
  settings.setValue("main/geometry", saveGeometry());
  if (!designer_->currentFile().isEmpty()) settings.setValue("designer/lastFile", designer_->currentFile());
  settings.setValue("compare/xAxis", static_cast<int>(compare_->xAxis()));
  settings.setValue("compare/smoothing", compare_->smoothing());
  settings.setValue("compare/accuracyTarget", compare_->accuracyTarget());
  if (auto* tabs = findChild<QTabWidget*>()) settings.setValue("main/tab", tabs->currentIndex());
  e->accept();
}

}  // namespace pm::ui
