#include "ui/planner/plan_process.h"

#include "core/events/event.h"
#include "core/util/errors.h"

namespace pm::ui {

using Json = nlohmann::json;

PlanProcess::PlanProcess(const QString& binary, const QString& processName, QObject* parent)
    : QObject(parent), binary_(binary), proc_(new QProcess(this)) {
  proc_->setObjectName(processName);
  connect(proc_, &QProcess::readyReadStandardOutput, this, &PlanProcess::readEvents);
  connect(proc_, &QProcess::finished, this, &PlanProcess::ended);
  // A planner that cannot start (binary missing or not executable) gives no finished signal.
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) Q_EMIT failed(tr("cannot start the planner %1: %2").arg(binary_, proc_->errorString()), QString(), -1);
  });
}

PlanProcess::~PlanProcess() {
  if (proc_->state() == QProcess::NotRunning) return;
  proc_->disconnect(this);
  proc_->kill();
  proc_->waitForFinished(2000);
}

void PlanProcess::start(const QStringList& args) {
  if (running()) {
    discarding_ = true;  // its end is not this request's
    proc_->kill();
    proc_->waitForFinished(2000);
    discarding_ = false;
  }
  args_ = args;
  pending_.clear();
  result_ = Json();
  error_ = Json();
  cancelling_ = false;
  proc_->start(binary_, args + QStringList{"--events", "stdout"});
}

void PlanProcess::cancel() {
  if (!running()) return;
  cancelling_ = true;
  proc_->kill();  // ended() follows and says so
}

void PlanProcess::readEvents() {
  pending_ += proc_->readAllStandardOutput();
  for (int nl = pending_.indexOf('\n'); nl >= 0; nl = pending_.indexOf('\n')) {
    const std::string line = pending_.left(nl).toStdString();
    pending_.remove(0, nl + 1);
    if (line.empty()) continue;
    Json e;
    try {
      e = parseEventLine(line);
    } catch (const Error&) {
      continue;  // not an event: none of plan's stdout lines should be
    }
    const std::string type = e.value("type", std::string());
    if (type == ev::kProgress)
      Q_EMIT progress(QString::fromStdString(e.value("phase", std::string())), e.value("done", qint64(0)), e.value("total", qint64(0)),
                      QString::fromStdString(e.value("message", std::string())));
    else if (type == ev::kResult && e.contains("result"))
      result_ = e["result"];
    else if (type == ev::kError)
      error_ = e;
  }
}

void PlanProcess::ended(int exitCode, QProcess::ExitStatus status) {
  if (discarding_) return;
  readEvents();
  if (cancelling_) {
    cancelling_ = false;
    Q_EMIT cancelled();
    return;
  }
  if (status == QProcess::NormalExit && exitCode == 0 && result_.is_object()) {
    Q_EMIT finished();
    return;
  }
  if (error_.is_object()) {
    Q_EMIT failed(QString::fromStdString(error_.value("message", std::string())), QString::fromStdString(error_.value("place", std::string())),
                  error_.value("exit_code", exitCode));
    return;
  }
  // No event says why: what the process wrote for people is all there is.
  const QString said = QString::fromUtf8(proc_->readAllStandardError()).trimmed();
  const QString why = status != QProcess::NormalExit ? tr("the planner process crashed")
                      : said.isEmpty()               ? tr("the planner exited with code %1 and no result").arg(exitCode)
                                                     : said;
  Q_EMIT failed(why, QString(), -1);
}

}  // namespace pm::ui
