// The store watcher: the workbench's one connection to the run store, its poll and its signals;
// and the fault it exists for: a process whose SQLite locks are dropped (any open and close of the
// store file outside that connection) loses its write-ahead log to the next process that closes
// the store, and its views stop seeing new runs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <QAction>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QPushButton>
#include <QKeySequence>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTreeWidget>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/store/run_store.h"
#include "core/util/errors.h"
#include "tests/support/test_support.h"
#include "tests/ui/store_files.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/compare/compare_view.h"
#include "ui/main/main_window.h"
#include "ui/runs/runs_browser.h"
#include "ui/runs/runs_table_model.h"
#include "ui/store/store_watcher.h"
#include "ui/timeline/timeline_view.h"

namespace fs = std::filesystem;

namespace {

const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));
const QString kTiny = QString::fromStdString(pm::test::experimentPath("tiny-synthetic.json"));
const char* kConfig = R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})";

// A folder of this test, by its canonical path: /proc names open files by their canonical path.
using pm::test::TempDir;

using pm::test::contains;
using pm::test::deadPid;
using pm::test::deletedStoreFiles;
using pm::test::joined;
using pm::test::openStoreFiles;
using pm::test::runEngine;
using pm::test::statusShown;

}  // namespace

// Looking does not create a store; once one exists, a poll opens it and reports a change once;
// a run in progress is reported at each poll without a change; refresh() always reports.
TEST(StoreWatcher, OpensOnlyAnExistingStoreAndReportsEachChangeOnce) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  pm::ui::StoreWatcher watcher(db);
  QSignalSpy changed(&watcher, &pm::ui::StoreWatcher::runsChanged);
  QSignalSpy active(&watcher, &pm::ui::StoreWatcher::activeRunsPolled);
  EXPECT_EQ(watcher.store(), nullptr);
  EXPECT_EQ(watcher.storeOrThrow(), nullptr);
  EXPECT_TRUE(watcher.lastError().empty()) << watcher.lastError();
  EXPECT_THROW(watcher.requireStore(), pm::StoreError);
  watcher.poll();
  EXPECT_FALSE(fs::exists(db)) << "the watcher created the store by looking";
  EXPECT_EQ(changed.count(), 0);

  pm::RunStore other(db);  // another connection (this process): the writer
  const int64_t id = other.createRun("one", kConfig);
  watcher.poll();
  ASSERT_NE(watcher.store(), nullptr) << watcher.lastError();
  EXPECT_EQ(changed.count(), 1) << "the store opened";
  watcher.poll();
  EXPECT_EQ(changed.count(), 1);
  EXPECT_EQ(active.count(), 0);

  other.markRunning(id, static_cast<int64_t>(::getpid()));
  watcher.poll();
  EXPECT_EQ(changed.count(), 2) << "the status changed";
  EXPECT_EQ(active.count(), 0) << "one signal per poll";
  other.appendMetric(id, "train/loss", 1, 0, 1.0);
  other.flush();
  watcher.poll();
  EXPECT_EQ(changed.count(), 2) << "a new metric row is progress, not a change of the runs";
  EXPECT_EQ(active.count(), 1);
  other.setNotes(id, "noted");
  watcher.poll();
  EXPECT_EQ(changed.count(), 3) << "notes changed";
  other.setStatus(id, "finished");
  watcher.poll();
  EXPECT_EQ(changed.count(), 4);
  const int progress = active.count();
  watcher.poll();
  EXPECT_EQ(changed.count(), 4);
  EXPECT_EQ(active.count(), progress) << "no run in progress";
  watcher.refresh();
  EXPECT_EQ(changed.count(), 5);
  EXPECT_EQ(watcher.polls(), 8);
}

// A file that is not a store: store() is nullptr, the error names the file, and the views get it
// from storeOrThrow() (as the Runs tab shows it).
TEST(StoreWatcher, AStoreThatDoesNotOpenIsReportedNotCreated) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "not-a-store.db").string();
  {
    std::ofstream f(db);
    f << "this is not a database, just text that is long enough to have a header";
  }
  pm::ui::StoreWatcher watcher(db);
  EXPECT_EQ(watcher.store(), nullptr);
  EXPECT_NE(watcher.lastError().find("not-a-store.db"), std::string::npos) << watcher.lastError();
  EXPECT_THROW(watcher.storeOrThrow(), pm::StoreError);
  pm::ui::RunsBrowser browser(&watcher);
  EXPECT_EQ(browser.runCount(), 0);
  EXPECT_NE(browser.lastError().find("not-a-store.db"), std::string::npos) << browser.lastError();
}

// Dead runs are marked interrupted when the connection opens and when asked (a run process ended,
// F5), never on a poll: a poll only reads.
TEST(StoreWatcher, MarksDeadRunsAtStartAndWhenAskedNeverOnAPoll) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  int64_t before = 0, after = 0;
  {
    pm::RunStore store(db);
    before = store.createRun("died before the watcher", kConfig);
    store.markRunning(before, deadPid());
  }
  pm::ui::StoreWatcher watcher(db);
  ASSERT_NE(watcher.store(), nullptr) << watcher.lastError();
  EXPECT_EQ(watcher.store()->getRun(before)->status, pm::RunStatus::Interrupted) << "marked when the connection opened";
  {
    pm::RunStore store(db);
    after = store.createRun("died while watched", kConfig);
    store.markRunning(after, deadPid());
  }
  watcher.poll();
  watcher.poll();
  EXPECT_EQ(watcher.store()->getRun(after)->status, pm::RunStatus::Running) << "a poll marked a dead run";
  EXPECT_EQ(watcher.markDeadRunsInterrupted(), 1);
  EXPECT_EQ(watcher.store()->getRun(after)->status, pm::RunStatus::Interrupted);
  EXPECT_EQ(watcher.markDeadRunsInterrupted(), 0);
}

// The negative control of the check below: this process opens and closes the store file by hand
// (as a hand-written header check would) while its connection is open, which drops that
// connection's POSIX locks; another process then writes and, the last connection to close,
// checkpoints and deletes the write-ahead log and its index under this process's connection.
// /proc/self/fd shows them "(deleted)".
TEST(StoreWatcher, FdCheckSeesTheLogDeletedOnceThisProcessDroppedItsLocks) {
  pm::test::app();
  ASSERT_TRUE(QFile::exists(kPipemare)) << "no pipemare binary at " << kPipemare.toStdString();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  {
    pm::RunStore store(db);
    store.createRun("first", kConfig);
  }
  pm::ui::StoreWatcher watcher(db);
  ASSERT_NE(watcher.store(), nullptr) << watcher.lastError();
  ASSERT_TRUE(contains(openStoreFiles(db), db + "-wal")) << joined(openStoreFiles(db));
  ASSERT_TRUE(deletedStoreFiles(db).empty()) << joined(deletedStoreFiles(db));
  {
    std::ifstream f(db, std::ios::binary);  // the fault: any descriptor of the file, closed
    char header[16] = {};
    f.read(header, sizeof header);
  }
  QString output;
  ASSERT_TRUE(runEngine({"--db", QString::fromStdString(db), "runs", "tag", "1", "control"}, &output)) << output.toStdString();
  const auto deleted = deletedStoreFiles(db);
  EXPECT_TRUE(contains(deleted, db + "-wal (deleted)")) << joined(openStoreFiles(db));
  EXPECT_TRUE(contains(deleted, db + "-shm (deleted)")) << joined(openStoreFiles(db));

  // The watcher's next poll sees that its files are gone, drops the connection and opens a new
  // one: the tag the other process wrote is seen, and nothing of the store is open as deleted.
  EXPECT_EQ(watcher.reconnects(), 0);
  QSignalSpy changed(&watcher, &pm::ui::StoreWatcher::runsChanged);
  watcher.poll();
  EXPECT_EQ(watcher.reconnects(), 1);
  EXPECT_EQ(changed.count(), 1) << "the views were not told to re-read";
  ASSERT_NE(watcher.store(), nullptr) << watcher.lastError();
  const auto run = watcher.store()->getRun(1);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->tags, std::vector<std::string>{"control"});
  EXPECT_TRUE(deletedStoreFiles(db).empty()) << joined(openStoreFiles(db));
  watcher.poll();
  EXPECT_EQ(watcher.reconnects(), 1) << "a sound connection was dropped";
}

// The workbench keeps its one connection while, eight times over, other connections create and
// finish runs and close: one in this process, then a `pipemare run` of a tiny experiment in
// another, the last to close. Each time the Runs tab shows both runs finished without being asked
// (the watcher's poll), the Compare and Timeline tabs list them too, and this process has none of
// the store's files open as deleted (the write-ahead log kept). File > Refresh runs (F5) then shows
// a new run at once and marks a dead launcher's run interrupted.
TEST(StoreWatcher, WorkbenchKeepsItsLogWhileOtherConnectionsComeAndGo) {
  pm::test::app();
  ASSERT_TRUE(QFile::exists(kPipemare)) << "no pipemare binary at " << kPipemare.toStdString();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  {
    pm::RunStore store(db);
    store.setStatus(store.createRun("before the window", kConfig), "finished");
  }
  pm::ui::MainWindow w(db, {}, kPipemare);
  w.resize(1200, 800);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  pm::ui::RunsBrowser* browser = w.runsBrowser();
  ASSERT_EQ(browser->runCount(), 1) << browser->lastError();
  pm::RunStore* const connection = w.storeWatcher()->store();
  ASSERT_NE(connection, nullptr) << w.storeWatcher()->lastError();
  ASSERT_TRUE(contains(openStoreFiles(db), db + "-wal")) << joined(openStoreFiles(db));

  const int kIterations = 8;
  for (int i = 0; i < kIterations; ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    int64_t mine = 0;
    {
      pm::RunStore other(db);  // another connection of this process
      mine = other.createRun("in-process " + std::to_string(i), kConfig);
      other.markRunning(mine, static_cast<int64_t>(::getpid()));
      other.appendMetric(mine, "train/loss", 1, 0, 1.0);
      other.flush();
      other.setStatus(mine, "finished");
    }
    const QString name = QStringLiteral("engine %1").arg(i);
    QString output;
    ASSERT_TRUE(runEngine({"run", kTiny, "--db", QString::fromStdString(db), "--quiet", "--name", name, "--set",
                           "training.steps=4"},
                          &output))
        << output.toStdString();

    const int runs = 1 + 2 * (i + 1);
    int traced = 0;  // runs with a schedule trace: the Timeline tab's list
    {
      pm::RunStore reader(db, /*readOnly=*/true);  // one more connection of this process, closed at once
      for (const auto& r : reader.listRuns()) traced += reader.countRows("trace", r.id) > 0 ? 1 : 0;
    }
    // The Runs, Compare and Timeline tabs catch up at the watcher's next polls, unasked.
    const bool shown = QTest::qWaitFor(
        [&] {
          return statusShown(browser, mine) == "finished" && statusShown(browser, 0, name) == "finished" &&
                 w.compareView()->runList()->topLevelItemCount() == runs && w.timelineView()->runCount() == traced;
        },
        20000);
    ASSERT_TRUE(shown) << "Runs tab: run " << mine << " " << statusShown(browser, mine).toStdString() << ", "
                       << name.toStdString() << " " << statusShown(browser, 0, name).toStdString() << " (" << browser->lastError()
                       << "); Compare lists " << w.compareView()->runList()->topLevelItemCount() << " of " << runs
                       << " runs; Timeline " << w.timelineView()->runCount() << " of " << traced;
    EXPECT_EQ(browser->runCount(), runs);
    EXPECT_EQ(w.storeWatcher()->store(), connection) << "the window opened another connection";
    const auto deleted = deletedStoreFiles(db);
    ASSERT_TRUE(deleted.empty()) << "open store files deleted under the window's connection: " << joined(deleted);
    ASSERT_TRUE(contains(openStoreFiles(db), db + "-wal")) << joined(openStoreFiles(db));
  }
  EXPECT_GT(w.storeWatcher()->polls(), 0);

  // File > Refresh runs, by its key (F5): a new run at once (before the key press returns, not at
  // the next poll), and a run whose launcher died marked interrupted.
  QAction* refresh = nullptr;
  for (QAction* a : w.findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(Qt::Key_F5)) refresh = a;
  ASSERT_NE(refresh, nullptr) << "no action has F5";
  QSignalSpy triggered(refresh, &QAction::triggered);
  int64_t late = 0, dead = 0;
  {
    pm::RunStore other(db);
    late = other.createRun("late", kConfig);
    dead = other.createRun("dead launcher", kConfig);
    other.markRunning(dead, deadPid());
  }
  ASSERT_TRUE(QApplication::activeWindow() == &w) << "F5 reaches only the active window";
  QTest::keyClick(&w, Qt::Key_F5);
  EXPECT_EQ(triggered.count(), 1) << "F5 did not trigger File > Refresh runs";
  EXPECT_EQ(statusShown(browser, late).toStdString(), "created");
  EXPECT_EQ(statusShown(browser, dead).toStdString(), "interrupted");
  EXPECT_TRUE(deletedStoreFiles(db).empty()) << joined(deletedStoreFiles(db));
}
