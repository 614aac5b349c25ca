// The Timeline view's prediction: the `pipemare plan` child process run for the shown run, and
// reading the timeline it writes.
#include "ui/timeline/timeline_view.h"

#include <QFile>
#include <QProcess>
#include <QSpinBox>
#include <QStringList>
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <algorithm>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/store/run_store.h"
#include "ui/plots/gantt_plot.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

using Json = nlohmann::json;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// The planner's complaint without the program prefix; a JSON error object is reduced to its message.
QString readableError(const QString& stderrText, int exitCode) {
  QString text = stderrText.trimmed();
  if (text.startsWith('{')) {
    const Json j = Json::parse(text.toStdString(), nullptr, false);
    if (j.is_object())
      for (const char* key : {"error", "message", "problem"})
        if (j.contains(key) && j[key].is_string()) {
          text = q(j[key].get<std::string>());
          break;
        }
  }
  const QStringList lines = text.split('\n', Qt::SkipEmptyParts);
  text = lines.isEmpty() ? QString() : lines.last().trimmed();  // the last line says what went wrong
  for (const QString& prefix : {QStringLiteral("pipemare plan: "), QStringLiteral("error: ")})
    if (text.startsWith(prefix)) text = text.mid(prefix.size());
  if (text.isEmpty()) text = QObject::tr("the planner exited with code %1").arg(exitCode);
  return text;
}

// The boxes of a Chrome trace's complete ("X") events: stage from pid (else tid), times in seconds.
std::vector<GanttBox> traceBoxes(const Json& events) {
  std::vector<GanttBox> boxes;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("ph", std::string()) != "X") continue;
    const Json args = e.contains("args") && e["args"].is_object() ? e["args"] : Json::object();
    const int stage = e.contains("pid") ? e.value("pid", 0) : e.value("tid", 0);
    const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
    boxes.push_back({stage, q(args.value("action", e.value("name", std::string("?")))), args.value("mb", -1), ts * 1e-6,
                     (ts + dur) * 1e-6});
  }
  return boxes;
}

}  // namespace

void TimelineView::startPlanner() {
  if (chunked_) {
    planFailed(tr("the planner's timeline holds one stage per rank, and %1 ran several chunks on each rank; "
                  "pipemare plan --op-costs simulates its lists from per-op costs")
                   .arg(q(schedule_)));
    return;
  }
  const QString traceFile = tmp_->filePath("predicted-trace.json");
  QFile::remove(traceFile);
  against_ = false;
  if (!againstFailed_) {
    try {
      RunStore* store = watcher_->store();
      const auto rec = store ? store->getRun(shownRun_) : std::nullopt;
      against_ = rec && !rec->partition.empty();
    } catch (const std::exception&) {
      against_ = false;  // the model-based prediction below does not need the recorded partition
    }
  }
  plannedRun_ = shownRun_;
  if (against_) {
    planArgs_ = QStringList{"--db", q(watcher_->dbPath()), "plan", "--against", QString::number(shownRun_), "--trace-minibatches",
                            QString::number(minibatches_->value()), "--json", "--trace", traceFile};
    proc_->start(binary_, planArgs_);
    return;
  }
  // The run's experiment as a file for `plan --experiment`, as the Design tab plans a design: the
  // engine maps it to the planner's inputs (its partition, timing, context, update interval, plan row).
  const QString experimentFile = tmp_->filePath("run-experiment.json");
  QFile f(experimentFile);
  const QByteArray text = QByteArray::fromStdString(configJson_);
  if (!tmp_->isValid() || !f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size()) {
    planFailed(tr("cannot write the run's experiment to %1").arg(experimentFile));
    return;
  }
  f.close();
  planArgs_ = QStringList{"plan",   "--experiment", experimentFile, "--trace-minibatches", QString::number(minibatches_->value()),
                          "--json", "--trace",      traceFile};
  proc_->start(binary_, planArgs_);
}

void TimelineView::planFinished(int exitCode) {
  const QByteArray out = proc_->readAllStandardOutput();
  const QString err = QString::fromUtf8(proc_->readAllStandardError());
  if (pending_) {  // the request changed while planning: plan again, drop this answer
    pending_ = false;
    if (shownRun_ != 0 && !model_.empty()) startPlanner();
    return;
  }
  if (shownRun_ == 0 || plannedRun_ != shownRun_) return;  // an answer for another run than the one shown
  if (proc_->exitStatus() != QProcess::NormalExit) {
    planFailed(tr("the planner crashed (%1)").arg(binary_));
    return;
  }
  if (exitCode != 0 && against_) {  // e.g. a run recorded without F/B/S records: the model's prediction instead
    againstFailed_ = true;
    startPlanner();
    return;
  }
  if (exitCode != 0) {
    // A problem of the run's experiment names the temporary file it was handed over in.
    planFailed(readableError(err, exitCode).replace(tmp_->filePath("run-experiment.json"), tr("the run's experiment")));
    return;
  }
  const Json plan = Json::parse(out.toStdString(), nullptr, false);
  QFile f(tmp_->filePath("predicted-trace.json"));
  if (!f.open(QIODevice::ReadOnly)) {
    planFailed(tr("the planner wrote no trace"));
    return;
  }
  const Json t = Json::parse(f.readAll().toStdString(), nullptr, false);
  if (!t.is_object() || !t.contains("traceEvents") || !t["traceEvents"].is_array()) {
    planFailed(tr("the planner's trace is unreadable"));
    return;
  }
  const std::vector<GanttBox> boxes = traceBoxes(t["traceEvents"]);
  int stages = stages_;
  if (plan.is_object()) stages = std::max(stages, plan.value("stages", 0));
  showPrediction(boxes, stages);
  showMemory(plan);
}

// The categories `plan --against` sets side by side, in the engine's order.
void TimelineView::showMemory(const Json& plan) {
  memory_->setRowCount(0);
  if (!against_ || !plan.is_object() || !plan.contains("per_stage") || !plan["per_stage"].is_array()) {
    memoryLabel_->setText(tr("Memory per stage, predicted against measured: the planner compares them for a run with its "
                             "partition and trace recorded (plan --against); this prediction comes from the run's "
                             "experiment alone."));
    return;
  }
  constexpr double kMiB = 1048576.0;
  const auto number = [](const Json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
  };
  const auto cell = [](const QString& text, bool right = true) {
    auto* item = new QTableWidgetItem(text);
    if (right) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
  };
  for (const Json& st : plan["per_stage"]) {
    for (const char* cat : {"weights", "optimizer", "stash", "delta", "activations"}) {
      if (!st.contains(cat) || !st[cat].is_object()) continue;
      const double predicted = number(st[cat], "predicted"), measured = number(st[cat], "measured");
      if (!(predicted > 0) && !(measured > 0)) continue;  // a category this schedule does not hold
      const int row = memory_->rowCount();
      memory_->insertRow(row);
      memory_->setItem(row, 0, cell(QString::number(st.value("stage", 0))));
      memory_->setItem(row, 1, cell(QString::fromUtf8(cat), false));
      memory_->setItem(row, 2, cell(std::isfinite(predicted) ? QString::number(predicted / kMiB, 'f', 2) : QStringLiteral("-")));
      memory_->setItem(row, 3, cell(std::isfinite(measured) ? QString::number(measured / kMiB, 'f', 2) : QStringLiteral("-")));
      memory_->setItem(row, 4, cell(predicted > 0 && std::isfinite(measured) ? QString("%1x").arg(measured / predicted, 0, 'f', 2)
                                                                              : QStringLiteral("-")));
    }
  }
  memoryLabel_->setText(tr("Memory per stage, predicted by the planner for run %1's partition against the largest its stages "
                           "reported (MiB):")
                            .arg(shownRun_));
}

}  // namespace pm::ui
