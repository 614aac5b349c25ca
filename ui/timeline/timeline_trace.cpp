// What the Timeline view reads off a schedule trace's boxes (see timeline_trace.h).
#include "ui/timeline/timeline_trace.h"

#include <QObject>
#include <QStringList>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "core/pipeline/trace_actions.h"
#include "ui/plots/gantt_plot.h"

namespace pm::ui {

QString actionCounts(const std::vector<GanttBox>& boxes) {
  // Counted by the names of the trace table: its compute rows by name, R as recomputed ahead,
  // communication (and any name the table lacks) together.
  std::map<std::string, int> n;
  int recomputed = 0, other = 0;
  for (const auto& x : boxes) {
    const TraceActionInfo* info = traceActionInfo(x.action.toStdString());
    if (!info || info->role == TraceRole::Communication) ++other;
    else if (info->role == TraceRole::Recompute) ++recomputed;
    else ++n[info->name];
  }
  const auto count = [&](ActionKind k) { return n[traceActionName(k)]; };
  const bool split = count(ActionKind::BackwardInput) + count(ActionKind::BackwardWeight) > 0 && count(ActionKind::Backward) == 0;
  QStringList parts;
  for (const ActionKind k : {ActionKind::Forward, ActionKind::Backward, ActionKind::BackwardInput,
                             ActionKind::BackwardWeight, ActionKind::Step}) {
    const bool splitPart = k == ActionKind::BackwardInput || k == ActionKind::BackwardWeight;
    if (k == ActionKind::Backward ? split : (splitPart && !split)) continue;
    parts << QStringLiteral("%1 %2").arg(QString::fromUtf8(traceActionName(k))).arg(count(k));
  }
  QString out = parts.join(QStringLiteral(", "));
  if (recomputed > 0) out += QObject::tr(", recomputed ahead %1").arg(recomputed);
  if (other > 0) out += QObject::tr(", communication %1").arg(other);
  // Utilization: compute time (F, B or BI and W, S) over stages x makespan.
  double t0 = 1e300, t1 = -1e300, busy = 0;
  int stages = 0;
  for (const auto& x : boxes) {
    t0 = std::min(t0, x.start);
    t1 = std::max(t1, x.end);
    stages = std::max(stages, x.stage + 1);
    if (isComputeTraceAction(x.action.toStdString())) busy += x.end - x.start;
  }
  if (!boxes.empty() && t1 > t0) out += QObject::tr("; utilization %1").arg(busy / (stages * (t1 - t0)), 0, 'f', 2);
  return out;
}

int traceStages(const std::vector<GanttBox>& boxes, int atLeast) {
  int n = atLeast;
  for (const auto& b : boxes) n = std::max(n, b.stage + 1);
  return std::max(1, n);
}

int tracedMinibatches(const std::vector<GanttBox>& boxes, int microbatches) {
  int64_t lastForward = -1;
  for (const auto& b : boxes)
    if (b.stage == 0 && b.action == "F") lastForward = std::max<int64_t>(lastForward, b.microbatch);
  return lastForward < 0 ? 1 : static_cast<int>(lastForward / std::max(1, microbatches) + 1);
}

}  // namespace pm::ui
