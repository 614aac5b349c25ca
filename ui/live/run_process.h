#pragma once
// Runs one experiment in the background as a child process (`pipemare run FILE --events stdout`)
// and turns its standard output into events. The GUI is a client of the engine: it never trains
// in its own process. GUI thread only (QProcess delivers output on the event loop).
#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>

namespace pm::ui {

class StoreWatcher;

// The `pipemare` executable the workbench starts (runs, plans): the one beside this program's own
// executable, where the build puts both (build/bin). Needs a QCoreApplication.
QString defaultPipemareBinary();

class RunProcess : public QObject {
  Q_OBJECT
 public:
  // pipemareBinary: path of the `pipemare` executable; dbPath: the run store.
  RunProcess(QString pipemareBinary, QString dbPath, QObject* parent = nullptr);
  ~RunProcess() override;

  // Starts `pipemare run experimentFile --events stdout --quiet --db dbPath [--name name] [extra]`.
  // An empty experimentFile is left out: `--resume RUN` in extraArgs names the run to continue
  // (the engine takes no file then).
  void start(const QString& experimentFile, const QString& runName = {}, const QStringList& extraArgs = {});
  // Asks the run to stop (SIGTERM: the launcher records status "stopped" and keeps all data).
  void stop();
  bool running() const;
  qint64 pid() const;
  int64_t runId() const { return runId_; }   // known after the first event that names it
  const QString& stderrText() const { return stderr_; }
  // Lets the child outlive this object (closing the window while leaving the run running).
  void detach();
  // The process's store connection (MainWindow's). When the child ends, before finished() is
  // emitted, the watcher marks runs whose launcher is gone as interrupted (a child killed with -9
  // leaves its record "running") and refreshes, so every view shows the run's end. Without one
  // (a view on its own) nothing is marked. Not used once this object is being destroyed.
  void setStoreWatcher(StoreWatcher* watcher);

 Q_SIGNALS:
  void event(const nlohmann::json& e);
  void finished(int exitCode, const QString& status);  // status from run_finished ("" if none)

 private:
  void readOutput();
  QString binary_, db_;
  QPointer<StoreWatcher> watcher_;
  QProcess* proc_;
  QByteArray buffer_;
  QString stderr_, status_;
  int64_t runId_ = 0;
  qint64 pid_ = 0;  // of the child, kept for messages after it is gone
  bool detached_ = false;
};

}  // namespace pm::ui
