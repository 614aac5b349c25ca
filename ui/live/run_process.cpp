#include "ui/live/run_process.h"

#include <signal.h>

#include <QCoreApplication>

#include "core/events/event.h"
#include "core/events/run_status.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

QString defaultPipemareBinary() { return QCoreApplication::applicationDirPath() + QStringLiteral("/pipemare"); }

RunProcess::RunProcess(QString pipemareBinary, QString dbPath, QObject* parent)
    : QObject(parent), binary_(std::move(pipemareBinary)), db_(std::move(dbPath)), proc_(new QProcess(this)) {
  connect(proc_, &QProcess::readyReadStandardOutput, this, &RunProcess::readOutput);
  connect(proc_, &QProcess::readyReadStandardError, this, [this] {
    stderr_ += QString::fromUtf8(proc_->readAllStandardError());
    if (stderr_.size() > 20000) stderr_ = stderr_.right(20000);
  });
  connect(proc_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus how) {
    readOutput();
    // A run process ended: runs whose launcher is gone (this one after kill -9 or a crash, whose
    // record still says "running") are marked interrupted now, through the process's connection.
    const int marked = watcher_ ? watcher_->markDeadRunsInterrupted() : 0;
    if (how == QProcess::CrashExit) {  // kill -9, a crash: no run_finished event, nothing on stderr says why
      stderr_ += tr("the pipemare run process (pid %1) was killed or crashed\n").arg(pid_);
      if (marked > 0) stderr_ += tr("the run is recorded as interrupted\n");
    }
    if (watcher_) watcher_->refresh();  // every view shows how the run ended
    Q_EMIT finished(code, status_);
  });
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError err) {
    if (err == QProcess::FailedToStart) {
      stderr_ += tr("cannot start %1: %2\n").arg(binary_, proc_->errorString());
      Q_EMIT finished(-1, QString::fromUtf8(toString(RunStatus::Failed)));
    }
  });
}

RunProcess::~RunProcess() {
  watcher_.clear();  // going away with its view or the window: no refresh for a child stopped now
  // Waiting for the child below delivers its last output and its end: none of it may reach an
  // owner that is being destroyed.
  disconnect(proc_, nullptr, this, nullptr);
  blockSignals(true);
  if (!detached_ && proc_->state() != QProcess::NotRunning) {
    proc_->terminate();
    if (!proc_->waitForFinished(5000)) {
      proc_->kill();  // it did not stop in time: never leave an orphan behind
      proc_->waitForFinished(2000);
    }
  }
}

void RunProcess::start(const QString& experimentFile, const QString& runName, const QStringList& extraArgs) {
  QStringList args{"run"};
  if (!experimentFile.isEmpty()) args << experimentFile;
  args << "--events" << "stdout" << "--quiet" << "--db" << db_;
  if (!runName.isEmpty()) args << "--name" << runName;
  args << extraArgs;
  // A view may start its run again (a resume in its own tab): nothing of the last process carries over.
  buffer_.clear();
  stderr_.clear();
  status_.clear();
  proc_->start(binary_, args);  // an argument vector, never a shell string
  pid_ = proc_->processId();
}

void RunProcess::setStoreWatcher(StoreWatcher* watcher) { watcher_ = watcher; }

void RunProcess::stop() {
  if (proc_->state() != QProcess::NotRunning) proc_->terminate();
}

bool RunProcess::running() const { return proc_->state() != QProcess::NotRunning; }
qint64 RunProcess::pid() const { return proc_->processId(); }

void RunProcess::detach() {
  detached_ = true;
  // Keep the child running after this object is gone: QProcess kills its child in its destructor,
  // so hand the QProcess to no one and let it leak with the (ending) GUI process.
  proc_->setParent(nullptr);
  disconnect(proc_, nullptr, this, nullptr);
}

void RunProcess::readOutput() {
  buffer_ += proc_->readAllStandardOutput();
  int nl;
  while ((nl = buffer_.indexOf('\n')) >= 0) {
    const std::string line = buffer_.left(nl).toStdString();
    buffer_.remove(0, nl + 1);
    if (line.empty() || line[0] != '{') continue;
    try {
      Json e = parseEventLine(line);
      if (e.contains("run") && e["run"].is_number_integer()) runId_ = e["run"].get<int64_t>();
      if (e.value("type", "") == ev::kRunFinished) status_ = QString::fromStdString(e.value("status", std::string()));
      Q_EMIT event(e);
    } catch (const std::exception& ex) {
      stderr_ += QString::fromStdString(std::string("unreadable event: ") + ex.what() + "\n");
    }
  }
}

}  // namespace pm::ui
