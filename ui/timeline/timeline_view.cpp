// The Timeline view: its widgets, the measured chart and the summaries. The planner it runs for the
// predicted chart is in timeline_planner.cpp; what the summaries read off a trace, in
// timeline_trace.cpp.
#include "ui/timeline/timeline_view.h"

#include "ui/planner/plan_process.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QHeaderView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/store/run_store.h"
#include "ui/plots/gantt_plot.h"
#include "ui/store/store_watcher.h"
#include "ui/timeline/timeline_trace.h"

namespace pm::ui {

using Json = nlohmann::json;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QString minibatches(int n) { return n == 1 ? QObject::tr("1 minibatch") : QObject::tr("%1 minibatches").arg(n); }

QString ms(double v) {
  const double a = std::abs(v);
  if (a < 5e-4) return QStringLiteral("0");
  return QString::number(v, 'f', a >= 100 ? 1 : a >= 1 ? 2 : 3);
}

// The run ran all its stages in one process (execution.mode single).
bool ranSingleProcess(const std::string& configJson) {
  const Json cfg = Json::parse(configJson, nullptr, false);
  return cfg.is_object() && cfg.contains("execution") && cfg["execution"].is_object() &&
         cfg["execution"].value("mode", std::string()) == "single";
}

}  // namespace

TimelineView::TimelineView(const std::string& dbPath, const QString& pipemareBinary, QWidget* parent)
    : TimelineView(new StoreWatcher(dbPath), pipemareBinary, parent) {
  watcher_->setParent(this);
}

TimelineView::TimelineView(StoreWatcher* watcher, const QString& pipemareBinary, QWidget* parent)
    : QWidget(parent),
      watcher_(watcher),
      binary_(pipemareBinary),
      tmp_(std::make_unique<QTemporaryDir>()),
      runBox_(new QComboBox(this)),
      refreshButton_(new QPushButton(tr("Refresh"), this)),
      measured_(new GanttPlot(this)),
      predicted_(new GanttPlot(this)),
      measuredLabel_(new QLabel(this)),
      predictedLabel_(new QLabel(this)),
      memory_(new QTableWidget(0, 5, this)),
      memoryLabel_(new QLabel(this)),
      minibatches_(new QSpinBox(this)),
      linkAxes_(new QCheckBox(tr("Link time axes"), this)),
      proc_(new PlanProcess(pipemareBinary, QStringLiteral("timelinePlanProcess"), this)) {
  linkAxes_->setObjectName("linkAxes");
  linkAxes_->setToolTip(tr("Zoom and pan the measured and the predicted timelines together, on one time scale"));
  runBox_->setObjectName("runBox");
  refreshButton_->setObjectName("refreshButton");
  minibatches_->setObjectName("predictedMinibatches");
  runBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  runBox_->setMinimumContentsLength(30);
  minibatches_->setRange(1, 50);
  minibatches_->setValue(2);
  minibatches_->setToolTip(tr("Minibatches the planner simulates (default: as many as the measured trace holds)"));
  for (QLabel* l : {measuredLabel_, predictedLabel_}) {
    l->setTextFormat(Qt::RichText);
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  }
  memory_->setObjectName("memoryTable");
  memory_->setHorizontalHeaderLabels({tr("Stage"), tr("Category"), tr("Predicted (MiB)"), tr("Measured (MiB)"), tr("Measured / predicted")});
  memory_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  memory_->horizontalHeader()->setStretchLastSection(false);
  memory_->verticalHeader()->setVisible(false);
  memory_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  memory_->setSortingEnabled(false);
  memory_->setToolTip(tr("Each stage's memory by category: the planner's accounting for this run's partition and schedule "
                         "against the largest the run's stages reported (pipemare plan --against). Activations: the "
                         "planner counts each operation's output per microbatch in flight; measured is what stayed "
                         "allocated plus each forward's and backward's transient peak, so either can be the larger."));
  memoryLabel_->setObjectName("memoryNote");
  memoryLabel_->setWordWrap(true);
  measured_->setTitle(tr("Measured schedule"));
  predicted_->setTitle(tr("Predicted by the planner"));

  buildLayout();
  connectSignals();
  refresh();
}

// The run chooser over the two charts, each with its summary line and Fit button beneath it.
void TimelineView::buildLayout() {
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Run:"), this));
  top->addWidget(runBox_, 1);
  top->addWidget(refreshButton_);
  top->addWidget(linkAxes_);

  auto* measuredFit = new QPushButton(tr("Fit"), this);
  measuredFit->setObjectName("measuredFit");
  measuredFit->setToolTip(tr("Show the whole measured trace (wheel: zoom, drag: pan)"));
  auto* predictedFit = new QPushButton(tr("Fit"), this);
  predictedFit->setObjectName("predictedFit");
  predictedFit->setToolTip(tr("Show the whole predicted timeline (wheel: zoom, drag: pan)"));

  auto* upper = new QWidget(this);
  auto* upperLayout = new QVBoxLayout(upper);
  upperLayout->setContentsMargins(0, 0, 0, 0);
  upperLayout->addWidget(measured_, 1);
  auto* upperBar = new QHBoxLayout;
  upperBar->addWidget(measuredLabel_, 1);
  upperBar->addWidget(measuredFit);
  upperLayout->addLayout(upperBar);

  auto* lower = new QWidget(this);
  auto* lowerLayout = new QVBoxLayout(lower);
  lowerLayout->setContentsMargins(0, 0, 0, 0);
  lowerLayout->addWidget(predicted_, 1);
  auto* lowerBar = new QHBoxLayout;
  lowerBar->addWidget(predictedLabel_, 1);
  lowerBar->addWidget(new QLabel(tr("minibatches:"), this));
  lowerBar->addWidget(minibatches_);
  lowerBar->addWidget(predictedFit);
  lowerLayout->addLayout(lowerBar);

  // Memory, predicted against measured, under the two timelines.
  auto* mem = new QWidget(this);
  auto* memLayout = new QVBoxLayout(mem);
  memLayout->setContentsMargins(0, 0, 0, 0);
  memLayout->addWidget(memoryLabel_);
  memLayout->addWidget(memory_, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(upper);
  split->addWidget(lower);
  split->addWidget(mem);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);

  connect(measuredFit, &QPushButton::clicked, measured_, &GanttPlot::fit);
  connect(predictedFit, &QPushButton::clicked, predicted_, &GanttPlot::fit);
}

void TimelineView::connectSignals() {
  connect(refreshButton_, &QPushButton::clicked, this, &TimelineView::refresh);
  connect(runBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) showRun(currentRun());
  });
  connect(measured_, &GanttPlot::viewChanged, this, [this] {
    linkViews(measured_);
    updateSummaries();
  });
  connect(predicted_, &GanttPlot::viewChanged, this, [this] {
    linkViews(predicted_);
    updateSummaries();
  });
  connect(linkAxes_, &QCheckBox::toggled, this, [this](bool on) {
    if (on) {
      linkViews(measured_);
    } else {
      measured_->setTimeLimitMs(0);
      predicted_->setTimeLimitMs(0);
    }
  });
  connect(minibatches_, &QSpinBox::valueChanged, this, [this] {
    if (!updating_) requestPrediction();
  });
  connect(proc_, &PlanProcess::finished, this, &TimelineView::planFinished);
  connect(proc_, &PlanProcess::failed, this, &TimelineView::planEndedWithout);
  // A run came, went or changed (a run that finished has its whole trace): the list is read again.
  connect(watcher_, &StoreWatcher::runsChanged, this, &TimelineView::refresh);
}

TimelineView::~TimelineView() { delete proc_; }

int TimelineView::runCount() const { return runBox_->count(); }
int64_t TimelineView::currentRun() const { return runBox_->currentIndex() < 0 ? 0 : runBox_->currentData().toLongLong(); }
QString TimelineView::measuredSummary() const { return measuredLabel_->text(); }
QString TimelineView::predictedSummary() const { return predictedLabel_->text(); }
bool TimelineView::predicting() const { return proc_->running() || pending_; }
int TimelineView::predictedMinibatches() const { return minibatches_->value(); }
void TimelineView::setPredictedMinibatches(int n) { minibatches_->setValue(n); }

void TimelineView::refresh() {
  std::vector<RunRecord> runs;
  storeHasRuns_ = false;
  try {
    if (RunStore* store = watcher_->storeOrThrow())  // nullptr: no store file yet, no runs
      for (auto& r : store->listRuns()) {
        storeHasRuns_ = true;
        if (store->countRows("trace", r.id) > 0) runs.push_back(std::move(r));
      }
    lastError_.clear();
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
  }
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id > b.id; });
  const int64_t keep = shownRun_;
  updating_ = true;
  runBox_->clear();
  for (const auto& r : runs)
    runBox_->addItem(tr("#%1  %2  (%3, %4, P=%5, N=%6; %7)")
                         .arg(r.id)
                         .arg(q(r.name), q(r.schedule), q(r.model))
                         .arg(r.stages)
                         .arg(r.microbatches)
                         .arg(q(toString(r.status))),
                     QVariant::fromValue<qlonglong>(r.id));
  const int i = runBox_->findData(QVariant::fromValue<qlonglong>(keep));
  runBox_->setCurrentIndex(i >= 0 ? i : (runBox_->count() > 0 ? 0 : -1));
  updating_ = false;
  if (currentRun() != keep || keep == 0) showRun(currentRun());
  if (!lastError_.empty())
    measuredLabel_->setText(tr("<span style='color:#d62728'>Cannot read the run store: %1</span>").arg(q(lastError_).toHtmlEscaped()));
}

bool TimelineView::setRun(int64_t runId) {
  int i = runBox_->findData(QVariant::fromValue<qlonglong>(runId));
  if (i < 0) {
    refresh();
    i = runBox_->findData(QVariant::fromValue<qlonglong>(runId));
  }
  if (i < 0) {
    // Show nothing rather than leave another run on screen as if it were this one.
    updating_ = true;
    runBox_->setCurrentIndex(-1);
    updating_ = false;
    showRun(0);
    std::optional<RunRecord> rec;
    try {
      if (RunStore* store = watcher_->store()) rec = store->getRun(runId);
    } catch (const std::exception&) {
    }
    measuredLabel_->setText(rec ? tr("Run %1 recorded no schedule trace (its training.trace_steps was 0, or it ended before "
                                     "its first minibatch); choose a run with a trace above.")
                                      .arg(runId)
                                : tr("No run %1 in this store.").arg(runId));
    return false;
  }
  if (i == runBox_->currentIndex()) {
    if (shownRun_ != runId) showRun(runId);
  } else {
    runBox_->setCurrentIndex(i);  // showRun() through the signal
  }
  return true;
}

void TimelineView::showRun(int64_t runId) {
  shownRun_ = runId;
  againstFailed_ = false;
  predictedError_.clear();
  std::vector<GanttBox> boxes;
  std::optional<RunRecord> rec;
  try {
    RunStore* store = runId != 0 ? watcher_->store() : nullptr;
    if (store) {
      rec = store->getRun(runId);
      for (const auto& t : store->loadTrace(runId)) boxes.push_back({t.stage, q(t.action), t.microbatch, t.start, t.end});
    }
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
  }
  if (!rec) {
    clearShownRun();
    return;
  }
  model_ = rec->model;
  schedule_ = rec->schedule;
  configJson_ = rec->config_json;
  singleMode_ = ranSingleProcess(configJson_);
  stages_ = rec->stages;
  microbatches_ = rec->microbatches;
  const int stages = traceStages(boxes, stages_);
  const QString chunks = ganttChunkLegend(rec->stage_ranks);
  chunked_ = !chunks.isEmpty();
  measured_->setTitle(tr("Measured schedule of run %1: %2, %3, P=%4, N=%5 (%6)")
                          .arg(rec->id)
                          .arg(q(schedule_), q(model_))
                          .arg(stages_)
                          .arg(microbatches_)
                          .arg(ganttLegend(boxes) + (chunks.isEmpty() ? QString() : QStringLiteral("; ") + chunks)));
  measured_->setEmptyText(tr("this run recorded no schedule trace"));
  measured_->setStageRanks(rec->stage_ranks);
  measured_->setBoxes(boxes, stages);
  measuredCounts_ = actionCounts(boxes);
  const int steps = tracedMinibatches(boxes, microbatches_);
  updating_ = true;
  minibatches_->setValue(std::clamp(steps, 1, minibatches_->maximum()));
  updating_ = false;
  predicted_->setEmptyText(tr("planning..."));
  predicted_->setBoxes({}, stages);
  predictedCounts_.clear();
  updateSummaries();
  requestPrediction();
}

// No run shown: empty charts, and the planner's answer for the run shown before is dropped.
void TimelineView::clearShownRun() {
  pending_ = false;  // a planner still running for the run shown before is answered into nothing
  model_.clear();
  schedule_.clear();
  configJson_.clear();
  stages_ = microbatches_ = 0;
  singleMode_ = false;
  chunked_ = false;
  // The empty charts say what to do: make a run (none in the store), or which runs have a trace.
  const QString noTrace = tr("No run in this store has a schedule trace yet (runs record the first "
                             "training.trace_steps minibatches).");
  const QString empty = !lastError_.empty() ? tr("The run store cannot be read (the line below says why).")
                        : !storeHasRuns_    ? watcher_->noRunsText()
                        : runBox_->count() == 0 ? noTrace
                                                : tr("Choose a run above.");
  measured_->setTitle(tr("Measured schedule"));
  measured_->setEmptyText(empty);
  measured_->setBoxes({}, 1);
  predicted_->setTitle(tr("Predicted by the planner"));
  predicted_->setEmptyText(storeHasRuns_ ? tr("the planner's timeline of the run shown above") : tr("no runs yet"));
  predicted_->setBoxes({}, 1);
  measuredCounts_.clear();
  predictedCounts_.clear();
  updateSummaries();
  measuredLabel_->setText(runBox_->count() == 0 ? empty.toHtmlEscaped() : QString());  // rich text
  memory_->setRowCount(0);
  memoryLabel_->setText(tr("Memory per stage, predicted against measured: choose a run above."));
}

QString TimelineView::memoryNote() const { return memoryLabel_->text(); }

void TimelineView::requestPrediction() {
  if (shownRun_ == 0 || model_.empty()) return;
  predictedError_.clear();
  predictedLabel_->setText(tr("planning %1 of %2 with the planner...").arg(minibatches(minibatches_->value()), q(schedule_)));
  if (proc_->running()) {
    pending_ = true;  // planned again when the running planner is done
    return;
  }
  startPlanner();
}

// The planner's timeline of the shown run; `stages`: the run's, or more when the plan has more.
void TimelineView::showPrediction(const std::vector<GanttBox>& boxes, int stages) {
  predicted_->setTitle((against_ ? tr("Predicted by the planner: %1, %2, P=%3, N=%4, %5 (this run's partition and measured "
                                       "per-action costs, fitted link latency; %6)")
                                  : tr("Predicted by the planner: %1, %2, P=%3, N=%4, %5 (simulated costs; %6)"))
                           .arg(q(schedule_), q(model_))
                           .arg(stages_)
                           .arg(microbatches_)
                           .arg(minibatches(minibatches_->value()))
                           .arg(ganttLegend(boxes)));
  predicted_->setBoxes(boxes, traceStages(boxes, stages));
  predictedCounts_ = actionCounts(boxes);
  predictedError_.clear();
  updateSummaries();
  Q_EMIT predictionFinished(true);
}

void TimelineView::planFailed(const QString& message) {
  predictedError_ = message;
  predicted_->setTitle(tr("Predicted by the planner: not available"));
  predicted_->setEmptyText(tr("no prediction (the line below says why)"));
  predicted_->setBoxes({}, std::max(1, stages_));
  predictedCounts_.clear();
  memory_->setRowCount(0);
  memoryLabel_->setText(tr("Memory per stage, predicted against measured: no prediction."));
  updateSummaries();
  Q_EMIT predictionFinished(false);
}

bool TimelineView::axesLinked() const { return linkAxes_->isChecked(); }

void TimelineView::linkViews(GanttPlot* from) {
  if (linking_ || !linkAxes_->isChecked()) return;
  linking_ = true;
  GanttPlot* to = from == measured_ ? predicted_ : measured_;
  const double span = std::max(measured_->makespanMs(), predicted_->makespanMs());
  measured_->setTimeLimitMs(span);
  predicted_->setTimeLimitMs(span);
  to->setView(from->viewStartMs(), from->viewEndMs());
  linking_ = false;
}

void TimelineView::updateSummaries() {
  auto line = [this](GanttPlot* p, const QString& counts) {
    if (p->boxCount() == 0) return QString();
    return tr("makespan <b>%1 ms</b>, <b>%2</b> actions (%3); shown %4 to %5 ms (%6 ms): %7 actions")
        .arg(ms(p->makespanMs()))
        .arg(p->boxCount())
        .arg(counts)
        .arg(ms(p->viewStartMs()), ms(p->viewEndMs()), ms(p->viewEndMs() - p->viewStartMs()))
        .arg(p->boxesInView());
  };
  if (shownRun_ != 0)
    measuredLabel_->setText(tr("Measured: ") + line(measured_, measuredCounts_) +
                            (singleMode_ && measured_->boxCount() > 0 && stages_ > 1
                                 ? tr(". <i>Single-process run: its stages took turns on one thread, so its utilization is "
                                      "at most 1/P; the prediction is for one process per stage.</i>")
                                 : QString()));
  if (!predictedError_.isEmpty())
    predictedLabel_->setText(tr("<span style='color:#d62728'>No prediction: %1</span>").arg(predictedError_.toHtmlEscaped()));
  else if (predicted_->boxCount() > 0)
    predictedLabel_->setText(tr("Predicted: ") + line(predicted_, predictedCounts_));
}

}  // namespace pm::ui
