#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <QComboBox>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <vector>

#include "core/store/run_store.h"
#include "core/util/strings.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/main/main_window.h"
#include "ui/plots/curve_plot.h"
#include "ui/runs/run_details.h"
#include "ui/runs/runs_browser.h"
#include "ui/runs/runs_table_model.h"
#include "ui/store/store_watcher.h"

namespace fs = std::filesystem;

using pm::test::TempDir;

namespace {

// The table row of a run (the Id column); -1 when it is not listed.
int rowOf(const pm::ui::RunsBrowser& browser, int64_t id) { return pm::test::rowWithId(browser.table(), pm::ui::RunsTableModel::Id, id); }

// Clicks the run's row, as the user picks a run; true once the browser shows that run's curves.
bool clickRun(pm::ui::RunsBrowser& browser, int64_t id) {
  const int row = rowOf(browser, id);
  if (row < 0) return false;
  pm::test::clickCell(browser.table(), row);
  return QTest::qWaitFor([&] { return browser.shownRun() == id; }, 5000);
}

// Double-clicks the run's row (its Name cell), as the user opens a run's details.
void doubleClickRun(pm::ui::RunsBrowser& browser, int64_t id) {
  QTableView* table = browser.table();
  const QModelIndex index = table->model()->index(rowOf(browser, id), pm::ui::RunsTableModel::Name);
  table->scrollTo(index);
  // As the window system sends a double click: press, release, the double click, release.
  const QPoint at = table->visualRect(index).center();
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, at);
  QTest::mouseDClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, at);
  QTest::mouseRelease(table->viewport(), Qt::LeftButton, Qt::NoModifier, at);
}

}  // namespace

TEST(RunsBrowser, MainWindowListsRunsFromTheStoreAndPlotsTheSelectedOne) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t a = 0, b = 0;
  {
    pm::RunStore store(db);
    a = store.createRun("first", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})");
    b = store.createRun("second 'quoted' ✓", R"({"model":{"name":"cnn"},"pipeline":{"schedule":"1f1b","stages":2,"microbatches":8}})");
    for (int s = 1; s <= 50; ++s) store.appendMetric(b, "train/loss", s, 0, 2.0 / s);
    store.appendMetric(b, "eval/accuracy", 50, 0, 0.8);
    store.flush();
    store.setStatus(a, "finished");
  }
  pm::ui::MainWindow w(db);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  auto* browser = w.runsBrowser();
  EXPECT_TRUE(browser->lastError().empty()) << browser->lastError();
  ASSERT_EQ(browser->runCount(), 2);
  // Newest first: the second run is selected and its loss curve drawn.
  auto* table = browser->table();
  EXPECT_EQ(table->model()->index(0, 1).data().toString().toStdString(), "second 'quoted' ✓");
  EXPECT_EQ(table->model()->index(0, 3).data().toString().toStdString(), "cnn");
  ASSERT_GE(browser->lossPlot()->seriesCount(), 1);
  EXPECT_EQ(browser->lossPlot()->pointCount(0), 50u);
  // A click on the other run's row plots that one: it recorded no loss, and the plot says so.
  ASSERT_TRUE(clickRun(*browser, a));
  EXPECT_EQ(browser->lossPlot()->seriesCount(), 0);
  EXPECT_TRUE(browser->lossPlot()->showsEmptyText());
  ASSERT_TRUE(clickRun(*browser, b));
  EXPECT_EQ(browser->lossPlot()->pointCount(0), 50u);

  // A run added by another process appears at once on File > Refresh runs (F5), without waiting
  // for the watcher's poll (the action reads the store before the key press returns).
  {
    pm::RunStore store(db);
    store.createRun("third", "{}");
  }
  QTest::keyClick(&w, Qt::Key_F5);
  EXPECT_EQ(browser->runCount(), 3);
}

// The second plot shows what the run evaluated: accuracy for classifiers, perplexity for language
// models; a run that recorded no evaluation says so instead of showing empty axes.
TEST(RunsBrowser, EvaluationPlotShowsPerplexityOrSaysWhyItIsEmpty) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t classifier = 0, lm = 0, none = 0;
  {
    pm::RunStore store(db);
    classifier = store.createRun("cnn", "{}");
    lm = store.createRun("charlm", "{}");
    none = store.createRun("no eval", "{}");
    for (int64_t r : {classifier, lm, none}) {
      for (int s = 1; s <= 5; ++s) store.appendMetric(r, "train/loss", s, 0, 2.0 / s);
      store.setStatus(r, "finished");
    }
    store.appendMetric(classifier, "eval/accuracy", 5, 0, 0.8);
    store.appendMetric(lm, "eval/accuracy", 3, 0, 0.3);  // next-byte accuracy, beside perplexity
    store.appendMetric(lm, "eval/perplexity", 3, 0, 40.0);
    store.appendMetric(lm, "eval/perplexity", 5, 0, 20.0);
    store.flush();
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  ASSERT_TRUE(clickRun(browser, lm));
  EXPECT_EQ(browser.evalPlot()->title(), "Held-out perplexity");
  ASSERT_EQ(browser.evalPlot()->seriesCount(), 1);
  EXPECT_EQ(browser.evalPlot()->pointCount(0), 2u);
  EXPECT_FALSE(browser.evalPlot()->showsEmptyText());
  ASSERT_TRUE(clickRun(browser, none));
  EXPECT_EQ(browser.evalPlot()->seriesCount(), 0);
  EXPECT_TRUE(browser.evalPlot()->showsEmptyText());
  EXPECT_NE(browser.evalPlot()->emptyText().indexOf("no evaluation"), -1);
  EXPECT_FALSE(browser.lossPlot()->showsEmptyText());
  ASSERT_TRUE(clickRun(browser, classifier));
  EXPECT_EQ(browser.evalPlot()->title(), "Held-out accuracy");
  EXPECT_EQ(browser.evalPlot()->seriesCount(), 1);
  EXPECT_FALSE(browser.evalPlot()->showsEmptyText());
}

// With no runs in the store the Runs tab says how to make one, in place of an empty table, and its
// plots say there is nothing to plot instead of showing empty axes; the first run recorded (by
// another process: the watcher's poll lists it) brings the table back, with that run shown.
TEST(RunsBrowser, EmptyStoreSaysHowToMakeARun) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();  // no file yet: nothing recorded
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  auto* note = browser.findChild<QLabel*>("noRunsNote");
  ASSERT_NE(note, nullptr);
  ASSERT_TRUE(QTest::qWaitFor([&] { return note->isVisible(); }, 5000)) << "no empty-state sentence";
  EXPECT_TRUE(note->text().startsWith("No runs yet: design an experiment in the Design tab and press Run"))
      << note->text().toStdString();
  EXPECT_TRUE(note->text().contains(QString::fromStdString("pipemare run FILE --db " + db))) << note->text().toStdString();
  EXPECT_FALSE(browser.table()->isVisible());
  EXPECT_TRUE(browser.lossPlot()->showsEmptyText());
  EXPECT_TRUE(browser.evalPlot()->showsEmptyText());

  int64_t id = 0;
  {
    pm::RunStore store(db);
    id = store.createRun("first", "{}");
    store.appendMetric(id, "train/loss", 1, 0, 1.0);
    store.flush();
    store.setStatus(id, "finished");
  }
  ASSERT_TRUE(QTest::qWaitFor([&] { return browser.runCount() == 1; }, 10000)) << "the poll did not list the new run";
  EXPECT_TRUE(QTest::qWaitFor([&] { return browser.table()->isVisible() && !note->isVisible(); }, 5000));
  EXPECT_EQ(browser.shownRun(), id);
  EXPECT_FALSE(browser.lossPlot()->showsEmptyText());
  EXPECT_EQ(browser.lossPlot()->pointCount(0), 1u);
}

TEST(RunsBrowser, UnreadableStoreShowsAnErrorInsteadOfCrashing) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "not-a-db.db").string();
  {
    std::FILE* f = std::fopen(db.c_str(), "w");
    std::fputs("this is not a database, just text that is long enough to have a header", f);
    std::fclose(f);
  }
  pm::ui::RunsBrowser browser(db);
  EXPECT_EQ(browser.runCount(), 0);
  EXPECT_NE(browser.lastError().find("not-a-db.db"), std::string::npos) << browser.lastError();
}

// Tags, notes and deleting through the table's context menu, as a user does: a right click on
// the run's row, the menu's entry (arrow keys, Return), the dialog's text typed and OK, the
// question answered. Quotes and SQL in the text are stored as typed; a run still going is not
// deleted, and the warning says why.
TEST(RunsBrowser, EditTagsNotesAndDelete) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t a = 0, b = 0;
  {
    pm::RunStore store(db);
    a = store.createRun("a", "{}");
    b = store.createRun("b", "{}");
    store.appendMetric(b, "train/loss", 1, 0, 1.0);
    store.flush();
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  ASSERT_EQ(browser.runCount(), 2);
  QTableView* table = browser.table();
  ASSERT_TRUE(clickRun(browser, a));
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Edit tags"), pm::test::enterText("  baseline, it's \"quoted\" ,✓ ")});
    pm::test::rightClickCell(table, rowOf(browser, a));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  // The table's Tags column shows them.
  EXPECT_TRUE(QTest::qWaitFor(
      [&] {
        const int row = rowOf(browser, a);
        return row >= 0 && table->model()->index(row, pm::ui::RunsTableModel::Tags).data().toString().contains("it's \"quoted\"");
      },
      5000));
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Edit notes"), pm::test::enterText("notes'); DROP TABLE runs;--")});
    pm::test::rightClickCell(table, rowOf(browser, a));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  {
    pm::RunStore store(db);
    auto r = store.getRun(a);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->tags, (std::vector<std::string>{"baseline", "it's \"quoted\"", "✓"}));
    EXPECT_EQ(r->notes, "notes'); DROP TABLE runs;--");
  }
  // A running run (its launcher, this process, alive) is not deleted: its process records into it.
  int64_t live = 0;
  {
    pm::RunStore store(db);
    live = store.createRun("live", "{}");
    store.markRunning(live, static_cast<int64_t>(getpid()));
  }
  // The watcher's poll lists it (every 2 s).
  ASSERT_TRUE(QTest::qWaitFor([&] { return rowOf(browser, live) >= 0; }, 10000)) << "the poll did not list the new run";
  // b and the live run selected (a click, then a Ctrl+click), then Delete on the context menu.
  pm::test::clickCell(table, rowOf(browser, b));
  pm::test::clickCell(table, rowOf(browser, live), 0, Qt::ControlModifier);
  auto selected = browser.selectedRunIds();
  std::sort(selected.begin(), selected.end());
  ASSERT_EQ(selected, (std::vector<int64_t>{b, live}));
  QString warning;
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Delete 2 run(s)"), pm::test::pressButton(QMessageBox::Yes),
                                    pm::test::pressButton(QMessageBox::Ok, &warning)});
    pm::test::rightClickCell(table, rowOf(browser, live));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_NE(warning.indexOf(QStringLiteral("run %1 is still running").arg(live)), -1) << warning.toStdString();
  EXPECT_TRUE(QTest::qWaitFor([&] { return browser.runCount() == 2 && rowOf(browser, b) < 0; }, 5000)) << browser.runCount();
  pm::RunStore store(db);
  EXPECT_FALSE(store.getRun(b).has_value());
  EXPECT_EQ(store.countRows("metrics", b), 0);
  EXPECT_EQ(store.getRun(live)->status, pm::RunStatus::Running);
}

// Filters by status, schedule and tag (besides the text filter).
TEST(RunsBrowser, FiltersByScheduleTagAndStatus) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  {
    pm::RunStore store(db);
    const auto a = store.createRun("a", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})", {"baseline"});
    const auto b = store.createRun("b", R"({"model":{"name":"cnn"},"pipeline":{"schedule":"pipemare","stages":2,"microbatches":8}})", {"async", "study"});
    store.createRun("c", R"({"model":{"name":"cnn"},"pipeline":{"schedule":"pipemare","stages":2,"microbatches":8}})", {"study"});
    store.setStatus(a, "finished");
    store.setStatus(b, "diverged");
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  ASSERT_EQ(browser.runCount(), 3);
  auto* schedule = browser.findChild<QComboBox*>("scheduleFilter");
  auto* tag = browser.findChild<QComboBox*>("tagFilter");
  auto* status = browser.findChild<QComboBox*>("statusFilter");
  ASSERT_TRUE(schedule && tag && status);
  const auto listed = [&](int n) { return QTest::qWaitFor([&] { return browser.runCount() == n; }, 5000); };
  // The filter boxes, chosen with the keyboard (arrow keys, one item at a time).
  ASSERT_TRUE(pm::test::chooseText(schedule, "pipemare"));
  EXPECT_TRUE(listed(2)) << browser.runCount();
  ASSERT_GE(tag->findText("study"), 1);
  ASSERT_TRUE(pm::test::chooseText(tag, "async"));
  EXPECT_TRUE(listed(1)) << browser.runCount();
  ASSERT_TRUE(pm::test::chooseIndex(tag, 0));
  ASSERT_TRUE(pm::test::chooseText(status, "diverged"));
  EXPECT_TRUE(listed(1)) << browser.runCount();
  ASSERT_TRUE(pm::test::chooseIndex(schedule, 0));
  ASSERT_TRUE(pm::test::chooseIndex(status, 0));
  EXPECT_TRUE(listed(3)) << browser.runCount();

  // The text filter, typed: the table shows the matching rows only (the runs listed are unchanged).
  auto* text = browser.findChild<QLineEdit*>();
  ASSERT_NE(text, nullptr);
  const auto shown = [&](int n) { return QTest::qWaitFor([&] { return browser.table()->model()->rowCount() == n; }, 5000); };
  pm::test::retype(text, "mlp");
  EXPECT_TRUE(shown(1)) << browser.table()->model()->rowCount();
  EXPECT_EQ(browser.runCount(), 3);
  pm::test::retype(text, "");
  EXPECT_TRUE(shown(3)) << browser.table()->model()->rowCount();
}

// The 2-second refresh reads a shown run's curves again only while the run is going, and once
// more when it ends; a finished run's curves are read once.
TEST(RunsBrowser, RefreshRereadsCurvesOnlyWhileTheShownRunIsGoing) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  pm::RunStore store(db);
  const auto id = store.createRun("going", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})");
  store.setStatus(id, "running");
  store.appendMetric(id, "train/loss", 1, 0, 2.0);
  store.flush();
  pm::ui::RunsBrowser browser(db);
  ASSERT_EQ(browser.shownRun(), id);
  const int first = browser.curveLoads();
  browser.refresh();
  store.appendMetric(id, "train/loss", 2, 0, 1.0);
  store.flush();
  browser.refresh();
  EXPECT_EQ(browser.curveLoads(), first + 2) << "a running run's curves are read on each refresh";
  EXPECT_EQ(browser.lossPlot()->pointCount(0), 2u);
  store.setStatus(id, "finished");
  browser.refresh();
  EXPECT_EQ(browser.curveLoads(), first + 3) << "read once more when it ends";
  browser.refresh();
  browser.refresh();
  EXPECT_EQ(browser.curveLoads(), first + 3) << "a finished run's curves are not read again";
}

// The 2-second refresh resets the model: the keyboard's current row stays on the shown run (Down
// does not jump back to the top row). A run whose launcher died is marked interrupted by the store
// watcher when asked (at start, when a run process ends, F5), never by a refresh or a poll, and
// the table then shows it.
TEST(RunsBrowser, RefreshKeepsTheKeyboardRowAndMarksDeadRuns) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  std::vector<int64_t> ids;
  {
    pm::RunStore store(db);
    for (int i = 0; i < 4; ++i) {
      ids.push_back(store.createRun("run " + std::to_string(i), "{}"));
      store.setStatus(ids.back(), "finished");
    }
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  ASSERT_TRUE(clickRun(browser, ids[2]));
  browser.refresh();  // what the 2-second refresh does
  const QModelIndex current = browser.table()->selectionModel()->currentIndex();
  ASSERT_TRUE(current.isValid());
  EXPECT_EQ(browser.table()->model()->index(current.row(), pm::ui::RunsTableModel::Id).data().toLongLong(), ids[2]);
  EXPECT_EQ(browser.shownRun(), ids[2]);
  // Down goes on from there (newest first: to ids[1]), not from the top row (which would show ids[2]).
  QTest::keyClick(browser.table(), Qt::Key_Down);
  EXPECT_TRUE(QTest::qWaitFor([&] { return browser.shownRun() == ids[1]; }, 5000)) << browser.shownRun();

  // A launcher that is gone: a child process that has exited.
  const pid_t child = pm::test::deadPid();
  ASSERT_GT(child, 0);
  int64_t dead = 0;
  {
    pm::RunStore store(db);
    dead = store.createRun("dead launcher", "{}");
    store.markRunning(dead, child);
  }
  browser.refresh();
  pm::ui::StoreWatcher* watcher = browser.storeWatcher();
  ASSERT_NE(watcher, nullptr);
  watcher->poll();
  EXPECT_EQ(pm::RunStore(db).getRun(dead)->status, pm::RunStatus::Running) << "neither a refresh nor a poll marks dead runs";
  EXPECT_EQ(watcher->markDeadRunsInterrupted(), 1);
  EXPECT_EQ(pm::RunStore(db).getRun(dead)->status, pm::RunStatus::Interrupted);
  watcher->refresh();
  auto* model = browser.table()->model();
  int row = -1;
  for (int r = 0; r < model->rowCount(); ++r)
    if (model->index(r, pm::ui::RunsTableModel::Id).data().toLongLong() == dead) row = r;
  ASSERT_GE(row, 0);
  EXPECT_EQ(model->index(row, pm::ui::RunsTableModel::Status).data().toString().toStdString(), "interrupted");
}

// Deleting asks first, naming the run, with No as the default answer: Return keeps the run, and
// only Yes deletes it.
TEST(RunsBrowser, DeleteNamesTheRunAndDefaultsToNo) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t target = 0;
  {
    pm::RunStore store(db);
    store.createRun("other", "{}");
    target = store.createRun("baseline cnn", "{}");
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  ASSERT_TRUE(clickRun(browser, target));
  QString question;
  bool defaultIsNo = false;
  // An answer: the question and its default button read, then Return pressed, as by a user who
  // answers without reading.
  const pm::test::ModalAnswers::Step pressReturn = [&](QWidget* top) {
    auto* box = qobject_cast<QMessageBox*>(top);
    if (!box) return false;
    question = box->text();
    defaultIsNo = box->defaultButton() != nullptr && box->defaultButton() == box->button(QMessageBox::No);
    QTest::keyClick(box, Qt::Key_Return);
    return true;
  };
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Delete 1 run(s)"), pressReturn});
    pm::test::rightClickCell(browser.table(), rowOf(browser, target));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(defaultIsNo) << "the question's default answer is not No";
  EXPECT_TRUE(question.contains(QStringLiteral("run %1 \"baseline cnn\"").arg(target))) << question.toStdString();
  EXPECT_TRUE(pm::RunStore(db).getRun(target).has_value()) << "Return deleted the run";
  EXPECT_GE(rowOf(browser, target), 0);

  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Delete 1 run(s)"), pm::test::pressButton(QMessageBox::Yes)});
    pm::test::rightClickCell(browser.table(), rowOf(browser, target));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(QTest::qWaitFor([&] { return rowOf(browser, target) < 0; }, 5000)) << browser.runCount();
  EXPECT_FALSE(pm::RunStore(db).getRun(target).has_value());
}

// The Notes column, after every other (whose places tests and users rely on), shows a run's notes
// on one line, which the view elides to the column's width; the tooltip gives them whole, line
// breaks included. Notes edited from the context menu show there, and the text filter finds runs
// by their notes.
TEST(RunsBrowser, TheNotesColumnShowsARunsNotes) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  const std::string notes =
      "GPipe fill-drain with 8 microbatches.\nCompared with the pipemare runs of the same week, at the same learning rate.";
  int64_t noted = 0, plain = 0;
  {
    pm::RunStore store(db);
    noted = store.createRun("noted", "{}", {"baseline"}, notes);
    plain = store.createRun("plain", "{}");
    store.setStatus(noted, "finished");
    store.setStatus(plain, "finished");
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  QTableView* table = browser.table();
  const QAbstractItemModel* model = table->model();
  using Column = pm::ui::RunsTableModel;
  ASSERT_EQ(model->columnCount(), int(Column::ColumnCount));
  EXPECT_EQ(model->headerData(Column::Notes, Qt::Horizontal).toString().toStdString(), "Notes");
  EXPECT_EQ(int(Column::Notes), model->columnCount() - 1) << "Notes is not the last column";
  EXPECT_EQ(model->headerData(Column::Tags, Qt::Horizontal).toString().toStdString(), "Tags");
  EXPECT_FALSE(table->isColumnHidden(Column::Notes));
  EXPECT_GT(table->columnWidth(Column::Notes), 0);

  const int row = rowOf(browser, noted);
  ASSERT_GE(row, 0);
  const QModelIndex cell = model->index(row, Column::Notes);
  EXPECT_EQ(cell.data().toString().toStdString(),
            "GPipe fill-drain with 8 microbatches. Compared with the pipemare runs of the same week, at the same learning rate.");
  EXPECT_EQ(cell.data(Qt::ToolTipRole).toString().toStdString(), notes);
  EXPECT_EQ(model->index(row, Column::Tags).data().toString().toStdString(), "baseline");
  EXPECT_TRUE(model->index(rowOf(browser, plain), Column::Notes).data().toString().isEmpty());

  // Notes typed in the context menu's dialog appear in the column.
  ASSERT_TRUE(clickRun(browser, plain));
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Edit notes"), pm::test::enterText("baseline for the T2 study")});
    pm::test::rightClickCell(table, rowOf(browser, plain));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(QTest::qWaitFor(
      [&] {
        const int r = rowOf(browser, plain);
        return r >= 0 && model->index(r, Column::Notes).data().toString() == "baseline for the T2 study";
      },
      5000));

  // The text filter, typed: a word of the notes only.
  auto* filter = browser.findChild<QLineEdit*>();
  ASSERT_NE(filter, nullptr);
  pm::test::retype(filter, "fill-drain");
  EXPECT_TRUE(QTest::qWaitFor([&] { return model->rowCount() == 1; }, 5000)) << model->rowCount();
  EXPECT_EQ(rowOf(browser, noted), 0);
}

// A double click on a run opens the details pane beside the curves with the run's whole record
// and its experiment JSON (indented, read-only); a double click on another run shows that one,
// Enter on the keyboard's row does as a double click, notes edited meanwhile show there, and
// Close hides the pane.
TEST(RunsBrowser, DoubleClickingARunShowsItsDetails) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t first = 0, second = 0;
  {
    pm::RunStore store(db);
    first = store.createRun("pipemare P=3",
                            R"({"name":"pipemare P=3","model":{"name":"mlp"},"pipeline":{"schedule":"pipemare","stages":3,"microbatches":4},)"
                            R"("training":{"steps":40}})",
                            {"study", "t2"}, "the T2 baseline");
    second = store.createRun("gpipe P=2", R"({"model":{"name":"cnn"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":8}})");
    for (int s = 1; s <= 40; ++s) store.appendMetric(first, "train/loss", s, 0, 4.0 / s);
    store.appendMetric(first, "eval/accuracy", 40, 0, 0.625);
    store.flush();
    store.setHaltStep(first, 40);
    store.setStatus(first, "stopped", "stopped by request after step 40");
    store.setStatus(second, "finished");
  }
  pm::ui::RunsBrowser browser(db);
  browser.resize(1500, 800);
  ASSERT_TRUE(pm::test::showWindow(&browser, /*active=*/true));
  pm::ui::RunDetailsPane* details = browser.detailsPane();
  ASSERT_NE(details, nullptr);
  EXPECT_FALSE(details->isVisible()) << "the details pane is open before any run was double-clicked";

  doubleClickRun(browser, first);
  ASSERT_TRUE(QTest::qWaitFor([&] { return details->isVisible() && details->run() == first; }, 5000))
      << "a double click did not open the run's details";
  EXPECT_TRUE(details->titleText().contains("pipemare P=3")) << details->titleText().toStdString();
  const std::string fields = details->fieldsText().toStdString();
  for (const char* shown : {"stopped by request after step 40", "pipemare", "mlp", "study, t2", "the T2 baseline", "train/loss",
                            "0.1 at step 40 (40 points)", "eval/accuracy", "0.625", "step 40 (checkpoint)"})
    EXPECT_NE(fields.find(shown), std::string::npos) << "no \"" << shown << "\" in the details:\n" << fields;
  QPlainTextEdit* experiment = details->experimentView();
  ASSERT_NE(experiment, nullptr);
  EXPECT_TRUE(experiment->isReadOnly());
  const QString json = experiment->toPlainText();
  EXPECT_TRUE(json.contains("\n  \"pipeline\": {")) << "not indented:\n" << json.toStdString();
  const nlohmann::json parsed = nlohmann::json::parse(json.toStdString(), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json.toStdString();
  EXPECT_EQ(parsed["pipeline"]["stages"], 3) << json.toStdString();
  EXPECT_EQ(parsed["pipeline"]["schedule"], "pipemare");

  // Another run, double-clicked: the pane shows that one.
  doubleClickRun(browser, second);
  ASSERT_TRUE(QTest::qWaitFor([&] { return details->run() == second; }, 5000));
  EXPECT_TRUE(details->titleText().contains("gpipe P=2")) << details->titleText().toStdString();
  EXPECT_EQ(nlohmann::json::parse(experiment->toPlainText().toStdString(), nullptr, false)["pipeline"]["stages"], 2)
      << experiment->toPlainText().toStdString();
  EXPECT_TRUE(details->fieldsText().contains("none recorded")) << "a run without metrics: " << details->fieldsText().toStdString();

  // Enter on the row the keyboard is on (a click put it on the first run).
  pm::test::clickCell(browser.table(), rowOf(browser, first), pm::ui::RunsTableModel::Name);
  ASSERT_TRUE(QTest::qWaitFor([&] { return browser.shownRun() == first; }, 5000));
  QTest::keyClick(browser.table(), Qt::Key_Return);
  ASSERT_TRUE(QTest::qWaitFor([&] { return details->run() == first; }, 5000)) << "Enter did not show the run's details";

  // Notes edited from the context menu show in the open pane.
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Edit notes"), pm::test::enterText("rerun with T1 too")});
    pm::test::rightClickCell(browser.table(), rowOf(browser, first));
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(QTest::qWaitFor([&] { return details->fieldsText().contains("rerun with T1 too"); }, 5000))
      << details->fieldsText().toStdString();

  QPushButton* close = pm::test::buttonLabelled(details, "Close");
  ASSERT_NE(close, nullptr);
  QTest::mouseClick(close, Qt::LeftButton);
  EXPECT_TRUE(QTest::qWaitFor([&] { return !details->isVisible(); }, 5000)) << "Close left the pane open";
}

// The Runs tab's duration of a resumed run counts training only: started at 1000, ended at 1300,
// paused 100 s between its sessions (the store's time/paused_s) reads 200 s, not 300.
TEST(RunsBrowser, DurationLeavesAResumedRunsPausesOut) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t run = 0;
  {
    pm::RunStore store(db);
    run = store.createRun("resumed", "{}");
    store.appendMetric(run, "train/loss", 1, 1001, 1.0);
    store.appendMetric(run, "time/paused_s", 1, 1150, 100.0);
    store.flush();
    store.setStatus(run, "finished");
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE runs SET started_at = 1000, finished_at = 1300", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  pm::ui::RunsBrowser browser(db);
  browser.resize(1200, 700);
  ASSERT_TRUE(pm::test::showWindow(&browser));
  auto* table = browser.findChild<QTableView*>();
  ASSERT_TRUE(table);
  QAbstractItemModel* model = table->model();
  ASSERT_TRUE(QTest::qWaitFor([&] { return model->rowCount() == 1; }, 5000));
  int column = -1;
  for (int c = 0; c < model->columnCount(); ++c)
    if (model->headerData(c, Qt::Horizontal).toString() == "Duration") column = c;
  ASSERT_GE(column, 0);
  EXPECT_EQ(model->index(0, column).data().toString().toStdString(), pm::formatDuration(200));
}
