#include "ui/runs/runs_browser.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QShortcut>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QSignalBlocker>

#include <optional>
#include <set>
#include <QVBoxLayout>
#include <algorithm>

#include "core/events/metric_keys.h"
#include "core/config/choices.h"
#include "core/store/run_store.h"
#include "core/util/strings.h"
#include "ui/plots/curve_plot.h"
#include "ui/runs/run_details.h"
#include "ui/runs/runs_table_model.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

RunsBrowser::RunsBrowser(const std::string& dbPath, QWidget* parent) : RunsBrowser(new StoreWatcher(dbPath), parent) {
  watcher_->setParent(this);
}

RunsBrowser::RunsBrowser(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent),
      watcher_(watcher),
      model_(new RunsTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      filter_(new QLineEdit(this)),
      status_(new QComboBox(this)),
      schedule_(new QComboBox(this)),
      tag_(new QComboBox(this)),
      summary_(new QLabel(this)),
      lossPlot_(new CurvePlot(this)),
      accPlot_(new CurvePlot(this)),
      details_(new RunDetailsPane(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsTableModel::Id, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);

  filter_->setPlaceholderText(tr("Filter runs (name, model, schedule, tag, notes)..."));
  filter_->setClearButtonEnabled(true);
  status_->addItem(tr("any status"));
  for (RunStatus s : {RunStatus::Running, RunStatus::Finished, RunStatus::Stopped, RunStatus::Failed, RunStatus::Diverged,
                      RunStatus::Interrupted})
    status_->addItem(QString::fromUtf8(toString(s)));  // the store's name: the filter (RunFilter::status) as it is
  schedule_->addItem(tr("any schedule"));
  for (const std::string& name : scheduleNames()) schedule_->addItem(QString::fromStdString(name));
  tag_->addItem(tr("any tag"));
  tag_->setObjectName("tagFilter");
  schedule_->setObjectName("scheduleFilter");
  status_->setObjectName("statusFilter");

  auto* top = new QHBoxLayout;
  top->addWidget(filter_, 1);
  top->addWidget(status_);
  top->addWidget(schedule_);
  top->addWidget(tag_);
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addLayout(top);
  leftLayout->addWidget(table_, 1);
  noRuns_ = new QLabel(this);
  noRuns_->setObjectName(QStringLiteral("noRunsNote"));
  noRuns_->setWordWrap(true);
  noRuns_->setAlignment(Qt::AlignCenter);
  noRuns_->setTextInteractionFlags(Qt::TextSelectableByMouse);  // the command can be copied
  noRuns_->hide();
  leftLayout->addWidget(noRuns_, 1);
  leftLayout->addWidget(summary_);

  lossPlot_->setTitle(tr("Training loss"));
  lossPlot_->setAxisLabels(tr("step"), tr("loss"));
  accPlot_->setTitle(tr("Held-out accuracy"));
  accPlot_->setAxisLabels(tr("step"), tr("accuracy"));
  auto* plots = new QSplitter(Qt::Vertical, this);
  plots->addWidget(lossPlot_);
  plots->addWidget(accPlot_);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(plots);
  details_->hide();  // until a run is double-clicked
  split->addWidget(details_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split);

  connectSignals();
  refresh();
}

void RunsBrowser::connectSignals() {
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setFilterFixedString(text);
    updateSummary();  // the count of runs shown (the runs themselves are unchanged)
  });
  connect(status_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
  connect(schedule_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
  connect(tag_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(table_, &QTableView::customContextMenuRequested, this, &RunsBrowser::contextMenu);
  // A double click on a run, or Enter on the keyboard's row, opens its details.
  connect(table_, &QTableView::doubleClicked, this, &RunsBrowser::detailsOfRow);
  for (const int key : {int(Qt::Key_Return), int(Qt::Key_Enter)}) {
    auto* enter = new QShortcut(QKeySequence(key), table_, nullptr, nullptr, Qt::WidgetShortcut);
    connect(enter, &QShortcut::activated, this, [this] { detailsOfRow(table_->currentIndex()); });
  }
  connect(details_, &RunDetailsPane::closed, table_, [this] { table_->setFocus(); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (reloading_) return;  // refresh() shows the run it keeps itself
    const RunRecord* r = model_->runAt(proxy_->mapToSource(cur).row());
    if (r) showRun(r->id);
  });
  // The watcher's poll: a change in the runs, or runs in progress (their rows and final figures grow).
  connect(watcher_, &StoreWatcher::runsChanged, this, &RunsBrowser::storeChanged);
  connect(watcher_, &StoreWatcher::activeRunsPolled, this, &RunsBrowser::storeChanged);
}

RunsBrowser::~RunsBrowser() = default;

int RunsBrowser::runCount() const { return model_->rowCount(); }

std::vector<int64_t> RunsBrowser::selectedRunIds() const {
  QModelIndexList rows = table_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  std::vector<int64_t> ids;
  for (const QModelIndex& index : rows)
    if (const RunRecord* r = model_->runAt(proxy_->mapToSource(index).row())) ids.push_back(r->id);
  return ids;
}

void RunsBrowser::storeChanged() {
  if (menuOpen_) {
    changedMeanwhile_ = true;
    return;
  }
  refresh();
}

void RunsBrowser::refresh() {
  try {
    RunStore* store = watcher_->storeOrThrow();  // nullptr: no store file yet, nothing to list
    RunFilter f;
    if (status_->currentIndex() > 0) f.status = status_->currentText().toStdString();
    if (tag_->currentIndex() > 0) f.tag = tag_->currentText().toStdString();
    const int64_t keep = shownRun_;
    const std::vector<int64_t> selectedBeforeReload = selectedRunIds();
    auto runs = store ? store->listRuns(f) : std::vector<RunRecord>{};
    // None in the store at all (not only none through the filters): the empty state.
    const bool none = runs.empty() && (!store || (f.status.empty() && f.tag.empty()) || store->listRuns(RunFilter{}).empty());
    updateTagList(store, f, runs);
    if (schedule_->currentIndex() > 0) {
      const std::string s = schedule_->currentText().toStdString();
      runs.erase(std::remove_if(runs.begin(), runs.end(), [&](const RunRecord& r) { return r.schedule != s; }), runs.end());
    }
    const bool first = model_->rowCount() == 0;
    reloading_ = true;
    model_->setRuns(runs);
    showNoRuns(none);
    if (first && !runs.empty()) fitColumns();
    updateSummary();
    reselect(keep, selectedBeforeReload);
    reloading_ = false;
    if (!details_->isHidden() && store) {
      const auto listed = std::find_if(runs.begin(), runs.end(), [this](const RunRecord& r) { return r.id == details_->run(); });
      details_->storeChanged(*store, listed == runs.end() ? nullptr : &*listed);
    }
    lastError_.clear();
  } catch (const std::exception& ex) {
    reloading_ = false;
    lastError_ = ex.what();
    summary_->setText(tr("Cannot read the run store: %1").arg(QString::fromStdString(lastError_)));
  }
}

// The tag filter's list: every tag in the store (kept while one is chosen).
void RunsBrowser::updateTagList(RunStore* store, const RunFilter& f, const std::vector<RunRecord>& runs) {
  std::set<QString> tags;
  for (const auto& r : (f.tag.empty() || !store) ? runs : store->listRuns(RunFilter{}))
    for (const auto& t : r.tags) tags.insert(QString::fromStdString(t));
  const QString chosen = tag_->currentText();
  QStringList now{tr("any tag")};
  for (const auto& t : tags) now << t;
  QStringList had;
  for (int i = 0; i < tag_->count(); ++i) had << tag_->itemText(i);
  if (now != had) {
    const QSignalBlocker block(tag_);
    tag_->clear();
    tag_->addItems(now);
    const int idx = tag_->findText(chosen);
    tag_->setCurrentIndex(idx < 0 ? 0 : idx);
  }
}

// Fit the columns to their contents once (later refreshes keep the user's widths); the
// status column fits its longest word whatever the first runs' statuses were.
void RunsBrowser::fitColumns() {
  table_->resizeColumnsToContents();
  // Long names and notes are cut off (their tooltips give them whole) rather than widen the table.
  for (const int column : {int(RunsTableModel::Name), int(RunsTableModel::Notes)})
    table_->setColumnWidth(column, std::min(table_->columnWidth(column), 320));
  const int statusWidth = table_->fontMetrics().horizontalAdvance(QString::fromUtf8(toString(RunStatus::Interrupted))) + 24;
  table_->setColumnWidth(RunsTableModel::Status, std::max(table_->columnWidth(RunsTableModel::Status), statusWidth));
}

// Keep the user's selection: after a reload, re-select the shown run only (never replace a
// multi-row selection the user made).
void RunsBrowser::reselect(int64_t keep, const std::vector<int64_t>& previous) {
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const RunRecord* rec = model_->runAt(proxy_->mapToSource(proxy_->index(r, 0)).row());
    if (!rec) continue;
    if (std::find(previous.begin(), previous.end(), rec->id) != previous.end())
      table_->selectionModel()->select(proxy_->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    if (rec->id == keep || (keep == 0 && r == 0)) {
      if (previous.empty()) table_->selectRow(r);
      // The keyboard goes on from this row (the model's reset put it back on the first).
      table_->selectionModel()->setCurrentIndex(proxy_->index(r, 0), QItemSelectionModel::NoUpdate);
      // The curves of a run that has ended do not change: read them again only for another
      // run, a run still going, or one whose status changed since they were read.
      if (rec->id != shownRun_ || !isTerminal(rec->status) || rec->status != shownStatus_)
        showRun(rec->id);
    }
  }
}

void RunsBrowser::updateSummary() {
  int running = 0;
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->runAt(r)->status == RunStatus::Running) ++running;
  const QString shown = proxy_->rowCount() == model_->rowCount() ? tr("%1 run(s)").arg(model_->rowCount())
                                                                 : tr("%1 of %2 run(s) shown").arg(proxy_->rowCount()).arg(model_->rowCount());
  const QString store = QString::fromStdString(watcher_->dbPath());
  summary_->setText(tr("%1, %2 running  -  store: %3").arg(shown).arg(running).arg(store));
}

void RunsBrowser::showNoRuns(bool none) {
  table_->setVisible(!none);
  noRuns_->setVisible(none);
  if (!none) return;
  noRuns_->setText(watcher_->noRunsText());
  // The plots say there is nothing to plot, instead of empty axes or the curves of a run deleted since.
  shownRun_ = 0;
  shownStatus_.reset();
  for (CurvePlot* plot : {lossPlot_, accPlot_}) {
    plot->clear();
    plot->setEmptyText(tr("no runs yet"));
    plot->replot();
  }
}

bool RunsBrowser::selectRun(int64_t runId) {
  auto rowOf = [this, runId] {
    for (int r = 0; r < proxy_->rowCount(); ++r) {
      const RunRecord* rec = model_->runAt(proxy_->mapToSource(proxy_->index(r, 0)).row());
      if (rec && rec->id == runId) return r;
    }
    return -1;
  };
  int row = rowOf();
  if (row < 0) {  // not listed yet, or hidden by the filters
    filter_->clear();
    for (QComboBox* c : {status_, schedule_, tag_}) {
      const QSignalBlocker block(c);
      c->setCurrentIndex(0);
    }
    refresh();
    row = rowOf();
  }
  if (row < 0) return false;
  table_->clearSelection();
  table_->selectRow(row);
  table_->scrollTo(proxy_->index(row, 0));
  showRun(runId);
  return true;
}

void RunsBrowser::detailsOfRow(const QModelIndex& index) {
  if (!index.isValid()) return;
  if (const RunRecord* r = model_->runAt(proxy_->mapToSource(index).row())) showDetails(r->id);
}

bool RunsBrowser::showDetails(int64_t runId) {
  try {
    RunStore* store = watcher_->storeOrThrow();
    if (!store) return false;
    const bool found = details_->showRun(*store, runId);
    details_->show();
    return found;
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
    summary_->setText(tr("Cannot read the run store: %1").arg(QString::fromStdString(lastError_)));
    return false;
  }
}

void RunsBrowser::showRun(int64_t runId) {
  RunStore* store = watcher_->store();
  if (!store) return;
  shownRun_ = runId;
  shownStatus_.reset();
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->runAt(r)->id == runId) shownStatus_ = model_->runAt(r)->status;
  ++curveLoads_;
  auto fill = [&](CurvePlot* plot, const std::vector<std::pair<std::string, QColor>>& keys) {
    plot->clear();
    for (const auto& [key, color] : keys) {
      auto pts = store->loadMetric(runId, key);
      if (pts.empty()) continue;
      int s = plot->addSeries(QString::fromStdString(key), color);
      std::vector<double> x, y;
      x.reserve(pts.size());
      y.reserve(pts.size());
      for (const auto& p : pts) {
        x.push_back(static_cast<double>(p.step));
        y.push_back(p.value);
      }
      plot->setSeriesData(s, std::move(x), std::move(y));
    }
    plot->replot();
  };
  const bool active = shownStatus_ == RunStatus::Running || shownStatus_ == RunStatus::Created;
  lossPlot_->setEmptyText(active ? tr("no step recorded yet") : tr("this run recorded no training loss"));
  fill(lossPlot_, {{metric::kTrainLoss, QColor(31, 119, 180)}, {metric::kEvalLoss, QColor(255, 127, 14)}});
  // Classifiers report held-out accuracy, language models perplexity (and next-byte accuracy:
  // perplexity is their figure).
  const auto keys = store->metricKeys(runId);
  const bool perplexity = std::find(keys.begin(), keys.end(), metric::kEvalPerplexity) != keys.end();
  accPlot_->setTitle(perplexity ? tr("Held-out perplexity") : tr("Held-out accuracy"));
  accPlot_->setAxisLabels(tr("step"), perplexity ? tr("perplexity") : tr("accuracy"));
  accPlot_->setEmptyText(active ? tr("no evaluation yet (the first comes after\ntraining.eval_interval steps or an epoch)")
                                : tr("this run recorded no evaluation"));
  fill(accPlot_, {{perplexity ? metric::kEvalPerplexity : metric::kEvalAccuracy, QColor(44, 160, 44)}});
}

}  // namespace pm::ui
