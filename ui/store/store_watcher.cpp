#include "ui/store/store_watcher.h"

#include <QTimer>
#include <QtGlobal>
#include <sys/stat.h>
#include <vector>

#include "core/store/run_store.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace pm::ui {

namespace {

bool isMemory(const std::string& path) { return path == ":memory:"; }

// What runsChanged() reports: the runs there are and what the views list of each. Final figures
// are left out (they move at every step of a running run: activeRunsPolled() covers those).
std::string fingerprintOf(const std::vector<RunRecord>& runs, bool* anyRunning) {
  std::string s;
  *anyRunning = false;
  for (const auto& r : runs) {
    s += std::to_string(r.id);
    s += '\x1f';
    s += toString(r.status);
    for (const std::string* f : {&r.status_message, &r.name, &r.notes, &r.sweep_id}) {
      s += '\x1f';
      s += *f;
    }
    for (const auto& t : r.tags) {
      s += '\x1d';
      s += t;
    }
    s += '\x1f';
    s += std::to_string(r.launcher_pid);
    s += '\x1e';
    if (r.status == RunStatus::Running) *anyRunning = true;
  }
  return s;
}

}  // namespace

StoreWatcher::StoreWatcher(const std::string& dbPath, QObject* parent)
    : QObject(parent), path_(dbPath), timer_(new QTimer(this)) {
  if (open()) reread();  // the listing the first poll compares with (opening marked the dead runs)
  connect(timer_, &QTimer::timeout, this, &StoreWatcher::poll);
  timer_->start(kPollIntervalMs);
}

StoreWatcher::~StoreWatcher() = default;

QString StoreWatcher::noRunsText() const {
  // A private store ("" or ":memory:") gets runs from the workbench alone.
  if (path_.empty() || isMemory(path_)) return tr("No runs yet: design an experiment in the Design tab and press Run.");
  const QString command = path_ == defaultDatabasePath()
                              ? QStringLiteral("pipemare run FILE")
                              : QStringLiteral("pipemare run FILE --db %1").arg(QString::fromStdString(path_));
  return tr("No runs yet: design an experiment in the Design tab and press Run, or run `%1`.").arg(command);
}

bool StoreWatcher::open() {
  if (store_) return true;
  if (path_.empty()) return false;
  // stat, not open: opening and closing any descriptor of the file would drop this process's locks.
  if (!isMemory(path_) && !fileExists(path_)) {
    openError_ = nullptr;
    lastError_.clear();
    return false;
  }
  if (openTried_) return false;  // failed since the last poll: retried by the next one
  openTried_ = true;
  try {
    store_ = isMemory(path_) ? std::make_unique<RunStore>(path_) : RunStore::openForReading(path_);
  } catch (const std::exception& e) {
    openError_ = std::current_exception();
    lastError_ = e.what();
    return false;
  }
  openError_ = nullptr;
  lastError_.clear();
  markedAtOpen_ = markDead();  // once per connection: runs whose launcher died while no front end watched
  // The connection has its log open now (opening read the schema): these are its files.
  wal_ = isMemory(path_) ? FileId{} : fileId(path_ + "-wal");
  shm_ = isMemory(path_) ? FileId{} : fileId(path_ + "-shm");
  return true;
}

StoreWatcher::FileId StoreWatcher::fileId(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return FileId{true, static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino)};
}

bool StoreWatcher::dropStaleConnection() {
  if (!store_) return false;
  bool stale = false;
  for (const auto& [mine, suffix] : {std::pair{&wal_, "-wal"}, std::pair{&shm_, "-shm"}}) {
    if (!mine->present) continue;
    const FileId now = fileId(path_ + suffix);
    stale = stale || !now.present || now.dev != mine->dev || now.ino != mine->ino;
  }
  if (!stale) return false;
  qWarning("pipemare-workbench: the run store's write-ahead log was deleted under this process's connection to %s "
           "(something in this process dropped its file locks); reconnecting",
           path_.c_str());
  store_.reset();
  wal_ = shm_ = FileId{};
  ++reconnects_;
  return true;
}

RunStore* StoreWatcher::store() { return open() ? store_.get() : nullptr; }

RunStore* StoreWatcher::storeOrThrow() {
  if (open()) return store_.get();
  if (openError_) std::rethrow_exception(openError_);
  return nullptr;
}

RunStore& StoreWatcher::requireStore() {
  if (RunStore* s = storeOrThrow()) return *s;
  throw StoreError(path_, "no run store here (the file does not exist)", true);
}

int StoreWatcher::markDead() {
  try {
    return store_->markDeadRunsInterrupted();
  } catch (const std::exception& e) {
    lastError_ = e.what();
    return 0;
  }
}

int StoreWatcher::markDeadRunsInterrupted() {
  if (store_) return markDead();
  openTried_ = false;  // asked for: a file that did not open is tried again
  return open() ? markedAtOpen_ : 0;  // opening marked them
}

bool StoreWatcher::reread() {
  try {
    bool running = false;
    std::string now = fingerprintOf(store_->listRuns(), &running);
    lastError_.clear();
    active_ = running;
    if (now == fingerprint_) return false;
    fingerprint_ = std::move(now);
    return true;
  } catch (const std::exception& e) {
    lastError_ = e.what();
    return false;
  }
}

void StoreWatcher::refresh() {
  dropStaleConnection();
  openTried_ = false;
  if (open()) reread();
  Q_EMIT runsChanged();
}

void StoreWatcher::poll() {
  ++polls_;
  openTried_ = false;
  const std::string errorBefore = lastError_;
  const bool wasOpen = store_ != nullptr && !dropStaleConnection();
  bool changed = false;
  if (open()) changed = reread() || !wasOpen;
  if (lastError_ != errorBefore) changed = true;  // the views show the problem, or stop showing it
  if (changed)
    Q_EMIT runsChanged();
  else if (store_ && active_)
    Q_EMIT activeRunsPolled();
}

}  // namespace pm::ui
