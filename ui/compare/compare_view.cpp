#include "ui/compare/compare_view.h"

#include <QCheckBox>
#include <QScrollBar>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>

#include "core/store/run_store.h"
#include "core/util/strings.h"
#include "ui/compare/compare_csv.h"
#include "ui/compare/smoothing.h"
#include "ui/compare/summary_table.h"
#include "ui/plots/curve_plot.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

namespace {

// Per-stage memory (stage<s>/mem/<category>): stored in bytes, shown in MiB.
bool isMemoryMetric(const QString& key) { return key.contains(QStringLiteral("/mem/")) || key.startsWith(QStringLiteral("mem/")); }


// Distinct series colours (matplotlib's tab10).
const QColor kPalette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                           {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
constexpr int kRunColumns = 7;  // id (checkable), name, status, schedule, model, P, N
const std::vector<MetricPoint> kNoPoints;

QString runLabel(const RunRecord& r) { return QStringLiteral("#%1 %2").arg(r.id).arg(QString::fromStdString(r.name)); }

}  // namespace

CompareView::CompareView(const std::string& dbPath, QWidget* parent) : CompareView(new StoreWatcher(dbPath), parent) {
  watcher_->setParent(this);
}

CompareView::CompareView(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent),
      watcher_(watcher),
      runList_(new QTreeWidget(this)),
      metricBox_(new QComboBox(this)),
      xAxisBox_(new QComboBox(this)),
      smoothSlider_(new QSlider(Qt::Horizontal, this)),
      smoothSpin_(new QDoubleSpinBox(this)),
      baselineBox_(new QComboBox(this)),
      targetSpin_(new QDoubleSpinBox(this)),
      logY_(new QCheckBox(tr("log y"), this)),
      plot_(new CurvePlot(this)),
      table_(new QTableWidget(this)),
      status_(new QLabel(this)) {
  // ---- left: the runs
  runList_->setColumnCount(kRunColumns);
  runList_->setHeaderLabels({tr("Run"), tr("Name"), tr("Status"), tr("Schedule"), tr("Model"), tr("P"), tr("N")});
  runList_->setRootIsDecorated(false);
  runList_->setUniformRowHeights(true);
  // A sweep's runs share the experiment's name and differ in their "[field=value]" suffix: keep
  // both ends of a long name visible.
  runList_->setTextElideMode(Qt::ElideMiddle);
  runList_->setAlternatingRowColors(true);
  runList_->setSelectionMode(QAbstractItemView::SingleSelection);
  runList_->header()->setStretchLastSection(false);
  auto* filter = new QLineEdit(this);
  filter->setObjectName(QStringLiteral("runFilter"));
  filter->setPlaceholderText(tr("Filter runs..."));
  filter->setClearButtonEnabled(true);
  auto* refreshButton = new QPushButton(tr("Refresh"), this);
  auto* clearButton = new QPushButton(tr("Clear selection"), this);
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(new QLabel(tr("<b>Runs to compare</b> (tick to overlay)"), this));
  leftLayout->addWidget(filter);
  leftLayout->addWidget(runList_, 1);
  auto* leftButtons = new QHBoxLayout;
  leftButtons->addWidget(refreshButton);
  leftButtons->addWidget(clearButton);
  leftButtons->addStretch(1);
  leftLayout->addLayout(leftButtons);

  // ---- right: controls, plot, summary
  metricBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  metricBox_->setMinimumContentsLength(16);
  for (XAxis a : {XAxis::Step, XAxis::Samples, XAxis::Updates, XAxis::WallTime})
    xAxisBox_->addItem(tr(xAxisName(a)), static_cast<int>(a));
  smoothSlider_->setRange(0, 99);
  smoothSlider_->setMinimumWidth(120);
  smoothSpin_->setRange(0, 0.99);
  smoothSpin_->setSingleStep(0.05);
  smoothSpin_->setDecimals(2);
  smoothSpin_->setToolTip(tr("Exponential moving average weight (0 = raw). Applied to the full-resolution data "
                             "for display only; the summary and the stored values are unsmoothed."));
  smoothSlider_->setToolTip(smoothSpin_->toolTip());
  baselineBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  baselineBox_->setMinimumContentsLength(14);
  baselineBox_->setToolTip(tr("Ratios in the summary are each run's value divided by this run's"));
  targetSpin_->setRange(0, 1);
  targetSpin_->setSingleStep(0.05);
  targetSpin_->setDecimals(3);
  targetSpin_->setSpecialValueText(tr("auto"));  // shown at 0
  targetSpin_->setValue(target_);
  targetSpin_->setToolTip(tr("Time to target: wall time at which eval/accuracy first reaches this value. "
                             "auto (0): the baseline run's best accuracy - 0.01, as `pipemare compare` takes it"));
  auto* exportPlotButton = new QPushButton(tr("Export plot..."), this);
  auto* exportCsvButton = new QPushButton(tr("Export CSV..."), this);

  auto* row1 = new QHBoxLayout;
  row1->addWidget(new QLabel(tr("Metric"), this));
  row1->addWidget(metricBox_);
  row1->addSpacing(8);
  row1->addWidget(new QLabel(tr("X axis"), this));
  row1->addWidget(xAxisBox_);
  row1->addSpacing(8);
  row1->addWidget(new QLabel(tr("Smoothing"), this));
  row1->addWidget(smoothSlider_, 1);
  row1->addWidget(smoothSpin_);
  row1->addWidget(logY_);
  auto* row2 = new QHBoxLayout;
  row2->addWidget(new QLabel(tr("Baseline"), this));
  row2->addWidget(baselineBox_);
  row2->addSpacing(8);
  row2->addWidget(new QLabel(tr("Accuracy target"), this));
  row2->addWidget(targetSpin_);
  row2->addStretch(1);
  row2->addWidget(exportPlotButton);
  row2->addWidget(exportCsvButton);

  table_->setColumnCount(1 + kSummaryFieldCount);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(false);
  auto* tableBox = new QWidget(this);
  auto* tableLayout = new QVBoxLayout(tableBox);
  tableLayout->setContentsMargins(0, 0, 0, 0);
  tableLayout->addWidget(new QLabel(tr("<b>Summary</b> (unsmoothed data; against the baseline run: ×ratio, accuracy "
                                       "in points; green = better, red = worse)"),
                                    this));
  tableLayout->addWidget(table_, 1);

  plot_->setMinimumHeight(260);
  auto* vsplit = new QSplitter(Qt::Vertical, this);
  vsplit->addWidget(plot_);
  vsplit->addWidget(tableBox);
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 2);
  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addLayout(row1);
  rightLayout->addLayout(row2);
  rightLayout->addWidget(vsplit, 1);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({430, 850});
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  // ---- behaviour
  connect(filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    filterText_ = text;
    applyFilter();
  });
  connect(runList_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int) { onRunChecked(item); });
  connect(refreshButton, &QPushButton::clicked, this, &CompareView::refresh);
  connect(clearButton, &QPushButton::clicked, this, [this] { setSelectedRuns({}); });
  connect(metricBox_, &QComboBox::currentIndexChanged, this, [this](int) {
    if (!updating_) setMetric(metricBox_->currentText());
  });
  connect(xAxisBox_, &QComboBox::currentIndexChanged, this, [this](int) {
    if (!updating_) setXAxis(static_cast<XAxis>(xAxisBox_->currentData().toInt()));
  });
  connect(smoothSlider_, &QSlider::valueChanged, this, [this](int v) {
    if (!updating_) setSmoothing(v / 100.0);
  });
  connect(smoothSpin_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (!updating_) setSmoothing(v);
  });
  connect(baselineBox_, &QComboBox::currentIndexChanged, this, [this](int) {
    if (!updating_ && baselineBox_->currentIndex() >= 0) setBaseline(baselineBox_->currentData().toLongLong());
  });
  connect(targetSpin_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (!updating_) setAccuracyTarget(v);
  });
  connect(logY_, &QCheckBox::toggled, this, [this](bool on) {
    plot_->setLogY(on);
    plot_->replot();
  });
  connect(exportPlotButton, &QPushButton::clicked, this, &CompareView::exportPlotDialog);
  connect(exportCsvButton, &QPushButton::clicked, this, &CompareView::exportCsvDialog);

  // The watcher's poll: new, deleted or changed runs are re-read; while a selected run is running,
  // its data at every poll.
  connect(watcher_, &StoreWatcher::runsChanged, this, &CompareView::refresh);
  connect(watcher_, &StoreWatcher::activeRunsPolled, this, [this] {
    const bool live = std::any_of(selected_.begin(), selected_.end(), [this](int64_t id) {
      auto it = data_.find(id);
      return it != data_.end() && it->second.record.status == "running";
    });
    if (live) refresh();
  });
  refresh();
}

CompareView::~CompareView() = default;

QColor CompareView::colorOf(int64_t runId) const {
  const auto it = colorSlot_.find(runId);
  return kPalette[(it == colorSlot_.end() ? 0 : it->second) % std::size(kPalette)];
}

void CompareView::assignColors() {
  for (auto it = colorSlot_.begin(); it != colorSlot_.end();)
    it = std::binary_search(selected_.begin(), selected_.end(), it->first) ? std::next(it) : colorSlot_.erase(it);
  for (int64_t id : selected_) {
    if (colorSlot_.count(id)) continue;
    std::set<size_t> used;
    for (const auto& [run, slot] : colorSlot_) used.insert(slot);
    size_t slot = 0;
    while (used.count(slot)) ++slot;
    colorSlot_[id] = slot;
  }
}

void CompareView::setFilterText(const QString& text) { findChild<QLineEdit*>(QStringLiteral("runFilter"))->setText(text); }

void CompareView::applyFilter() {
  for (int i = 0; i < runList_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* it = runList_->topLevelItem(i);
    bool match = filterText_.isEmpty();
    for (int c = 0; c < kRunColumns && !match; ++c) match = it->text(c).contains(filterText_, Qt::CaseInsensitive);
    it->setHidden(!match);
  }
}

void CompareView::showError(const QString& message) {
  status_->setText(QStringLiteral("<span style='color:#b00'>%1</span>").arg(message.toHtmlEscaped()));
}

void CompareView::refresh() {
  try {
    RunStore* store = watcher_->storeOrThrow();  // nullptr: no store file yet, no runs
    runs_ = store ? store->listRuns() : std::vector<RunRecord>{};
    std::set<int64_t> known;
    for (const auto& r : runs_) known.insert(r.id);
    selected_.erase(std::remove_if(selected_.begin(), selected_.end(), [&](int64_t id) { return !known.count(id); }),
                    selected_.end());
    assignColors();
    loadSelected();
    lastError_.clear();
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
  }
  redrawAll();
}

void CompareView::redrawAll() {
  reloadRunList();
  syncControls();
  rebuildPlot();
  rebuildSummary();
}

void CompareView::loadSelected() {
  for (auto it = data_.begin(); it != data_.end();)
    it = std::binary_search(selected_.begin(), selected_.end(), it->first) ? std::next(it) : data_.erase(it);
  RunStore* store = watcher_->store();
  if (!store) return;
  // A run that has ended keeps its curves: only runs still going, or whose status changed, are
  // read again; the others take the fresh record (tags and notes may have been edited).
  std::map<int64_t, const RunRecord*> fresh;
  for (const auto& r : runs_) fresh[r.id] = &r;
  for (int64_t id : selected_) {
    auto it = data_.find(id);
    const auto f = fresh.find(id);
    const bool stale = it == data_.end() || !isTerminalStatus(it->second.record.status) ||
                       (f != fresh.end() && it->second.record.status != f->second->status);
    if (stale) {
      data_[id] = loadRunData(*store, id);
      ++runLoads_;
    } else if (f != fresh.end()) {
      it->second.record = *f->second;
    }
  }
}

void CompareView::setSelectedRuns(const std::vector<int64_t>& runIds) {
  if (!watcher_->store()) {
    refresh();
    if (!watcher_->store()) return;  // no store file, or it did not open: refresh() kept why in lastError()
  }
  std::set<int64_t> known;
  for (const auto& r : runs_) known.insert(r.id);
  std::set<int64_t> ids;
  for (int64_t id : runIds)
    if (known.count(id)) ids.insert(id);
  selected_.assign(ids.begin(), ids.end());
  assignColors();
  try {
    loadSelected();
    lastError_.clear();
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
  }
  redrawAll();
}

std::vector<int64_t> CompareView::selectedRuns() const { return selected_; }

QStringList CompareView::availableMetrics() const {
  std::set<std::string> keys;
  for (const auto& [id, d] : data_)
    for (const auto& [key, pts] : d.metrics)
      if (!pts.empty()) keys.insert(key);
  QStringList out;
  for (const auto& k : keys) out << QString::fromStdString(k);
  // Numbers in order: stage2 before stage10.
  std::stable_sort(out.begin(), out.end(), [](const QString& a, const QString& b) { return naturalLess(a.toStdString(), b.toStdString()); });
  return out;
}

bool CompareView::setMetric(const QString& key) {
  if (!availableMetrics().contains(key)) return false;
  metric_ = key;
  syncControls();
  rebuildPlot();
  return true;
}

QString CompareView::metric() const { return metric_; }

void CompareView::setXAxis(XAxis axis) {
  xAxis_ = axis;
  syncControls();
  rebuildPlot();
}

void CompareView::setSmoothing(double alpha) {
  smoothing_ = std::clamp(std::isfinite(alpha) ? alpha : 0.0, 0.0, 0.99);
  syncControls();
  rebuildPlot();
}

bool CompareView::setBaseline(int64_t runId) {
  if (!std::binary_search(selected_.begin(), selected_.end(), runId)) return false;
  baseline_ = runId;
  syncControls();
  rebuildSummary();
  return true;
}

void CompareView::setAccuracyTarget(double target) {
  target_ = target;
  syncControls();
  rebuildSummary();
}

const std::vector<MetricPoint>& CompareView::storedPoints(int64_t runId, const std::string& key) const {
  auto it = data_.find(runId);
  return it == data_.end() ? kNoPoints : it->second.metric(key);
}

void CompareView::reloadRunList() {
  updating_ = true;
  const int64_t current =
      runList_->currentItem() ? runList_->currentItem()->data(0, Qt::UserRole).toLongLong() : int64_t{0};
  const int scroll = runList_->verticalScrollBar()->value();  // the rebuild must not move the list under the mouse
  runList_->clear();
  QList<QTreeWidgetItem*> items;
  for (const auto& r : runs_) {
    auto* it = new QTreeWidgetItem;
    it->setText(0, QStringLiteral("#%1").arg(r.id));
    it->setData(0, Qt::UserRole, QVariant::fromValue<qlonglong>(r.id));
    it->setText(1, QString::fromStdString(r.name));
    it->setText(2, QString::fromStdString(r.status));
    it->setText(3, QString::fromStdString(r.schedule));
    it->setText(4, QString::fromStdString(r.model));
    it->setText(5, r.stages ? QString::number(r.stages) : QString());
    it->setText(6, r.microbatches ? QString::number(r.microbatches) : QString());
    it->setToolTip(1, QString::fromStdString(r.name));
    if (!r.status_message.empty()) it->setToolTip(2, QString::fromStdString(r.status_message));
    it->setFlags(it->flags() | Qt::ItemIsUserCheckable);
    const auto pos = std::lower_bound(selected_.begin(), selected_.end(), r.id);
    const bool on = pos != selected_.end() && *pos == r.id;
    it->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
    it->setIcon(0, colorSwatch(on ? colorOf(r.id) : QColor()));
    items << it;
  }
  runList_->addTopLevelItems(items);
  for (int c = 0; c < kRunColumns; ++c) runList_->resizeColumnToContents(c);
  runList_->setColumnWidth(1, std::min(runList_->columnWidth(1), 140));
  for (auto* it : items)
    if (it->data(0, Qt::UserRole).toLongLong() == current) runList_->setCurrentItem(it);
  applyFilter();  // the filter typed still applies to the rebuilt list
  runList_->verticalScrollBar()->setValue(scroll);
  updating_ = false;
}

void CompareView::onRunChecked(QTreeWidgetItem* item) {
  if (updating_ || !item) return;
  std::vector<int64_t> ids;
  for (int i = 0; i < runList_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* it = runList_->topLevelItem(i);
    if (it->checkState(0) == Qt::Checked) ids.push_back(it->data(0, Qt::UserRole).toLongLong());
  }
  // Called from the list's own signal: rebuild it afterwards, not while it is emitting.
  QTimer::singleShot(0, this, [this, ids] { setSelectedRuns(ids); });
}

void CompareView::syncControls() {
  updating_ = true;
  const QStringList metrics = availableMetrics();
  if (!metrics.isEmpty() && !metrics.contains(metric_))
    metric_ = metrics.contains(QStringLiteral("train/loss")) ? QStringLiteral("train/loss") : metrics.front();
  metricBox_->clear();
  metricBox_->addItems(metrics);
  metricBox_->setCurrentIndex(static_cast<int>(metrics.indexOf(metric_)));
  xAxisBox_->setCurrentIndex(xAxisBox_->findData(static_cast<int>(xAxis_)));
  smoothSlider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  smoothSpin_->setValue(smoothing_);
  targetSpin_->setValue(target_);

  if (!std::binary_search(selected_.begin(), selected_.end(), baseline_))
    baseline_ = selected_.empty() ? 0 : selected_.front();
  baselineBox_->clear();
  for (int64_t id : selected_) {
    auto it = data_.find(id);
    if (it == data_.end()) continue;
    baselineBox_->addItem(runLabel(it->second.record), QVariant::fromValue<qlonglong>(id));
  }
  baselineBox_->setCurrentIndex(baselineBox_->findData(QVariant::fromValue<qlonglong>(baseline_)));
  updating_ = false;
}

void CompareView::rebuildPlot() {
  plot_->clear();
  plotted_.clear();
  const std::string key = metric_.toStdString();
  // Memory (stage<s>/mem/<category>) is stored in bytes and shown in MiB, as everywhere else.
  const bool memory = isMemoryMetric(metric_);
  const double yScale = memory ? 1.0 / (1024.0 * 1024.0) : 1.0;
  QStringList missing;
  size_t points = 0;
  for (size_t i = 0; i < selected_.size(); ++i) {
    auto dit = data_.find(selected_[i]);
    if (dit == data_.end()) continue;
    const RunData& d = dit->second;
    const auto& pts = d.metric(key);
    if (pts.empty()) {
      missing << QStringLiteral("#%1").arg(d.record.id);
      continue;
    }
    std::vector<double> raw(pts.size());
    for (size_t k = 0; k < pts.size(); ++k) raw[k] = pts[k].value * yScale;
    const std::vector<double> smooth = emaSmooth(raw, smoothing_);  // on the full data, in step order
    const std::vector<double> x = xValues(d, pts, xAxis_);
    std::vector<size_t> order;
    order.reserve(pts.size());
    for (size_t k = 0; k < pts.size(); ++k)
      if (std::isfinite(x[k])) order.push_back(k);
    // The plot wants x ascending; wall time from several processes may step back a little.
    if (!std::is_sorted(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; }))
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
    PlottedSeries s;
    s.runId = d.record.id;
    s.runName = QString::fromStdString(d.record.name);
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
    points += s.x.size();
    const int series = plot_->addSeries(runLabel(d.record), colorOf(d.record.id));
    plot_->setSeriesData(series, s.x, s.y);
    plotted_.push_back(std::move(s));
  }
  QString title = selected_.empty() ? tr("No runs ticked: tick runs on the left to overlay their curves") : metric_;
  if (smoothing_ > 0 && !selected_.empty()) title += tr("  (EMA %1)").arg(smoothing_, 0, 'f', 2);
  plot_->setTitle(title);
  plot_->setAxisLabels(tr(xAxisName(xAxis_)), memory ? tr("%1 (MiB)").arg(metric_) : metric_);
  plot_->setLogY(logY_->isChecked());
  plot_->replot();

  if (!lastError_.empty()) {
    showError(tr("Cannot read the run store: %1").arg(QString::fromStdString(lastError_)));
  } else if (selected_.empty()) {
    status_->setText(tr("Tick runs on the left (or select them in the Runs tab and press Ctrl+K) to compare them."));
  } else {
    QString text = tr("%1 run(s), %2 point(s) of %3 at full resolution").arg(selected_.size()).arg(points).arg(metric_);
    if (!missing.isEmpty()) text += tr("; no %1 in %2").arg(metric_, missing.join(QStringLiteral(", ")));
    if (xAxis_ == XAxis::Samples)
      for (const auto& s : plotted_)
        if (s.x.empty()) text += tr("; run #%1 has no train/samples").arg(s.runId);
    status_->setText(text);
  }
}

double CompareView::effectiveAccuracyTarget() const {
  if (target_ > 0) return target_;
  auto it = data_.find(baseline_);
  if (it == data_.end()) return NAN;
  const double best = summarizeRun(it->second, NAN).value(SummaryField::BestAccuracy);
  return std::isfinite(best) ? best - 0.01 : NAN;
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
  fillSummaryTable(table_, summaries_, colors, target);
}

std::optional<RunSummary> CompareView::summaryRow(int64_t runId) const {
  for (const auto& s : summaries_)
    if (s.runId == runId) return s;
  return std::nullopt;
}

QString CompareView::summaryCsvPath(const QString& csvPath) {
  QString base = csvPath;
  if (base.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) base.chop(4);
  return base + QStringLiteral("_summary.csv");
}

bool CompareView::exportPlot(const QString& path) { return plot_->save(path, 1200, 700); }

bool CompareView::exportCsv(const QString& path) {
  QByteArray out = "run_id,run_name,metric,step,x,value,smoothed\n";
  // Memory values are written as plotted, in MiB; the metric column says so.
  const QString metricField = csvField(isMemoryMetric(metric_) ? metric_ + QStringLiteral(" (MiB)") : metric_);
  for (const auto& s : plotted_) {
    const QString prefix = QStringLiteral("%1,%2,%3,").arg(s.runId).arg(csvField(s.runName), metricField);
    for (size_t k = 0; k < s.x.size(); ++k)
      out += (prefix + QStringLiteral("%1,%2,%3,%4\n")
                           .arg(s.steps[k])
                           .arg(csvNumber(s.x[k]), csvNumber(s.raw[k]), csvNumber(s.y[k])))
                 .toUtf8();
  }
  if (!writeFileAtomically(path, out)) return false;
  return writeFileAtomically(summaryCsvPath(path), summaryCsv(summaries_, data_, effectiveAccuracyTarget()));
}

void CompareView::exportPlotDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export plot"), QDir::home().filePath("compare.png"),
                                                    tr("PNG image (*.png);;PDF document (*.pdf)"));
  if (path.isEmpty()) return;
  if (exportPlot(path))
    status_->setText(tr("Plot saved to %1").arg(path));
  else
    showError(tr("Could not save the plot to %1").arg(path));
}

void CompareView::exportCsvDialog() {
  QString path = QFileDialog::getSaveFileName(this, tr("Export CSV"), QDir::home().filePath("compare.csv"),
                                              tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".csv");
  if (exportCsv(path))
    status_->setText(tr("Points saved to %1, summary to %2").arg(path, summaryCsvPath(path)));
  else
    showError(tr("Could not write %1").arg(path));
}

}  // namespace pm::ui
