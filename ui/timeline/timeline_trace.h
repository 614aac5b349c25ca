#pragma once
// What the Timeline view reads off a schedule trace's boxes (measured or predicted): the actions
// by kind and the utilization for its summary lines, the stages it spans, and the minibatches it
// holds. GUI thread only (the boxes hold QStrings).
#include <QString>
#include <vector>

namespace pm::ui {

struct GanttBox;

// "F 40, B 40, S 10, communication 90" (BI and W instead of B for a split backward), then the
// utilization: compute time (F, B, BI, W, S, R) over
// stages x makespan.
QString actionCounts(const std::vector<GanttBox>& boxes);

// The stages the boxes span, at least `atLeast` and at least 1.
int traceStages(const std::vector<GanttBox>& boxes, int atLeast);

// Minibatches in the measured trace: from the last microbatch stage 0 ran forward (counting
// optimizer steps would read N times too many for pipedream, which steps per microbatch).
int tracedMinibatches(const std::vector<GanttBox>& boxes, int microbatches);

}  // namespace pm::ui
