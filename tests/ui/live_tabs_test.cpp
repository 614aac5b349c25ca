// The Live tab's run tabs closed with their close button (x), and a stopped run resumed from the
// Runs tab's context menu or from its own Live tab, driven as a user does: clicks, the menu's
// entry, the question's button.
#include <gtest/gtest.h>

#include <QAbstractButton>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QRegularExpression>
#include <QTest>
#include <string>

#include "core/store/run_store.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_view.h"
#include "ui/main/main_window.h"
#include "ui/runs/runs_browser.h"
#include "ui/runs/runs_table_model.h"
#include "ui/store/store_watcher.h"

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));
using pm::test::ModalAnswers;
using pm::test::TempDir;

// An mlp on generated data for `steps` steps, written into the folder; its path.
QString writeExperiment(const TempDir& tmp, const std::string& name, int steps, int logInterval) {
  const std::string file = tmp.file(name + ".json");
  pm::test::writeFile(file, R"({"name": ")" + name + R"(", "model": {"name": "mlp"}, "data": {"dataset": "synthetic", "batch_size": 32},
                                 "training": {"steps": )" + std::to_string(steps) + R"(, "log_interval": )" +
                                std::to_string(logInterval) + "}}");
  return QString::fromStdString(file);
}

// The close button (x) of a tab, on whichever side the style puts it; nullptr when it has none.
QAbstractButton* closeButtonOf(QTabWidget* tabs, int index) {
  for (QTabBar::ButtonPosition side : {QTabBar::RightSide, QTabBar::LeftSide})
    if (auto* button = qobject_cast<QAbstractButton*>(tabs->tabBar()->tabButton(index, side))) return button;
  return nullptr;
}

// An answer: in the popup menu, the entry whose text starts with `entry`: whether it is there and
// enabled (kept in *found and *enabled); the menu then closed with Escape.
ModalAnswers::Step readMenuEntry(const QString& entry, bool* found, bool* enabled) {
  return [entry, found, enabled](QWidget* top) {
    auto* menu = qobject_cast<QMenu*>(top);
    if (!menu) return false;
    for (QAction* a : menu->actions())
      if (a->text().startsWith(entry)) {
        *found = true;
        *enabled = a->isEnabled();
      }
    QTest::keyClick(menu, Qt::Key_Escape);
    return true;
  };
}

}  // namespace

// The x of a running run's tab asks, as closing the window does: Cancel keeps the tab and the run;
// "Stop it" closes the tab at once and stops the run, which is recorded as stopped. The x of a
// finished run's tab closes it without a question.
TEST(LivePanel, ClosingARunningRunsTabAsksAndAFinishedRunsTabClosesAtOnce) {
  pm::test::app();
  TempDir tmp;
  const QString db = QString::fromStdString(tmp.file("runs.db"));
  const QString exp = writeExperiment(tmp, "long run", 1000000, 1);
  pm::ui::StoreWatcher watcher(db.toStdString());  // outlives the panel, as the window's does
  pm::ui::LivePanel panel(kPipemare, db);
  panel.setStoreWatcher(&watcher);
  panel.resize(1000, 700);
  ASSERT_TRUE(pm::test::showWindow(&panel));
  QTabWidget* tabs = panel.tabWidget();
  ASSERT_NE(tabs, nullptr);
  QSignalSpy finished(&panel, &pm::ui::LivePanel::runFinished);
  QPointer<pm::ui::LiveRunView> running = panel.startRun(exp, "long run");
  ASSERT_TRUE(QTest::qWaitFor([&] { return running->lossPoints() > 0; }, 60000)) << running->logText().toStdString();
  ASSERT_EQ(tabs->count(), 1);

  QString question;
  {
    ModalAnswers answers({pm::test::pressButton(QMessageBox::Cancel, &question)});
    QAbstractButton* close = closeButtonOf(tabs, 0);
    ASSERT_NE(close, nullptr) << "the run's tab has no close button";
    QTest::mouseClick(close, Qt::LeftButton);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  // The tab's name: the run's, with its id in front once the store has given it one.
  EXPECT_TRUE(question.contains(QRegularExpression("\"(#[0-9]+ )?long run\" is still in progress"))) << question.toStdString();
  EXPECT_EQ(tabs->count(), 1) << "Cancel closed the tab";
  ASSERT_FALSE(running.isNull());
  EXPECT_TRUE(running->running()) << "Cancel stopped the run";
  EXPECT_EQ(panel.activeRuns(), 1);

  {
    ModalAnswers answers({pm::test::pressButtonLabelled("Stop it")});
    QAbstractButton* close = closeButtonOf(tabs, 0);
    ASSERT_NE(close, nullptr);
    QTest::mouseClick(close, Qt::LeftButton);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_EQ(tabs->count(), 0) << "the tab stayed after Stop it";
  ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, 30000)) << "the run did not stop";
  EXPECT_EQ(finished.at(0).at(0).toString().toStdString(), "stopped");
  EXPECT_TRUE(QTest::qWaitFor([&] { return running.isNull(); }, 5000)) << "the closed tab's view was kept";
  EXPECT_EQ(panel.activeRuns(), 0);
  {
    pm::RunStore store(db.toStdString(), /*readOnly=*/true);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, pm::RunStatus::Stopped);
  }

  // A finished run: its x closes the tab with no question (one that came up would be recorded
  // here and closed, so that the test fails instead of waiting for an answer).
  pm::ui::LiveRunView* quick = panel.startRun(kPresets + "/tiny-synthetic.json", "quick run");
  ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 2; }, 120000)) << quick->logText().toStdString();
  EXPECT_EQ(finished.at(1).at(0).toString().toStdString(), "finished") << quick->logText().toStdString();
  ASSERT_EQ(tabs->count(), 1);
  bool asked = false;
  const ModalAnswers::Step noteTheQuestion = [&asked](QWidget*) {
    asked = true;
    ModalAnswers::closeAll();
    return true;
  };
  {
    ModalAnswers guard({noteTheQuestion}, 1000);
    QAbstractButton* close = closeButtonOf(tabs, 0);
    ASSERT_NE(close, nullptr);
    QTest::mouseClick(close, Qt::LeftButton);
  }
  EXPECT_FALSE(asked) << "closing a finished run's tab asked a question";
  EXPECT_EQ(tabs->count(), 0) << "the finished run's tab stayed";
}

// A stopped run resumed from the Runs tab: the context menu's Resume is disabled for a finished
// run and enabled for the stopped one; choosing it shows the Live tab with a new tab, where the
// run continues from its checkpoint into the same record and finishes.
TEST(Workbench, ResumeAStoppedRunFromTheRunsTab) {
  pm::test::app();
  TempDir tmp;
  const std::string db = tmp.file("runs.db");
  int64_t finishedRun = 0;
  {
    pm::RunStore store(db);
    finishedRun = store.createRun("already finished", "{}");
    store.setStatus(finishedRun, "finished");
  }
  const QString exp = writeExperiment(tmp, "to resume", 1500, 5);
  pm::ui::MainWindow w(db, kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  pm::ui::LivePanel* live = w.livePanel();
  QSignalSpy finished(live, &pm::ui::LivePanel::runFinished);

  // A run stopped with its Stop button after its first loss point (a single-process run writes a
  // checkpoint when it stops).
  pm::ui::LiveRunView* first = live->startRun(exp, "to resume");
  ASSERT_TRUE(QTest::qWaitFor([&] { return first->lossPoints() > 0; }, 60000)) << first->logText().toStdString();
  QPushButton* stop = pm::test::buttonLabelled(first, "Stop");
  ASSERT_NE(stop, nullptr);
  QTest::mouseClick(stop, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, 30000)) << first->logText().toStdString();
  ASSERT_EQ(finished.at(0).at(0).toString().toStdString(), "stopped") << first->logText().toStdString();
  const int64_t stopped = first->runId();
  ASSERT_GT(stopped, 0) << first->logText().toStdString();

  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  QTest::keyClick(&w, Qt::Key_F5);  // File > Refresh runs
  QTableView* table = w.runsBrowser()->table();
  const auto rowOf = [&](int64_t id) { return pm::test::rowWithId(table, pm::ui::RunsTableModel::Id, id); };
  ASSERT_GE(rowOf(stopped), 0);
  ASSERT_GE(rowOf(finishedRun), 0);

  // The finished run: Resume is there, disabled.
  bool found = false, enabled = true;
  pm::test::clickCell(table, rowOf(finishedRun), 1);
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.runsBrowser()->shownRun() == finishedRun; }, 5000));
  {
    ModalAnswers answers({readMenuEntry("Resume", &found, &enabled)});
    pm::test::rightClickCell(table, rowOf(finishedRun), 1);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(found) << "no Resume entry in the context menu";
  EXPECT_FALSE(enabled) << "Resume is enabled for a finished run";

  // The stopped run: Resume enabled, and chosen.
  found = false;
  enabled = false;
  const ModalAnswers::Step chooseResume = [&](QWidget* top) {
    if (auto* menu = qobject_cast<QMenu*>(top))
      for (QAction* a : menu->actions())
        if (a->text().startsWith("Resume")) {
          found = true;
          enabled = a->isEnabled();
        }
    return pm::test::chooseMenuEntry("Resume")(top);
  };
  const int liveTabs = live->tabWidget()->count();
  pm::test::clickCell(table, rowOf(stopped), 1);
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.runsBrowser()->shownRun() == stopped; }, 5000));
  {
    ModalAnswers answers({chooseResume});
    pm::test::rightClickCell(table, rowOf(stopped), 1);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(found) << "no Resume entry in the context menu";
  EXPECT_TRUE(enabled) << "Resume is disabled for a stopped run";
  EXPECT_TRUE(QTest::qWaitFor([&] { return tabs->currentWidget() == live; }, 5000))
      << "the Live tab did not come up: " << tabs->tabText(tabs->currentIndex()).toStdString();
  // Its Live tab is still open: the run continues there (one view per run), its curve carried on.
  ASSERT_EQ(live->tabWidget()->count(), liveTabs) << "a second tab for the same run";
  pm::ui::LiveRunView* resumed = live->current();
  ASSERT_EQ(resumed, first);
  ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 2; }, 120000)) << resumed->logText().toStdString();
  EXPECT_EQ(finished.at(1).at(0).toString().toStdString(), "finished") << resumed->logText().toStdString();
  EXPECT_EQ(resumed->runId(), stopped);
  EXPECT_TRUE(resumed->logText().contains(QStringLiteral("pipemare run --resume %1").arg(stopped))) << resumed->logText().toStdString();

  // One record, continued from its checkpoint to the last step.
  pm::RunStore store(db, /*readOnly=*/true);
  EXPECT_EQ(store.listRuns().size(), 2u);
  const auto record = store.getRun(stopped);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->status, pm::RunStatus::Finished);
  EXPECT_GT(record->resume_step, 0);
  const auto loss = store.loadMetric(stopped, "train/loss");
  ASSERT_FALSE(loss.empty());
  EXPECT_EQ(loss.back().step, 1500);
  // The tab's curve is the record's, from the first logged step to the last.
  EXPECT_EQ(resumed->lossPoints(), loss.size());
}

// A stopped run's Live tab: its log ends with the summary line saying it can be resumed, and under
// the log Resume continues the run in the same tab, its curve carried on from the store's record,
// into the same record, to the last step. The finished run's log ends with its summary line too, and offers no
// Resume; the stopped run's tab, once resumed, offers it no more.
TEST(Workbench, ResumeAStoppedRunFromItsLiveTab) {
  pm::test::app();
  TempDir tmp;
  const std::string db = tmp.file("runs.db");
  const QString exp = writeExperiment(tmp, "stop and go", 1500, 5);
  pm::ui::MainWindow w(db, kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  pm::ui::LivePanel* live = w.livePanel();
  QSignalSpy finished(live, &pm::ui::LivePanel::runFinished);

  pm::ui::LiveRunView* first = live->startRun(exp, "stop and go");
  ASSERT_TRUE(pm::test::clickTab(tabs, "Live"));
  QPushButton* resume = first->resumeButton();
  ASSERT_NE(resume, nullptr);
  ASSERT_TRUE(QTest::qWaitFor([&] { return first->lossPoints() > 0; }, 60000)) << first->logText().toStdString();
  EXPECT_FALSE(resume->isVisible()) << "Resume is offered while the run is going";
  QPushButton* stop = pm::test::buttonLabelled(first, "Stop");
  ASSERT_NE(stop, nullptr);
  QTest::mouseClick(stop, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 1; }, 30000)) << first->logText().toStdString();
  ASSERT_EQ(finished.at(0).at(0).toString().toStdString(), "stopped") << first->logText().toStdString();
  const int64_t id = first->runId();
  ASSERT_GT(id, 0);
  const QStringList firstLog = first->logText().split('\n', Qt::SkipEmptyParts);
  ASSERT_FALSE(firstLog.isEmpty());
  EXPECT_TRUE(firstLog.last().startsWith(QStringLiteral("run %1 stopped: stopped by request after step").arg(id)) &&
              firstLog.last().contains(QStringLiteral("resume with pipemare run --resume %1").arg(id)))
      << first->logText().toStdString();

  // Under the log: Resume, enabled, naming the run.
  ASSERT_TRUE(QTest::qWaitFor([&] { return resume->isVisible(); }, 5000)) << "no Resume under the stopped run's log:\n" << first->logText().toStdString();
  EXPECT_TRUE(resume->isEnabled());
  EXPECT_EQ(resume->text().toStdString(), "Resume run " + std::to_string(id));
  const int liveTabs = live->tabWidget()->count();
  const size_t stoppedAt = first->lossPoints();
  QTest::mouseClick(resume, Qt::LeftButton);
  // One view per run: the run continues in its own tab, its curve kept and carried on.
  ASSERT_TRUE(QTest::qWaitFor([&] { return first->running(); }, 5000)) << first->logText().toStdString();
  EXPECT_EQ(live->tabWidget()->count(), liveTabs) << "a new tab for the resumed run";
  pm::ui::LiveRunView* resumed = live->current();
  ASSERT_EQ(resumed, first);
  EXPECT_GT(first->lossPoints(), 0u) << "the curve so far was dropped";
  EXPECT_LE(first->lossPoints(), stoppedAt);  // up to the stop checkpoint, from the store
  // The tab is named with the run's id, its "[stopped]" gone while it runs again.
  EXPECT_EQ(live->tabWidget()->tabText(live->tabWidget()->currentIndex()).toStdString(), "#" + std::to_string(id) + " stop and go");
  EXPECT_FALSE(resume->isVisible()) << "Resume is offered while the run goes on";

  ASSERT_TRUE(QTest::qWaitFor([&] { return finished.count() == 2; }, 120000)) << resumed->logText().toStdString();
  EXPECT_EQ(finished.at(1).at(0).toString().toStdString(), "finished") << resumed->logText().toStdString();
  EXPECT_EQ(live->tabWidget()->tabText(live->tabWidget()->indexOf(first)).toStdString(), "#" + std::to_string(id) + " stop and go [finished]");
  EXPECT_EQ(resumed->runId(), id);
  EXPECT_TRUE(resumed->logText().contains(QStringLiteral("pipemare run --resume %1").arg(id))) << resumed->logText().toStdString();
  // The finished run's last line: its summary (figures after the status), as a stopped run's.
  const QStringList log = resumed->logText().split('\n', Qt::SkipEmptyParts);
  ASSERT_FALSE(log.isEmpty());
  EXPECT_TRUE(log.last().startsWith(QStringLiteral("run %1 finished: final loss ").arg(id))) << log.last().toStdString();
  EXPECT_FALSE(log.last().contains("finished: finished")) << log.last().toStdString();
  EXPECT_FALSE(resumed->resumeButton()->isVisible()) << "a finished run offers Resume";

  pm::RunStore store(db, /*readOnly=*/true);
  EXPECT_EQ(store.listRuns().size(), 1u);
  const auto record = store.getRun(id);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->status, pm::RunStatus::Finished);
  EXPECT_GT(record->resume_step, 0);
  const auto loss = store.loadMetric(id, "train/loss");
  ASSERT_FALSE(loss.empty());
  EXPECT_EQ(loss.back().step, 1500);
  // The tab's curve is the record's, from the first logged step to the last.
  EXPECT_EQ(resumed->lossPoints(), loss.size());
}
