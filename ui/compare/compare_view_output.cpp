// The Compare view's output: the overlay plot, the summary table and the CSV / image exports.
#include "ui/compare/compare_view.h"

#include <QCheckBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <algorithm>
#include <cmath>

#include "ui/compare/compare_csv.h"
#include "ui/compare/smoothing.h"
#include "ui/compare/summary_table.h"
#include "ui/plots/curve_plot.h"
#include "ui/store/file_dialogs.h"

namespace pm::ui {

namespace {

// Per-stage memory (stage<s>/mem/<category>): stored in bytes, shown in MiB.
bool isMemoryMetric(const QString& key) { return key.contains(QStringLiteral("/mem/")) || key.startsWith(QStringLiteral("mem/")); }

// One run's points of a metric as plotted: values scaled by yScale, smoothed on the full data in
// step order (when the series is long enough to smooth), then ordered by x; points whose x is
// not finite are left out.
CompareView::PlottedSeries toSeries(const RunData& d, const std::vector<MetricPoint>& pts, double yScale, double smoothing,
                                    XAxis axis) {
  std::vector<double> raw(pts.size());
  for (size_t k = 0; k < pts.size(); ++k) raw[k] = pts[k].value * yScale;
  const bool smoothed = smoothingApplies(raw, smoothing);
  const std::vector<double> smooth = smoothed ? emaSmooth(raw, smoothing) : raw;  // on the full data, in step order
  const std::vector<double> x = xValues(d, pts, axis);
  std::vector<size_t> order;
  order.reserve(pts.size());
  for (size_t k = 0; k < pts.size(); ++k)
    if (std::isfinite(x[k])) order.push_back(k);
  // The plot wants x ascending; wall time from several processes may step back a little.
  if (!std::is_sorted(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; }))
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  CompareView::PlottedSeries s;
  s.runId = d.record.id;
  s.runName = QString::fromStdString(d.record.name);
  s.smoothed = smoothed;
  s.steps.reserve(order.size());
  s.x.reserve(order.size());
  s.raw.reserve(order.size());
  s.y.reserve(order.size());
  for (size_t k : order) {
    s.steps.push_back(pts[k].step);
    s.x.push_back(x[k]);
    s.raw.push_back(raw[k]);
    s.y.push_back(smooth[k]);
  }
  return s;
}

}  // namespace

void CompareView::rebuildPlot() {
  plot_->clear();
  plotted_.clear();
  QStringList missing, unsmoothed;
  size_t points = 0;
  bool anySmoothed = false;
  const QString weight = QString::number(smoothing_, 'g', 2);  // 0.6, 0.95: as typed (two decimals)
  // The metric on the left axis, and the second one (if chosen) dashed on the right axis: a
  // series then names its metric.
  const bool two = !secondMetric_.isEmpty() && secondMetric_ != metric_;
  for (const QString& metricKey : two ? QStringList{metric_, secondMetric_} : QStringList{metric_}) {
    const bool right = metricKey != metric_;
    const std::string key = metricKey.toStdString();
    // Memory (stage<s>/mem/<category>) is stored in bytes and shown in MiB, as everywhere else.
    const double yScale = isMemoryMetric(metricKey) ? 1.0 / (1024.0 * 1024.0) : 1.0;
    // "stage*/KEY": every stage's KEY of each run, the run's colour, a line style per stage.
    const bool allStages = key.rfind(kAllStages, 0) == 0;
    const std::string rest = allStages ? key.substr(std::string(kAllStages).size()) : std::string();
    constexpr Qt::PenStyle kStageStyles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine, Qt::DashDotDotLine};
    for (size_t i = 0; i < selected_.size(); ++i) {
      auto dit = data_.find(selected_[i]);
      if (dit == data_.end()) continue;
      const RunData& d = dit->second;
      // (stage, points) to draw: the metric itself, or each stage's.
      std::vector<std::pair<int, const std::vector<MetricPoint>*>> parts;
      if (allStages) {
        for (const auto& [k, pts] : d.metrics) {
          int stage = 0;
          if (!pts.empty() && stageMetricRest(k, &stage) == rest) parts.push_back({stage, &pts});
        }
        std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      } else if (!d.metric(key).empty()) {
        parts.push_back({-1, &d.metric(key)});
      }
      if (parts.empty()) {
        missing << (two ? QStringLiteral("%1 in #%2").arg(metricKey).arg(d.record.id) : QStringLiteral("#%1").arg(d.record.id));
        continue;
      }
      for (const auto& [stage, pts] : parts) {
        PlottedSeries s = toSeries(d, *pts, yScale, smoothing_, xAxis_);
        s.metric = metricKey;
        points += s.x.size();
        QString name = runLabel(d.record);
        if (stage >= 0) name += tr(", stage %1").arg(stage);
        if (two) name = QStringLiteral("%1: %2").arg(metricKey, name);
        // A smoothed series says so in the legend and keeps its stored values faded under it.
        if (s.smoothed) name = tr("%1 (smoothed %2)").arg(name, weight);
        const Qt::PenStyle style = stage >= 0 ? kStageStyles[(stage + (right ? 1 : 0)) % 5] : right ? Qt::DashLine : Qt::SolidLine;
        const int series = plot_->addSeries(name, colorOf(d.record.id), style, right);
        plot_->setSeriesData(series, s.x, s.y);
        if (s.smoothed) plot_->setSeriesRawData(series, s.x, s.raw);
        anySmoothed = anySmoothed || s.smoothed;
        if (smoothing_ > 0 && !s.smoothed) unsmoothed << QStringLiteral("#%1").arg(d.record.id);
        plotted_.push_back(std::move(s));
      }
    }
  }
  auto axisName = [](const QString& key) { return isMemoryMetric(key) ? tr("%1 (MiB)").arg(key) : key; };
  QString title = selected_.empty() ? tr("No runs ticked: tick runs on the left to overlay their curves")
                  : two             ? tr("%1 (left) and %2 (right, dashed)").arg(metric_, secondMetric_)
                                    : metric_;
  if (anySmoothed) title += tr("  (EMA %1)").arg(weight);
  plot_->setTitle(title);
  plot_->setAxisLabels(tr(xAxisName(xAxis_)), axisName(metric_), two ? axisName(secondMetric_) : QString());
  plot_->setLogY(logY_->isChecked());
  plot_->replot();
  showPlotStatus(points, missing, unsmoothed);
}

void CompareView::showPlotStatus(size_t points, const QStringList& missing, const QStringList& unsmoothed) {
  if (!lastError_.empty()) {
    showError(tr("Cannot read the run store: %1").arg(QString::fromStdString(lastError_)));
  } else if (selected_.empty()) {
    status_->setText(tr("Tick runs on the left (or select them in the Runs tab and press Ctrl+K) to compare them."));
  } else {
    const QString shown = secondMetric_.isEmpty() || secondMetric_ == metric_ ? metric_ : tr("%1 and %2").arg(metric_, secondMetric_);
    QString text = tr("%1 run(s), %2 point(s) of %3 at full resolution").arg(selected_.size()).arg(points).arg(shown);
    if (!missing.isEmpty())
      text += shown == metric_ ? tr("; no %1 in %2").arg(metric_, missing.join(QStringLiteral(", ")))
                               : tr("; missing: %1").arg(missing.join(QStringLiteral(", ")));
    if (!unsmoothed.isEmpty())
      text += tr("; %1 not smoothed (fewer than %2 points)").arg(unsmoothed.join(QStringLiteral(", "))).arg(kMinPointsToSmooth);
    if (xAxis_ == XAxis::Samples)
      for (const auto& s : plotted_)
        if (s.x.empty()) text += tr("; run #%1 has no train/samples").arg(s.runId);
    status_->setText(text);
  }
}

void CompareView::rebuildSummary() {
  summaries_.clear();
  const double target = effectiveAccuracyTarget();
  for (int64_t id : selected_) {
    auto it = data_.find(id);
    if (it != data_.end()) summaries_.push_back(summarizeRun(it->second, target));
  }
  auto base = std::find_if(summaries_.begin(), summaries_.end(), [&](const RunSummary& s) { return s.runId == baseline_; });
  if (base != summaries_.end()) {
    const RunSummary b = *base;
    for (auto& s : summaries_) applyBaseline(s, b);
  }

  std::vector<QColor> colors;
  for (const auto& row : summaries_)
    colors.push_back(colorOf(row.runId));
  fillSummaryTable(table_, summaries_, colors, target, labels_);
}

QString CompareView::summaryCsvPath(const QString& csvPath) {
  QString base = csvPath;
  if (base.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) base.chop(4);
  return base + QStringLiteral("_summary.csv");
}

// A failed export says which file and why (a missing or read-only folder), in the status line.
bool CompareView::exportPlot(const QString& path) {
  if (plot_->save(path, 1200, 700)) {
    status_->setText(tr("Plot saved to %1").arg(path));
    return true;
  }
  const QString why = writeProblem(path);
  showError(tr("Could not save the plot to %1: %2")
                .arg(path, why.isEmpty() ? tr("the image could not be written (PNG, or PDF for a .pdf file)") : why));
  return false;
}

bool CompareView::exportCsv(const QString& path) {
  QByteArray out = "run_id,run_name,metric,step,x,value,smoothed\n";
  // Memory values are written as plotted, in MiB; the metric column says so. Both metrics of the
  // panel, each row naming its own.
  for (const auto& s : plotted_) {
    const QString metricField = csvField(isMemoryMetric(s.metric) ? s.metric + QStringLiteral(" (MiB)") : s.metric);
    const QString prefix = QStringLiteral("%1,%2,%3,").arg(s.runId).arg(csvField(s.runName), metricField);
    for (size_t k = 0; k < s.x.size(); ++k)
      out += (prefix + QStringLiteral("%1,%2,%3,%4\n")
                           .arg(s.steps[k])
                           .arg(csvNumber(s.x[k]), csvNumber(s.raw[k]), csvNumber(s.y[k])))
                 .toUtf8();
  }
  const QString summaryPath = summaryCsvPath(path);
  QString why;
  if (!writeFileAtomically(path, out, &why)) {
    showError(tr("Could not write %1: %2").arg(path, why));
    return false;
  }
  if (!writeFileAtomically(summaryPath, summaryCsv(summaries_, data_, effectiveAccuracyTarget()), &why)) {
    showError(tr("Could not write %1: %2").arg(summaryPath, why));
    return false;
  }
  status_->setText(tr("Points saved to %1, summary to %2").arg(path, summaryPath));
  return true;
}

// The buttons: a file dialog, then the export, which reports in the status line.
void CompareView::exportPlotDialog() {
  const QString path = saveFileName(this, FileKind::Export, tr("Export plot"), QStringLiteral("compare.png"),
                                    tr("PNG image (*.png);;PDF document (*.pdf)"), QDir::homePath());
  if (!path.isEmpty()) exportPlot(path);
}

void CompareView::exportCsvDialog() {
  QString path = saveFileName(this, FileKind::Export, tr("Export CSV"), QStringLiteral("compare.csv"), tr("CSV (*.csv)"),
                              QDir::homePath());
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".csv");
  exportCsv(path);
}

}  // namespace pm::ui
