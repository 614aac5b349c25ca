// The Timeline view's prediction: the `pipemare plan` child process run for the shown run, and
// reading the timeline it writes.
#include "ui/timeline/timeline_view.h"

#include <QFile>
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
#include "ui/planner/plan_process.h"
#include "ui/plots/gantt_plot.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

using Json = nlohmann::json;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

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
                            QString::number(minibatches_->value()), "--trace", traceFile};
    proc_->start(planArgs_);
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
  planArgs_ = QStringList{"plan", "--experiment", experimentFile, "--trace-minibatches", QString::number(minibatches_->value()),
                          "--trace", traceFile};
  proc_->start(planArgs_);
}

// Whether the planner's answer is for another request than the one shown: the request changed
// while it planned (planned again now), or another run is shown.
bool TimelineView::answerIsStale() {
  if (pending_) {
    pending_ = false;
    if (shownRun_ != 0 && !model_.empty()) startPlanner();
    return true;
  }
  return shownRun_ == 0 || plannedRun_ != shownRun_;
}

// The planner gave no prediction: a run compared against its own costs falls back on the model's
// prediction; otherwise the planner's error is shown, naming the run's experiment rather than the
// temporary file it was handed over in.
void TimelineView::planEndedWithout(const QString& message, const QString& place, int exitCode) {
  if (answerIsStale()) return;
  if (against_ && exitCode >= 0) {  // e.g. a run recorded without F/B/S records: the model's prediction instead
    againstFailed_ = true;
    startPlanner();
    return;
  }
  const QString where = place.isEmpty() ? QString() : place + QStringLiteral(": ");
  planFailed(QString(where + message).replace(tmp_->filePath("run-experiment.json"), tr("the run's experiment")));
}

void TimelineView::planFinished() {
  if (answerIsStale()) return;
  const Json& plan = proc_->result();
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
