// The Sweeps view: its widgets, the sweeps and axes to choose from, and keeping up with the store.
// The heat map itself is drawn in sweeps_view_grid.cpp.
#include "ui/sweeps/sweeps_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/store/run_store.h"
#include "ui/plots/heat_map.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// "1 run", "8 runs"
QString count(int n, const QString& one, const QString& many) { return QString::number(n) + ' ' + (n == 1 ? one : many); }

void selectData(QComboBox* box, const QString& data) {
  const int i = box->findData(data);
  if (i >= 0) box->setCurrentIndex(i);
}

}  // namespace

SweepsView::SweepsView(const std::string& dbPath, QWidget* parent) : SweepsView(new StoreWatcher(dbPath), parent) {
  watcher_->setParent(this);
}

SweepsView::SweepsView(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent),
      watcher_(watcher),
      sweepBox_(new QComboBox(this)),
      metricBox_(new QComboBox(this)),
      rowBox_(new QComboBox(this)),
      colBox_(new QComboBox(this)),
      refreshButton_(new QPushButton(tr("Refresh"), this)),
      fixedBar_(new QWidget(this)),
      fixedLayout_(new QHBoxLayout(fixedBar_)),
      map_(new HeatMap(this)),
      status_(new QLabel(this)) {
  sweepBox_->setObjectName("sweepBox");
  metricBox_->setObjectName("metricBox");
  rowBox_->setObjectName("rowKeyBox");
  colBox_->setObjectName("colKeyBox");
  refreshButton_->setObjectName("refreshButton");
  sweepBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  metricBox_->addItem(tr("final accuracy"), static_cast<int>(SweepMetric::FinalAccuracy));
  metricBox_->addItem(tr("final loss"), static_cast<int>(SweepMetric::FinalLoss));
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::RichText);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Sweep:"), this));
  top->addWidget(sweepBox_, 2);
  top->addSpacing(12);
  top->addWidget(new QLabel(tr("Metric:"), this));
  top->addWidget(metricBox_);
  top->addSpacing(12);
  top->addWidget(new QLabel(tr("Rows:"), this));
  top->addWidget(rowBox_, 1);
  top->addWidget(new QLabel(tr("Columns:"), this));
  top->addWidget(colBox_, 1);
  top->addSpacing(12);
  top->addWidget(refreshButton_);
  fixedLayout_->setContentsMargins(0, 0, 0, 0);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(fixedBar_);
  layout->addWidget(map_, 1);
  layout->addWidget(status_);

  connectSignals();
  refresh();
}

void SweepsView::connectSignals() {
  connect(refreshButton_, &QPushButton::clicked, this, &SweepsView::refresh);
  connect(sweepBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) sweepChosen();
  });
  connect(metricBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) rebuildGrid();
  });
  for (QComboBox* box : {rowBox_, colBox_})
    connect(box, &QComboBox::currentIndexChanged, this, [this] {
      if (updating_) return;
      rebuildAxes();
      rebuildGrid();
    });
  connect(map_, &HeatMap::cellClicked, this, &SweepsView::activateCell);
  // A sweep started from a terminal fills in while the tab is open: the watcher's poll reports new
  // and changed runs (re-read at once) and runs in progress (rebuilt only when what the grid shows
  // changed). A hidden view catches up when it is shown.
  connect(watcher_, &StoreWatcher::runsChanged, this, [this] {
    if (isVisible())
      refresh();
    else
      missedChange_ = true;
  });
  connect(watcher_, &StoreWatcher::activeRunsPolled, this, [this] {
    if (isVisible())
      refreshIfChanged();
    else
      missedProgress_ = true;
  });
}

void SweepsView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  const bool change = missedChange_, progress = missedProgress_;
  missedChange_ = missedProgress_ = false;
  if (change)
    refresh();
  else if (progress)
    refreshIfChanged();
}

namespace {
// What the grid shows of the runs: ids, statuses and final figures.
std::string runsSignature(const std::vector<RunRecord>& runs) {
  std::string s;
  for (const auto& r : runs)
    s += std::to_string(r.id) + toString(r.status) + r.sweep_id + std::to_string(r.final_loss) + std::to_string(r.final_accuracy) + ';';
  return s;
}
}  // namespace

bool SweepsView::refreshIfChanged() {
  if (!isVisible()) return false;
  try {
    RunStore* store = watcher_->store();
    if (!store || runsSignature(store->listRuns()) == runsSignature(runs_)) return false;
  } catch (const std::exception&) {
    return false;  // refresh() reports store errors when asked
  }
  refresh();
  return true;
}

SweepsView::~SweepsView() = default;

int SweepsView::sweepCount() const { return sweepBox_->count(); }
QString SweepsView::currentSweep() const { return sweepBox_->currentData().toString(); }
QString SweepsView::statusText() const { return status_->text(); }
SweepMetric SweepsView::metric() const { return static_cast<SweepMetric>(metricBox_->currentData().toInt()); }

bool SweepsView::setSweep(const QString& sweepId) {
  const int i = sweepBox_->findData(sweepId);
  if (i < 0) return false;
  sweepBox_->setCurrentIndex(i);  // sweepChosen() through the signal when it changes
  return true;
}

void SweepsView::setMetric(SweepMetric m) {
  const int i = metricBox_->findData(static_cast<int>(m));
  if (i >= 0) metricBox_->setCurrentIndex(i);
}

bool SweepsView::setAxes(const QString& rowKey, const QString& colKey) {
  const int r = rowKey.isEmpty() ? 0 : rowBox_->findData(rowKey);
  const int c = colKey.isEmpty() ? 0 : colBox_->findData(colKey);
  if (r < 0 || c < 0) return false;
  updating_ = true;
  rowBox_->setCurrentIndex(r);
  colBox_->setCurrentIndex(c);
  updating_ = false;
  rebuildAxes();
  rebuildGrid();
  return true;
}

void SweepsView::refresh() {
  try {
    RunStore* store = watcher_->storeOrThrow();  // nullptr: no store file yet, no sweeps
    runs_ = store ? store->listRuns() : std::vector<RunRecord>{};
    // A sweep's recorded grid never changes: read each once, not on every refresh.
    for (const auto& sw : listSweeps(runs_)) {
      if (grids_.count(sw.id)) continue;
      auto& grid = grids_[sw.id];  // stays empty for older sweeps and damaged definitions: the runs alone
      if (const auto def = store->sweepDefinition(sw.id)) try {
          grid = sweepDefinitionFromJson(*def, watcher_->dbPath()).grid;
        } catch (const std::exception&) {
        }
    }
    lastError_.clear();
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
    runs_.clear();
  }
  const QString keep = currentSweep();
  updating_ = true;
  sweepBox_->clear();
  for (const auto& s : listSweeps(runs_))
    sweepBox_->addItem(tr("%1  (%2)").arg(q(s.id), count(s.runs, tr("run"), tr("runs"))), q(s.id));
  const int i = sweepBox_->findData(keep);
  sweepBox_->setCurrentIndex(i >= 0 ? i : (sweepBox_->count() > 0 ? 0 : -1));
  updating_ = false;
  if (currentSweep() != keep || keys_.empty()) {
    sweepChosen();
  } else {
    keys_ = sweepKeys(sweepRuns());
    rebuildAxes();
    rebuildGrid();
  }
}

std::vector<RunRecord> SweepsView::sweepRuns() const {
  std::vector<RunRecord> out;
  const std::string id = currentSweep().toStdString();
  if (id.empty()) return out;
  for (const auto& r : runs_)
    if (r.sweep_id == id) out.push_back(r);
  const auto grid = grids_.find(id);
  if (grid != grids_.end() && !grid->second.empty())
    for (auto& r : notStartedPoints(out, grid->second)) out.push_back(std::move(r));
  return out;
}

void SweepsView::sweepChosen() {
  const auto runs = sweepRuns();
  keys_ = sweepKeys(runs);
  // Default metric: accuracy when some run has one, otherwise the loss.
  const bool anyAccuracy = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return std::isfinite(r.final_accuracy); });
  // Default axes: the first two swept keys that take more than one value (else the first keys).
  std::vector<std::string> varying;
  for (const auto& k : keys_)
    if (axisValues(runs, k).size() > 1) varying.push_back(k);
  if (varying.empty()) varying = keys_;
  updating_ = true;
  metricBox_->setCurrentIndex(anyAccuracy ? 0 : 1);
  for (QComboBox* box : {rowBox_, colBox_}) {
    box->clear();
    box->addItem(tr("(none)"), QString());
    for (const auto& k : keys_) box->addItem(q(k), q(k));
  }
  if (varying.size() >= 2) {
    selectData(rowBox_, q(varying[0]));
    selectData(colBox_, q(varying[1]));
  } else if (varying.size() == 1) {
    selectData(colBox_, q(varying[0]));  // one key: a single row
  }
  updating_ = false;
  rebuildAxes(/*keepChoices=*/false);
  rebuildGrid();
}

void SweepsView::rebuildAxes(bool keepChoices) {
  // A value chooser for every swept key on neither axis (keeping the values already chosen).
  // Never called from a chooser's own signal, so the old ones can go at once.
  std::map<std::string, QString> chosen;
  if (keepChoices)
    for (QComboBox* b : fixedBoxes_) chosen[b->objectName().toStdString()] = b->currentData().toString();
  while (QLayoutItem* item = fixedLayout_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  fixedBoxes_.clear();
  const auto runs = sweepRuns();
  const std::string rowKey = rowBox_->currentData().toString().toStdString();
  const std::string colKey = colBox_->currentData().toString().toStdString();
  for (const auto& k : keys_) {
    if (k == rowKey || k == colKey) continue;
    auto* label = new QLabel(q(k) + ":", fixedBar_);
    auto* box = new QComboBox(fixedBar_);
    box->setObjectName(q(k));
    box->addItem(tr("any (newest run)"), QString());
    const auto values = axisValues(runs, k);
    for (const auto& v : values) box->addItem(q(v), q(v));
    auto it = chosen.find(k);
    if (it != chosen.end())
      selectData(box, it->second);
    else if (values.size() > 1)
      box->setCurrentIndex(1);  // a varying key: its first value, so that each cell holds one run
    connect(box, &QComboBox::currentIndexChanged, this, [this] {
      if (!updating_) rebuildGrid();
    });
    fixedLayout_->addWidget(label);
    fixedLayout_->addWidget(box);
    fixedLayout_->addSpacing(12);
    fixedBoxes_.push_back(box);
  }
  fixedLayout_->addStretch(1);
  fixedBar_->setVisible(!fixedBoxes_.empty());
}

}  // namespace pm::ui
