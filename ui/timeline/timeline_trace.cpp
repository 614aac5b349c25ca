// What the Timeline view reads off a schedule trace's boxes (see timeline_trace.h).
#include "ui/timeline/timeline_trace.h"

#include <QObject>
#include <algorithm>
#include <cstdint>

#include "core/events/event.h"
#include "ui/plots/gantt_plot.h"

namespace pm::ui {

QString actionCounts(const std::vector<GanttBox>& boxes) {
  int f = 0, b = 0, s = 0, r = 0, other = 0;
  for (const auto& x : boxes) {
    if (x.action == "F") ++f;
    else if (x.action == "B") ++b;
    else if (x.action == "S") ++s;
    else if (x.action == "R") ++r;
    else ++other;
  }
  QString out = QObject::tr("F %1, B %2, S %3").arg(f).arg(b).arg(s);
  if (r > 0) out += QObject::tr(", recomputed ahead %1").arg(r);
  if (other > 0) out += QObject::tr(", communication %1").arg(other);
  // Utilization: compute time (F, B, S) over stages x makespan.
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
