// The Sweeps view's heat map: the chosen sweep's grid, its cells' marks and tooltips, the status line
// under it, and opening a cell's run.
#include "ui/sweeps/sweeps_view.h"

#include <QComboBox>
#include <QLabel>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/analysis/stored_run.h"
#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/store/run_store.h"
#include "ui/plots/heat_map.h"

namespace pm::ui {

namespace {

// The accuracy of guessing for the sweep's data: 1/10 when its runs train on Fashion-MNIST (all of
// them), else 0 (the number of classes is not recorded apart from the model).
double chanceAccuracy(const std::vector<RunRecord>& runs) {
  bool all = !runs.empty();
  for (const auto& r : runs) {
    if (r.id == 0) continue;  // a point not started
    all = all && readStoredExperiment(r).experiment.data.dataset == DatasetKind::FashionMnist;
  }
  return all ? 0.1 : 0.0;
}

QColor markColor(const std::string& mark) {
  if (mark == "D") return QColor(214, 39, 40);     // diverged: red
  if (mark == "F") return QColor(80, 80, 80);      // failed: dark grey
  if (mark == "S") return QColor(255, 152, 48);    // stopped / interrupted: orange
  if (mark == kNotStartedMark) return QColor(225, 225, 225);  // not started: light grey
  if (!mark.empty()) return QColor(158, 202, 225);  // running: light blue
  return {};
}

QString q(const std::string& s) { return QString::fromStdString(s); }

// "1 run", "8 runs"
QString count(int n, const QString& one, const QString& many) { return QString::number(n) + ' ' + (n == 1 ? one : many); }

}  // namespace

// A grid point as the heat map shows it: its value or mark, and a tooltip on its run.
HeatCell SweepsView::heatCell(const SweepCell& c, const QString& metricName, SweepMetric m) const {
  HeatCell h;
  h.row = c.row;
  h.col = c.col;
  h.value = c.mark.empty() ? c.value : NAN;
  h.text = q(c.text);
  h.color = markColor(c.mark);
  if (c.mark == kNotStartedMark) {
    h.text = tr("not started");  // the mark alone, a dot, is easy to miss
    h.toolTip = tr("not started: the sweep stopped before this point\ncontinue the sweep with: pipemare sweep --resume %1")
                    .arg(currentSweep());
    return h;
  }
  QString tip = tr("run %1: %2\nstatus: %3").arg(c.runId).arg(q(c.runName)).arg(q(c.status));
  if (!c.message.empty()) tip += tr(" (%1)").arg(q(c.message));
  tip += tr("\n%1: %2").arg(metricName, q(formatMetric(c.value, m)));
  if (c.runs > 1) tip += tr("\n%1 runs at this point; the newest is shown").arg(c.runs);
  tip += tr("\nclick to open the run");
  h.toolTip = tip;
  return h;
}

// No sweep to show: why (none in the store, or the store cannot be read).
void SweepsView::showNoSweep() {
  grid_ = SweepGrid{};
  map_->clear();
  map_->setTitle(lastError_.empty() ? tr("No sweeps in this store") : tr("Cannot read the run store"));
  status_->setText(lastError_.empty()
                       ? tr("Run a sweep with <code>pipemare sweep EXPERIMENT --grid key=v1,v2 --grid key2=a,b</code>, "
                            "then press Refresh.")
                       : tr("<span style='color:#d62728'>%1</span>").arg(q(lastError_).toHtmlEscaped()));
}

void SweepsView::rebuildGrid() {
  const auto runs = sweepRuns();
  if (runs.empty()) {
    showNoSweep();
    return;
  }
  const SweepMetric m = metric();
  const std::string rowKey = rowBox_->currentData().toString().toStdString();
  const std::string colKey = colBox_->currentData().toString().toStdString();
  std::map<std::string, std::string> fixed;
  for (QComboBox* b : fixedBoxes_)
    if (!b->currentData().toString().isEmpty()) fixed[b->objectName().toStdString()] = b->currentData().toString().toStdString();
  grid_ = buildSweepGrid(runs, rowKey, colKey, m, fixed);

  const QString metricName = m == SweepMetric::FinalAccuracy ? tr("final accuracy") : tr("final loss");
  QStringList rowLabels, colLabels;
  for (const auto& v : grid_.rowValues) rowLabels << q(v);
  for (const auto& v : grid_.colValues) colLabels << q(v);
  QString axes;
  if (!rowKey.empty() && !colKey.empty()) axes = tr("rows %1, columns %2").arg(q(rowKey), q(colKey));
  else if (!rowKey.empty() || !colKey.empty()) axes = q(rowKey.empty() ? colKey : rowKey);
  QStringList at;
  for (const auto& [k, v] : fixed) at << q(k) + "=" + q(v);
  map_->setTitle(tr("Sweep %1: %2%3%4")
                     .arg(currentSweep(), metricName, axes.isEmpty() ? QString() : tr(" over ") + axes,
                          at.isEmpty() ? QString() : tr(" at ") + at.join(", ")));
  map_->setGrid(rowLabels, colLabels, q(rowKey), q(colKey));
  std::vector<HeatCell> cells;
  int marked = 0, shared = 0, running = 0, notStarted = 0;
  for (const auto& c : grid_.cells) {
    if (c.runId == 0 && c.mark != kNotStartedMark) continue;
    cells.push_back(heatCell(c, metricName, m));
    if (c.mark == kNotStartedMark) {
      ++notStarted;
      continue;
    }
    if (c.mark == "\xE2\x80\xA6") ++running;
    else if (!c.mark.empty()) ++marked;
    if (c.runs > 1) ++shared;
  }
  // Accuracy's scale starts at chance (Fashion-MNIST's ten classes: 0.1; 0 where the sweep's data
  // do not say), or lower where a run did worse, so that 0.95 beside 1.0 does not look bad; loss
  // keeps the sweep's own range. Only where values differ (one value has no scale).
  double lo = grid_.minValue;
  QString note;
  if (m == SweepMetric::FinalAccuracy && grid_.maxValue > grid_.minValue) {
    const double chance = chanceAccuracy(runs);
    if (chance < lo) {
      lo = chance;
      note = chance > 0 ? tr(" (from chance, %1)").arg(chance) : tr(" (from 0)");
    } else {
      note = tr(" (from the sweep's worst)");
    }
  }
  map_->setCells(cells, lo, grid_.maxValue, grid_.hasValues ? metricName : QString(),
                 /*invert=*/m == SweepMetric::FinalLoss, note);
  const int realRuns = static_cast<int>(std::count_if(runs.begin(), runs.end(), [](const RunRecord& r) { return r.id != 0; }));
  QString text = tr("%1 in the sweep, %2 shown")
                     .arg(count(realRuns, tr("run"), tr("runs")), count(grid_.filledCells(), tr("grid point"), tr("grid points")));
  if (running > 0) text += tr(", %1 running").arg(running);
  if (notStarted > 0) text += tr(", %1 not started").arg(notStarted);
  if (marked > 0) text += tr(", %1 not finished normally").arg(marked);
  if (shared > 0) text += tr(", %1 with several runs (the newest shown)").arg(count(shared, tr("point"), tr("points")));
  text += tr(". <b style='color:#d62728'>D</b> diverged, <b style='color:#505050'>F</b> failed, "
             "<b style='color:#e08a20'>S</b> stopped or interrupted, <b style='color:#4a90c0'>\u2026</b> running, "
             "<b style='color:#909090'>\u00b7</b> not started. "
             "Click a cell to open its run in the Runs tab.");
  status_->setText(text);
}

void SweepsView::activateCell(int row, int col) {
  const int64_t id = grid_.runAt(row, col);
  if (id != 0) Q_EMIT openRun(id);
}

}  // namespace pm::ui
