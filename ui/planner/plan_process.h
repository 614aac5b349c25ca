#pragma once
// A `pipemare plan ... --events stdout` child process and what its events say (docs/events.md,
// "plan's stream"): its progress while it works, then its result (the document `--json` prints)
// or its error (message, place, exit code). The planner panel, its stability edge and the
// Timeline's prediction read these facts; the child's stderr is for people and is shown only
// where the process died without an error event (a crash). GUI thread only.
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>

namespace pm::ui {

class PlanProcess : public QObject {
  Q_OBJECT
 public:
  // `processName`: the objectName of its QProcess (tests find it by that name).
  PlanProcess(const QString& binary, const QString& processName, QObject* parent = nullptr);
  ~PlanProcess() override;

  // Starts `pipemare ARGS --events stdout` (a running one is killed first, unreported).
  void start(const QStringList& args);
  // Kills the running one; cancelled() follows once it is gone.
  void cancel();
  bool running() const { return proc_->state() != QProcess::NotRunning; }
  const QString& binary() const { return binary_; }
  const QStringList& args() const { return args_; }
  // The last result event's document (null before one, or after a failure).
  const nlohmann::json& result() const { return result_; }

 Q_SIGNALS:
  // A progress event: its phase, done of total (0 of 0 where it does not count) and its line.
  void progress(const QString& phase, qint64 done, qint64 total, const QString& message);
  // The result event came and the process exited 0: result() holds it.
  void finished();
  // No result: the error event's message and place (exit code 2 for bad input), or why there was
  // none (the process crashed, could not start, or said nothing readable; exit code -1).
  void failed(const QString& message, const QString& place, int exitCode);
  void cancelled();

 private:
  void readEvents();
  void ended(int exitCode, QProcess::ExitStatus status);
  QString binary_;
  QStringList args_;
  QProcess* proc_;
  QByteArray pending_;  // stdout after its last complete line
  nlohmann::json result_, error_;
  bool cancelling_ = false;
  bool discarding_ = false;  // a process killed for a new request: its end is not reported
};

}  // namespace pm::ui
