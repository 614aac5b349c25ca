#include "ui/compare/compare_view.h"
#include "core/analysis/run_labels.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/events/metric_keys.h"
#include "core/store/run_store.h"
#include "core/util/strings.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/metric_chooser.h"
#include "ui/store/store_watcher.h"

// The Compare view's state: the selection, the loaded data and the settings. Its widgets are built
// in compare_view_build.cpp, the run list is filled in compare_view_run_list.cpp, the plot, the
// summary and the exports in compare_view_output.cpp.
namespace pm::ui {

namespace {

const std::vector<MetricPoint> kNoPoints;

}  // namespace

QString CompareView::runLabel(const RunRecord& r) const {
  const auto it = labels_.find(r.id);
  if (it == labels_.end() || it->second.empty()) return QStringLiteral("#%1 %2").arg(r.id).arg(QString::fromStdString(r.name));
  return QStringLiteral("#%1 %2 \u00b7 %3").arg(r.id).arg(QString::fromStdString(it->second), QString::fromStdString(r.name));
}

void CompareView::refreshLabels() {
  std::vector<RunRecord> records;
  for (int64_t id : selected_)
    if (auto it = data_.find(id); it != data_.end()) records.push_back(it->second.record);
  labels_ = distinguishingLabels(records);
}

CompareView::CompareView(const std::string& dbPath, QWidget* parent) : CompareView(new StoreWatcher(dbPath), parent) {
  watcher_->setParent(this);
}

CompareView::CompareView(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent),
      watcher_(watcher),
      runList_(new QTreeWidget(this)),
      metricBox_(new MetricChooser(this)),
      secondBox_(new MetricChooser(this)),
      xAxisBox_(new QComboBox(this)),
      smoothSlider_(new QSlider(Qt::Horizontal, this)),
      smoothSpin_(new QDoubleSpinBox(this)),
      baselineBox_(new QComboBox(this)),
      targetSpin_(new QDoubleSpinBox(this)),
      logY_(new QCheckBox(tr("log y"), this)),
      plot_(new CurvePlot(this)),
      table_(new QTableWidget(this)),
      status_(new QLabel(this)) {
  QWidget* left = buildRunPanel();
  setUpControls();
  QWidget* right = buildResultsPanel();
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({430, 850});
  status_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split, 1);
  layout->addWidget(status_);
  connectControls();
  connectWatcher();
  refresh();
}

CompareView::~CompareView() = default;

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
  if (!store) {
    refreshLabels();
    return;
  }
  // A run that has ended keeps its curves: only runs still going, or whose status changed, are
  // read again; the others take the fresh record (tags and notes may have been edited).
  std::map<int64_t, const RunRecord*> fresh;
  for (const auto& r : runs_) fresh[r.id] = &r;
  for (int64_t id : selected_) {
    auto it = data_.find(id);
    const auto f = fresh.find(id);
    const bool stale = it == data_.end() || !isTerminal(it->second.record.status) ||
                       (f != fresh.end() && it->second.record.status != f->second->status);
    if (stale) {
      data_[id] = loadRunData(*store, id);
      ++runLoads_;
    } else if (f != fresh.end()) {
      it->second.record = *f->second;
    }
  }
  refreshLabels();  // the ticked runs and their records are what the labels are of
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

std::string CompareView::stageMetricRest(const std::string& key, int* stage) {
  if (key.rfind("stage", 0) != 0) return {};
  size_t i = 5;
  while (i < key.size() && std::isdigit(static_cast<unsigned char>(key[i]))) ++i;
  if (i == 5 || i >= key.size() || key[i] != '/') return {};
  if (stage) *stage = std::stoi(key.substr(5, i - 5));
  return key.substr(i + 1);
}

QStringList CompareView::availableMetrics() const {
  std::set<std::string> keys;
  for (const auto& [id, d] : data_)
    for (const auto& [key, pts] : d.metrics)
      if (!pts.empty()) keys.insert(key);
  // Each per-stage metric also for every stage at once, "stage*/utilization": one panel with a
  // series per stage of every ticked run.
  std::set<std::string> allStages;
  for (const auto& k : keys) {
    const std::string rest = stageMetricRest(k);
    if (!rest.empty()) allStages.insert(std::string(kAllStages) + rest);
  }
  keys.insert(allStages.begin(), allStages.end());
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

bool CompareView::setSecondMetric(const QString& key) {
  if (!key.isEmpty() && !availableMetrics().contains(key)) return false;
  secondMetric_ = key;
  syncControls();
  rebuildPlot();
  return true;
}

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
  baselineChosen_ = true;
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

void CompareView::syncControls() {
  updating_ = true;
  const QStringList metrics = availableMetrics();
  if (!metrics.isEmpty() && !metrics.contains(metric_))
    metric_ = metrics.contains(QString(metric::kTrainLoss)) ? QString(metric::kTrainLoss) : metrics.front();
  metricBox_->setMetrics(metrics, metric_);
  if (!secondMetric_.isEmpty() && !metrics.contains(secondMetric_)) secondMetric_.clear();
  secondBox_->setMetrics(metrics, secondMetric_);
  xAxisBox_->setCurrentIndex(xAxisBox_->findData(static_cast<int>(xAxis_)));
  smoothSlider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  smoothSpin_->setValue(smoothing_);
  targetSpin_->setValue(target_);

  // A baseline the user chose stays while its run is selected. Otherwise it is the first
  // selected finished run (a stopped or failed run's figures make poor ratios), else the first.
  if (!std::binary_search(selected_.begin(), selected_.end(), baseline_)) baselineChosen_ = false;
  if (!baselineChosen_) baseline_ = defaultBaseline();
  baselineBox_->clear();
  for (int64_t id : selected_) {
    auto it = data_.find(id);
    if (it == data_.end()) continue;
    baselineBox_->addItem(runLabel(it->second.record), QVariant::fromValue<qlonglong>(id));
  }
  baselineBox_->setCurrentIndex(baselineBox_->findData(QVariant::fromValue<qlonglong>(baseline_)));
  updating_ = false;
}

double CompareView::effectiveAccuracyTarget() const {
  if (target_ > 0) return target_;
  auto it = data_.find(baseline_);
  if (it == data_.end()) return NAN;
  const double best = summarizeRun(it->second, NAN).value(SummaryField::BestAccuracy);
  return std::isfinite(best) ? best - 0.01 : NAN;
}

std::optional<RunSummary> CompareView::summaryRow(int64_t runId) const {
  for (const auto& s : summaries_)
    if (s.runId == runId) return s;
  return std::nullopt;
}

int64_t CompareView::defaultBaseline() const {
  for (int64_t id : selected_) {
    auto it = data_.find(id);
    if (it != data_.end() && it->second.record.status == RunStatus::Finished) return id;
  }
  return selected_.empty() ? 0 : selected_.front();
}

}  // namespace pm::ui
