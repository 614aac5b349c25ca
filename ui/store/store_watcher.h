#pragma once
// The workbench's one connection to the run store, and the one poll that tells the views when the
// store changed. SQLite's POSIX locks belong to the process: any open and close of the store file
// outside SQLite drops the locks this connection holds, and another process may then checkpoint
// and delete the write-ahead log under it (the views stop seeing new runs). One connection, one
// poll and one place that touches the file keep that simple: there is one StoreWatcher per process (MainWindow makes it and hands it to
// every view; a view made on its own, as in tests, makes one for itself) and every view reads and
// writes through store(); none opens the store file itself.
//
// GUI thread only: the connection (a pm::RunStore, one per thread) is used only from the thread
// that made the watcher, and the signals are emitted there, directly to the connected views.
//
// Opening is lazy and never creates the store: the file is looked for with stat (it is never
// opened by hand) at construction, on each poll and when a view asks for store(). While it does
// not exist, store() is nullptr and lastError() is empty (nothing recorded yet, not an error); the
// first poll after a run process made it opens it and emits runsChanged(). A file that does not
// open (not a store, damaged, a newer schema, locked) leaves store() nullptr and lastError()
// saying why; storeOrThrow() rethrows that error for the views to show, and the next poll,
// refresh() or markDeadRunsInterrupted() tries again. Opens for writing when the file allows it,
// else read-only (RunStore::openForReading).
//
// Its own files are watched too: should this process drop its locks all the same (a library that
// opens and closes the store's files: Qt's file dialog reading file types is one, see
// file_dialogs.h), another process closing the store deletes the write-ahead log and its index
// under this connection, which then sees no new run. Each poll and refresh() checks that the -wal
// and -shm files this connection opened are still the ones on disk; when they are not, it drops
// the connection and opens a new one (reconnects() counts these), and the views re-read.
//
// Dead runs ("running" records of this host whose launcher process is gone) are marked
// interrupted when the connection opens and when markDeadRunsInterrupted() is called (a run
// process of the Live tab ended, the user asked to refresh): never on a poll.
#include <QObject>
#include <QString>
#include <exception>
#include <memory>
#include <string>

class QTimer;

namespace pm {
class RunStore;
}

namespace pm::ui {

class StoreWatcher : public QObject {
  Q_OBJECT
 public:
  static constexpr int kPollIntervalMs = 2000;

  // dbPath: the store file (--db); ":memory:" opens a private in-memory store, "" none at all.
  // Opens the store when the file exists, marks dead runs and starts the poll.
  explicit StoreWatcher(const std::string& dbPath, QObject* parent = nullptr);
  ~StoreWatcher() override;

  const std::string& dbPath() const { return path_; }
  // What a view with nothing to show says while the store has no runs: how to make the first one
  // (the command names this store when it is not `pipemare run`'s default).
  QString noRunsText() const;
  // The process's connection; nullptr while the file does not exist or does not open. Owned by
  // the watcher: callers never keep it beyond the call that uses it.
  RunStore* store();
  // As store(), for reading: nullptr when the file does not exist yet (nothing to list); throws
  // the StoreError that kept an existing file from opening.
  RunStore* storeOrThrow();
  // For writing (tags, notes, delete): as storeOrThrow(), and a missing file throws StoreError too.
  RunStore& requireStore();
  // Why the store did not open, or why the latest poll could not read it; "" when all is well.
  const std::string& lastError() const { return lastError_; }
  int polls() const { return polls_; }  // polls done (tests)
  // Connections dropped because their write-ahead log or its index was deleted under them.
  int reconnects() const { return reconnects_; }

  // Marks runs whose launcher process is gone as interrupted; returns how many changed (0 when
  // there is no store, it is read-only, or the write failed: lastError() says why). Does not emit:
  // the caller refresh()es when the views should show it at once (the next poll sees it anyway).
  int markDeadRunsInterrupted();

 public Q_SLOTS:
  // Re-reads now and emits runsChanged() whether or not something changed (F5, File > Refresh
  // runs, a run process ended, this process wrote through store()).
  void refresh();
  // What the timer calls every kPollIntervalMs: one listing of the runs, compared with the last.
  // Emits at most one of the two signals.
  void poll();

 Q_SIGNALS:
  // The runs differ from the last poll (a run came or went; its status, name, tags, notes or sweep
  // changed), the store opened, its error appeared or cleared, or refresh() was called. Views
  // re-read what they show.
  void runsChanged();
  // A poll found no such change but runs in progress: their rows (metrics, traces, logs, final
  // figures) may have grown since. Views that show a running run re-read it.
  void activeRunsPolled();

 private:
  bool open();    // true when the connection is open (opening it when the file exists and was not tried since the last poll)
  bool reread();  // lists the runs; true when they differ from the last listing
  int markDead();
  // True when the connection's -wal or -shm file differs from the file on disk (deleted, or
  // replaced by another process's new one); the connection is then dropped, to be opened again.
  bool dropStaleConnection();

  // A file of the store's connection as it was when the connection opened (absent: not tracked).
  struct FileId {
    bool present = false;
    unsigned long long dev = 0, ino = 0;
  };
  static FileId fileId(const std::string& path);

  std::string path_;
  std::unique_ptr<RunStore> store_;
  std::exception_ptr openError_;  // why the file did not open (null: it did, or it does not exist)
  bool openTried_ = false;        // an open failed since the last poll: views' store() calls do not retry
  std::string lastError_;
  std::string fingerprint_;  // what runsChanged() compares: each run's id, status, name, tags, notes, sweep
  bool active_ = false;      // some run was "running" at the last listing
  int markedAtOpen_ = 0;     // dead runs marked when the connection opened
  FileId wal_, shm_;         // the connection's write-ahead log and its index, as opened
  int reconnects_ = 0;
  QTimer* timer_;
  int polls_ = 0;
};

}  // namespace pm::ui
