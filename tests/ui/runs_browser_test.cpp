#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <QComboBox>
#include <QItemSelectionModel>
#include <QTableView>
#include <QTest>
#include <filesystem>

#include "core/store/run_store.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_test_main.h"
#include "ui/main/main_window.h"
#include "ui/plots/curve_plot.h"
#include "ui/runs/runs_browser.h"
#include "ui/runs/runs_table_model.h"
#include "ui/store/store_watcher.h"

namespace fs = std::filesystem;

using pm::test::TempDir;

TEST(RunsBrowser, MainWindowListsRunsFromTheStoreAndPlotsTheSelectedOne) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  {
    pm::RunStore store(db);
    const auto a = store.createRun("first", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})");
    const auto b = store.createRun("second 'quoted' ✓", R"({"model":{"name":"cnn"},"pipeline":{"schedule":"1f1b","stages":2,"microbatches":8}})");
    for (int s = 1; s <= 50; ++s) store.appendMetric(b, "train/loss", s, 0, 2.0 / s);
    store.appendMetric(b, "eval/accuracy", 50, 0, 0.8);
    store.flush();
    store.setStatus(a, "finished");
  }
  pm::ui::MainWindow w(db);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  auto* browser = w.runsBrowser();
  EXPECT_TRUE(browser->lastError().empty()) << browser->lastError();
  ASSERT_EQ(browser->runCount(), 2);
  // Newest first: the second run is selected and its loss curve drawn.
  auto* table = browser->table();
  EXPECT_EQ(table->model()->index(0, 1).data().toString().toStdString(), "second 'quoted' ✓");
  EXPECT_EQ(table->model()->index(0, 3).data().toString().toStdString(), "cnn");
  ASSERT_GE(browser->lossPlot()->seriesCount(), 1);
  EXPECT_EQ(browser->lossPlot()->pointCount(0), 50u);

  // A run added by another process appears on refresh.
  {
    pm::RunStore store(db);
    store.createRun("third", "{}");
  }
  browser->refresh();
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
  ASSERT_TRUE(browser.selectRun(lm));
  EXPECT_EQ(browser.evalPlot()->title(), "Held-out perplexity");
  ASSERT_EQ(browser.evalPlot()->seriesCount(), 1);
  EXPECT_EQ(browser.evalPlot()->pointCount(0), 2u);
  EXPECT_FALSE(browser.evalPlot()->showsEmptyText());
  ASSERT_TRUE(browser.selectRun(none));
  EXPECT_EQ(browser.evalPlot()->seriesCount(), 0);
  EXPECT_TRUE(browser.evalPlot()->showsEmptyText());
  EXPECT_NE(browser.evalPlot()->emptyText().indexOf("no evaluation"), -1);
  EXPECT_FALSE(browser.lossPlot()->showsEmptyText());
  ASSERT_TRUE(browser.selectRun(classifier));
  EXPECT_EQ(browser.evalPlot()->title(), "Held-out accuracy");
  EXPECT_EQ(browser.evalPlot()->seriesCount(), 1);
  EXPECT_FALSE(browser.evalPlot()->showsEmptyText());
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
  ASSERT_EQ(browser.runCount(), 2);
  EXPECT_TRUE(browser.setTags(a, "  baseline, it's \"quoted\" ,✓ "));
  EXPECT_TRUE(browser.setNotes(a, "notes'); DROP TABLE runs;--"));
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
  browser.refresh();
  EXPECT_EQ(browser.deleteRuns({b, live}, /*confirm=*/false), 1);
  EXPECT_NE(browser.lastError().find("run " + std::to_string(live) + " is still running"), std::string::npos) << browser.lastError();
  EXPECT_EQ(browser.runCount(), 2);
  pm::RunStore store(db);
  EXPECT_FALSE(store.getRun(b).has_value());
  EXPECT_EQ(store.countRows("metrics", b), 0);
  EXPECT_EQ(store.getRun(live)->status, "running");
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
  ASSERT_EQ(browser.runCount(), 3);
  auto* schedule = browser.findChild<QComboBox*>("scheduleFilter");
  auto* tag = browser.findChild<QComboBox*>("tagFilter");
  auto* status = browser.findChild<QComboBox*>("statusFilter");
  ASSERT_TRUE(schedule && tag && status);
  schedule->setCurrentText("pipemare");
  EXPECT_EQ(browser.runCount(), 2);
  ASSERT_GE(tag->findText("study"), 1);
  tag->setCurrentIndex(tag->findText("async"));
  EXPECT_EQ(browser.runCount(), 1);
  tag->setCurrentIndex(0);
  status->setCurrentText("diverged");
  EXPECT_EQ(browser.runCount(), 1);
  schedule->setCurrentIndex(0);
  status->setCurrentIndex(0);
  EXPECT_EQ(browser.runCount(), 3);
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
  browser.show();
  ASSERT_TRUE(browser.selectRun(ids[2]));
  browser.refresh();
  const QModelIndex current = browser.table()->selectionModel()->currentIndex();
  ASSERT_TRUE(current.isValid());
  EXPECT_EQ(browser.table()->model()->index(current.row(), pm::ui::RunsTableModel::Id).data().toLongLong(), ids[2]);
  EXPECT_EQ(browser.shownRun(), ids[2]);

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
  EXPECT_EQ(pm::RunStore(db).getRun(dead)->status, "running") << "neither a refresh nor a poll marks dead runs";
  EXPECT_EQ(watcher->markDeadRunsInterrupted(), 1);
  EXPECT_EQ(pm::RunStore(db).getRun(dead)->status, "interrupted");
  watcher->refresh();
  auto* model = browser.table()->model();
  int row = -1;
  for (int r = 0; r < model->rowCount(); ++r)
    if (model->index(r, pm::ui::RunsTableModel::Id).data().toLongLong() == dead) row = r;
  ASSERT_GE(row, 0);
  EXPECT_EQ(model->index(row, pm::ui::RunsTableModel::Status).data().toString().toStdString(), "interrupted");
}
