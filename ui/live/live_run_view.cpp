#include "ui/live/live_run_view.h"

#include <algorithm>

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QTabWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "core/config/choices.h"
#include "core/events/run_status.h"
#include "core/store/run_checkpoints.h"
#include "core/store/run_store.h"
#include "core/util/strings.h"
#include "core/events/event.h"
#include "core/events/metric_keys.h"
#include "ui/live/run_process.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/gantt_plot.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

namespace {
const QColor kPalette[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44), QColor(214, 39, 40),
                           QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194), QColor(127, 127, 127),
                           QColor(188, 189, 34), QColor(23, 190, 207)};
double num(const nlohmann::json& e, const char* k) {
  auto it = e.find(k);
  return (it != e.end() && it->is_number()) ? it->get<double>() : NAN;
}
CurvePlot* makePlot(QWidget* parent, const QString& title, const QString& y) {
  auto* p = new CurvePlot(parent);
  p->setTitle(title);
  p->setAxisLabels(QObject::tr("step"), y);
  return p;
}

// The run's end in one line, as `pipemare run` prints it: "run 7 stopped: stopped by request after
// step 40 (...); final loss 0.5000, 2400 samples/s over 3.1s". The figures are the summary's that
// are numbers (a run that failed early has none).
QString runSummaryLine(const nlohmann::json& e, int64_t runId) {
  const QString status = QString::fromStdString(e.value("status", std::string()));
  const QString message = QString::fromStdString(e.value("message", std::string()));
  QString line = QObject::tr("run %1 %2").arg(runId).arg(status);
  if (!message.isEmpty()) line += QStringLiteral(": ") + message;
  QStringList figures;
  if (e.contains("summary") && e["summary"].is_object()) {
    const nlohmann::json& s = e["summary"];
    if (!std::isnan(num(s, "final_loss"))) figures << QObject::tr("final loss %1").arg(num(s, "final_loss"), 0, 'f', 4);
    if (!std::isnan(num(s, "final_accuracy"))) figures << QObject::tr("accuracy %1").arg(num(s, "final_accuracy"), 0, 'f', 4);
    if (!std::isnan(num(s, "samples_per_s")) && !std::isnan(num(s, "wall_s")))
      figures << QObject::tr("%1 samples/s over %2")
                     .arg(num(s, "samples_per_s"), 0, 'f', 0)
                     .arg(QString::fromStdString(formatDuration(num(s, "wall_s"))));
  }
  if (!figures.isEmpty()) line += (message.isEmpty() ? QStringLiteral(": ") : QStringLiteral("; ")) + figures.join(QStringLiteral(", "));
  return line;
}
}  // namespace

LiveRunView::LiveRunView(const QString& pipemareBinary, const QString& dbPath, QWidget* parent)
    : QWidget(parent),
      proc_(new RunProcess(pipemareBinary, dbPath, this)),
      loss_(makePlot(this, tr("Loss"), tr("loss"))),
      accuracy_(makePlot(this, tr("Held-out accuracy / perplexity"), tr("value"))),
      utilization_(makePlot(this, tr("Utilization per stage (compute / wall)"), tr("utilization"))),
      wait_(makePlot(this, tr("Waiting and idle per stage (fraction of wall time)"), tr("fraction"))),
      memory_(makePlot(this, tr("Memory per stage, MiB (dashed: peak)"), tr("MiB"))),
      throughput_(makePlot(this, tr("Throughput"), tr("samples/s"))),
      asyncPlot_(makePlot(this, tr("Asynchronous: delay per stage (steps)"), tr("tau"))),
      lr_(makePlot(this, tr("Learning rate per stage (T1)"), tr("lr"))),
      gap_(makePlot(this, tr("Weight gap ||w_fwd - w_bkwd|| / ||w_fwd||, without and with T2"), tr("relative gap"))),
      memoryNow_(new StackedBarsPlot(this)),
      progress_(new QProgressBar(this)),
      header_(new QLabel(this)),
      log_(new QPlainTextEdit(this)),
      stopButton_(new QPushButton(tr("Stop"), this)),
      resumeBar_(new QWidget(this)),
      resumeNote_(new QLabel(resumeBar_)),
      resumeButton_(new QPushButton(resumeBar_)),
      db_(dbPath),
      timer_(new QTimer(this)) {
  buildLayout();

  connect(stopButton_, &QPushButton::clicked, this, &LiveRunView::stop);
  connect(resumeButton_, &QPushButton::clicked, this, [this] {
    // Once: the run goes on in this tab (LivePanel::resumeRun), its curves continued.
    resumeButton_->setEnabled(false);
    resumeNote_->setText(tr("Run %1 is resumed here.").arg(runId_));
    Q_EMIT resumeRequested(runId_, resumeName_);
  });
  connect(proc_, &RunProcess::event, this, &LiveRunView::onEvent);
  connect(proc_, &RunProcess::finished, this, &LiveRunView::processFinished);
  connect(timer_, &QTimer::timeout, this, [this] {
    if (dirty_) redraw();
  });
  timer_->start(33);  // ~30 Hz
}

// The engine process ended: the run's status, the engine's stderr when it did not finish, and why
// plots stayed empty.
void LiveRunView::processFinished(int code, const QString& st) {
  // The run_finished event's status (toString(RunStatus)); "invalid" when the experiment was refused.
  status_ = st.isEmpty() ? (code == 2 ? QStringLiteral("invalid") : QString::fromUtf8(toString(RunStatus::Failed))) : st;
  stopButton_->setEnabled(false);
  if (status_ != QLatin1String(toString(RunStatus::Finished))) {
    // The engine's stderr, less the lines that repeat an error event already in the log.
    QStringList rest;
    for (const QString& line : proc_->stderrText().split('\n', Qt::SkipEmptyParts)) {
      const bool shown = std::any_of(errorsShown_.begin(), errorsShown_.end(), [&](const QString& m) { return line.contains(m); });
      if (!shown) rest << line;
    }
    if (!rest.isEmpty()) log_->appendPlainText(tr("engine: %1").arg(rest.join('\n').trimmed()));
  }
  if (runId_ == 0) setRunId(proc_->runId());
  // The last line: the run_finished event's summary, or without one (the process was killed, the
  // experiment refused) the status alone.
  if (!summaryLine_.isEmpty())
    log_->appendPlainText(summaryLine_);
  else
    log_->appendPlainText(runId_ > 0 ? tr("run %1: %2").arg(runId_).arg(status_) : tr("run: %1 (no run was recorded)").arg(status_));
  accuracy_->setEmptyText(tr("this run recorded no evaluation"));
  for (CurvePlot* p : {loss_, throughput_}) p->setEmptyText(tr("no step was recorded"));
  for (CurvePlot* p : {utilization_, wait_, memory_, lr_}) p->setEmptyText(tr("no stage report was recorded"));
  if (!synchronous_)  // a synchronous run's delay and gap plots keep saying why they are empty
    for (CurvePlot* p : {asyncPlot_, gap_}) p->setEmptyText(tr("no stage report was recorded"));
  progress_->setFormat(status_);
  redraw();
  offerResume();
  Q_EMIT runFinished(status_);
}

void LiveRunView::offerResume() {
  if (runId_ <= 0) return;
  try {
    // The process's one connection (store_watcher.h): this view never opens the store file itself.
    const RunStore* store = storeWatcher()->storeOrThrow();
    if (!store) return;  // no store file: nothing was recorded
    const std::string db = store->path();
    const auto run = store->getRun(runId_);
    // The store's status: a run whose process was killed is recorded interrupted, not what the
    // view guessed.
    if (!run || !isResumable(run->status)) return;
    // A step directory in the run's own checkpoint directory (`pipemare run --resume` checks the
    // step is complete, and its refusal says so in the new tab's log).
    const std::string root = checkpointRoot(db, run->id);
    if (root.empty() || !ownsCheckpointRoot(root, *run)) return;
    bool step = false;
    for (const auto& entry : std::filesystem::directory_iterator(root)) step = step || entry.is_directory();
    if (!step) return;
    const QString after = run->halt_step > 0 ? tr(" after step %1").arg(run->halt_step) : QString();
    resumeNote_->setText(tr("Run %1 (%2) has a checkpoint%3: it can continue from there.")
                             .arg(run->id)
                             .arg(QString::fromUtf8(toString(run->status)))
                             .arg(after));
    resumeButton_->setText(tr("Resume run %1").arg(run->id));
    resumeButton_->setToolTip(tr("Continue the run from its latest checkpoint in this tab (pipemare run --resume %1)").arg(run->id));
    resumeName_ = QString::fromStdString(run->name);
    resumeButton_->setEnabled(true);
    resumeBar_->show();
  } catch (const std::exception& ex) {  // an unreadable store: no offer, and the log says why
    log_->appendPlainText(tr("cannot tell whether the run can be resumed: %1").arg(QString::fromUtf8(ex.what())));
  }
}

// The header and progress bar over the plots (the lower row tabbed) and the log.
void LiveRunView::buildLayout() {
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  progress_->setFormat(tr("waiting for the engine..."));
  progress_->setValue(0);  // a bar without a value hides its text
  auto* top = new QHBoxLayout;
  top->addWidget(header_, 1);
  top->addWidget(progress_, 1);
  top->addWidget(stopButton_);
  auto* grid = new QGridLayout;
  grid->addWidget(loss_, 0, 0);
  grid->addWidget(accuracy_, 0, 1);
  grid->addWidget(throughput_, 0, 2);
  auto tabbed = [this](std::initializer_list<std::pair<QWidget*, QString>> pages) {
    auto* t = new QTabWidget(this);
    t->setDocumentMode(true);
    for (const auto& [w, name] : pages) t->addTab(w, name);
    return t;
  };
  memoryNow_->setTitle(tr("Memory per stage now (MiB)"));
  // Why a plot is still empty: nothing has arrived yet, or (set later) the run has nothing to show.
  for (CurvePlot* p : {loss_, throughput_}) p->setEmptyText(tr("waiting for the first step"));
  memory_->setToolTip(tr("Each stage's accounted memory (weights, gradients, optimizer state, stash, delta, activations) "
                         "at each report; dashed: the largest it has held so far"));
  accuracy_->setEmptyText(tr("no evaluation yet (the first comes after\ntraining.eval_interval steps or an epoch)"));
  for (CurvePlot* p : {utilization_, wait_, memory_, asyncPlot_, lr_, gap_})
    p->setEmptyText(tr("waiting for the first stage report"));
  grid->addWidget(tabbed({{utilization_, tr("utilization")}, {wait_, tr("waiting / idle")}}), 1, 0);
  grid->addWidget(tabbed({{memory_, tr("over time")}, {memoryNow_, tr("now, by category")}}), 1, 1);
  grid->addWidget(tabbed({{asyncPlot_, tr("delay")}, {lr_, tr("learning rate")}, {gap_, tr("weight gap")}}), 1, 2);
  grid->setRowStretch(0, 1);  // the two rows share the height (else the tabbed row takes most of it)
  grid->setRowStretch(1, 1);
  auto* plots = new QWidget(this);
  plots->setLayout(grid);
  // Under the log, once the run has ended resumable: what the log's last line says, and Resume.
  auto* resumeRow = new QHBoxLayout(resumeBar_);
  resumeRow->setContentsMargins(0, 0, 0, 0);
  resumeRow->addWidget(resumeNote_, 1);
  resumeRow->addWidget(resumeButton_);
  resumeBar_->hide();
  auto* logPane = new QWidget(this);
  auto* logLayout = new QVBoxLayout(logPane);
  logLayout->setContentsMargins(0, 0, 0, 0);
  logLayout->addWidget(log_, 1);
  logLayout->addWidget(resumeBar_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(plots);
  split->addWidget(logPane);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);
}

LiveRunView::~LiveRunView() {
  // QWidget deletes its children after this class's members are gone, and ~RunProcess waits for
  // the child: its last lines and its end must not reach a half-destroyed view.
  timer_->stop();
  proc_->disconnect(this);
  delete proc_;
}

void LiveRunView::start(const QString& experimentFile, const QString& title) {
  header_->setText(tr("<b>%1</b>").arg(title.toHtmlEscaped()));
  log_->appendPlainText(tr("starting: pipemare run %1").arg(experimentFile));
  proc_->start(experimentFile, title);
}

void LiveRunView::setRunId(int64_t id) {
  if (id <= 0 || id == runId_) return;
  runId_ = id;
  Q_EMIT runIdentified(id);
}

void LiveRunView::resume(int64_t runId, const QString& title) {
  header_->setText(tr("<b>%1</b>").arg(title.toHtmlEscaped()));
  log_->appendPlainText(tr("resuming: pipemare run --resume %1").arg(runId));
  setRunId(runId);  // the run's own record goes on (the engine's events name it too)
  resumeBar_->hide();
  stopButton_->setEnabled(true);
  status_.clear();
  summaryLine_.clear();
  showHistory(runId);
  proc_->start(QString(), QString(), {QStringLiteral("--resume"), QString::number(runId)});
}

void LiveRunView::setStoreWatcher(StoreWatcher* watcher) {
  watcher_ = watcher;
  proc_->setStoreWatcher(watcher);
}

StoreWatcher* LiveRunView::storeWatcher() {
  // A view made on its own (tests) watches the store itself, as other views do.
  if (!watcher_) watcher_ = new StoreWatcher(db_.toStdString(), this);
  return watcher_;
}

void LiveRunView::stop() {
  log_->appendPlainText(tr("stopping..."));
  proc_->stop();
}

bool LiveRunView::running() const { return proc_->running(); }
qint64 LiveRunView::pid() const { return proc_->pid(); }
void LiveRunView::detach() { proc_->detach(); }
size_t LiveRunView::lossPoints() const { return loss_->seriesCount() ? loss_->pointCount(0) : 0; }
QString LiveRunView::logText() const { return log_->toPlainText(); }

int LiveRunView::series(CurvePlot* plot, const QString& name, int index, Qt::PenStyle style) {
  auto key = std::make_pair(plot, name);
  auto it = seriesIndex_.find(key);
  if (it != seriesIndex_.end()) return it->second;
  const int s = plot->addSeries(name, kPalette[index % 10], style);
  seriesIndex_[key] = s;
  return s;
}

void LiveRunView::onEvent(const nlohmann::json& e) {
  const std::string type = e.value("type", "");
  dirty_ = true;
  if (type == ev::kStep) {
    const double step = num(e, "step");
    if (!std::isnan(num(e, "loss"))) loss_->appendPoint(series(loss_, tr("train"), 0), step, num(e, "loss"));
    if (!std::isnan(num(e, "samples_per_s")))
      throughput_->appendPoint(series(throughput_, tr("samples/s"), 0), step, num(e, "samples_per_s"));
  } else if (type == ev::kEval) {
    showEval(e);
  } else if (type == ev::kStage) {
    showStageReport(e);
  } else if (type == ev::kProgress) {
    showProgress(e);
  } else if (type == ev::kRunStarted) {
    runStarted(e);
  } else if (type == ev::kLog) {
    if (e.contains("run") && e["run"].is_number_integer()) setRunId(e["run"].get<int64_t>());
    log_->appendPlainText(QString::fromStdString(e.value("message", std::string())));
  } else if (type == ev::kWarning) {
    log_->appendPlainText(tr("warning: %1").arg(QString::fromStdString(e.value("message", std::string()))));
  } else if (type == ev::kError) {
    const std::string place = e.value("place", std::string());
    const QString message = QString::fromStdString(e.value("message", std::string()));
    if (!message.isEmpty()) errorsShown_ << message;
    log_->appendPlainText(tr("error: %1%2").arg(QString::fromStdString(place.empty() ? "" : place + ": "), message));
  } else if (type == ev::kRunFinished) {
    if (e.contains("run") && e["run"].is_number_integer()) setRunId(e["run"].get<int64_t>());
    summaryLine_ = runSummaryLine(e, runId_);  // logged when the process has ended, after its stderr
  }
}

void LiveRunView::showEval(const nlohmann::json& e) {
  const double step = num(e, "step");
  loss_->appendPoint(series(loss_, tr("eval"), 1), step, num(e, "loss"));
  // A language model reports perplexity and next-byte accuracy: plot perplexity alone (as the
  // Runs tab does); on one axis the 0-1 accuracy lay flat under a perplexity of tens.
  if (!std::isnan(num(e, "perplexity"))) {
    if (!perplexityShown_) {
      perplexityShown_ = true;
      accuracy_->setTitle(tr("Held-out perplexity"));
      accuracy_->setAxisLabels(tr("step"), tr("perplexity"));
    }
    accuracy_->appendPoint(series(accuracy_, tr("perplexity"), 3), step, num(e, "perplexity"));
  } else if (!std::isnan(num(e, "accuracy"))) {
    if (!accuracyShown_) {
      accuracyShown_ = true;
      accuracy_->setTitle(tr("Held-out accuracy"));
      accuracy_->setAxisLabels(tr("step"), tr("accuracy"));
    }
    accuracy_->appendPoint(series(accuracy_, tr("accuracy"), 2), step, num(e, "accuracy"));
  }
}

// A stage's report: utilization, memory, delay, learning rate, weight gap, waiting and idle.
// Every stage's series made once, in stage order, at the first report: the legends then list stage
// 0 first whichever stage reported first.
void LiveRunView::prepareStageSeries(const nlohmann::json& e) {
  if (stageSeriesReady_ || stageRanks_.empty()) return;
  stageSeriesReady_ = true;
  const int P = static_cast<int>(stageRanks_.size());
  const bool perRank = memoryPerRank();
  for (int st = 0; st < P; ++st) {
    const QString s = tr("stage %1").arg(st);
    series(utilization_, s, st);
    series(wait_, tr("stage %1 waiting").arg(st), 2 * st);
    series(wait_, tr("stage %1 idle").arg(st), 2 * st + 1);
    if (e.contains("tau")) series(asyncPlot_, s, st);
    if (e.contains("lr")) series(lr_, s, st);
    if (!perRank && e.contains("memory")) series(memory_, s, st);
  }
  if (!e.contains("memory")) return;
  if (perRank) {
    const int ranks = *std::max_element(stageRanks_.begin(), stageRanks_.end()) + 1;
    for (int r = 0; r < ranks; ++r) series(memory_, rankName(r), r);
    for (int r = 0; r < ranks; ++r) series(memory_, tr("%1 peak").arg(rankName(r)), r, Qt::DashLine);
  } else if (e["memory"].contains("peak")) {
    for (int st = 0; st < P; ++st) series(memory_, tr("stage %1 peak").arg(st), st, Qt::DashLine);
  }
}

void LiveRunView::showStageReport(const nlohmann::json& e) {
  prepareStageSeries(e);
  const int stage = e.value("stage", 0);
  const double step = num(e, "step");
  const QString s = tr("stage %1").arg(stage);
  utilization_->appendPoint(series(utilization_, s, stage), step, num(e, "utilization"));
  if (e.contains("memory") && e["memory"].is_object() && memoryPerRank() && static_cast<size_t>(stage) < stageRanks_.size()) {
    // A rank's device holds its stages together: their totals of this step summed, and their peaks
    // summed (dashed; an upper bound: the stages need not peak at one moment).
    const int rank = stageRanks_[static_cast<size_t>(stage)];
    RankStep& rs = rankSteps_[{rank, step}];
    rs.total += e["memory"].value("total", 0.0);
    rs.peak += e["memory"].value("peak", e["memory"].value("total", 0.0));
    if (++rs.reports == static_cast<int>(std::count(stageRanks_.begin(), stageRanks_.end(), rank))) {
      memory_->appendPoint(series(memory_, rankName(rank), rank), step, rs.total / 1048576.0);
      memory_->appendPoint(series(memory_, tr("%1 peak").arg(rankName(rank)), rank, Qt::DashLine), step, rs.peak / 1048576.0);
      rankSteps_.erase({rank, step});
    }
  } else if (e.contains("memory") && e["memory"].is_object()) {
    memory_->appendPoint(series(memory_, s, stage), step, e["memory"].value("total", 0.0) / 1048576.0);
    // The stage's peak so far (dashed, same colour): what the stage needed at its worst moment.
    if (e["memory"].contains("peak"))
      memory_->appendPoint(series(memory_, tr("stage %1 peak").arg(stage), stage, Qt::DashLine), step,
                           e["memory"].value("peak", 0.0) / 1048576.0);
  }
  // On a GPU: what the CUDA caching allocator holds allocated on the stage's device, beside the
  // accounted total (dotted).
  if (const auto cuda = e.find("cuda"); cuda != e.end() && cuda->is_object() && cuda->contains("allocated")) {
    memory_->appendPoint(series(memory_, tr("stage %1 CUDA allocated").arg(stage), stage, Qt::DotLine), step,
                         cuda->value("allocated", 0.0) / 1048576.0);
  }
  if (e.contains("tau")) asyncPlot_->appendPoint(series(asyncPlot_, s, stage), step, num(e, "tau"));
  if (e.contains("lr")) lr_->appendPoint(series(lr_, s, stage), step, num(e, "lr"));
  if (e.contains("weight_gap")) gap_->appendPoint(series(gap_, s, 2 * stage), step, num(e, "weight_gap"));
  if (e.contains("weight_gap_t2"))
    gap_->appendPoint(series(gap_, tr("stage %1 with T2").arg(stage), 2 * stage + 1), step, num(e, "weight_gap_t2"));
  const double wall = num(e, "compute_s") + num(e, "wait_s") + num(e, "idle_s");
  if (wall > 0) {
    wait_->appendPoint(series(wait_, tr("stage %1 waiting").arg(stage), 2 * stage), step, num(e, "wait_s") / wall);
    wait_->appendPoint(series(wait_, tr("stage %1 idle").arg(stage), 2 * stage + 1), step, num(e, "idle_s") / wall);
  }
  if (e.contains("memory") && e["memory"].is_object()) memoryNowByStage_[stage] = e["memory"];
}

void LiveRunView::showProgress(const nlohmann::json& e) {
  const double step = num(e, "step"), total = num(e, "total_steps");
  if (total > 0) {
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(1000 * step / total));
    progress_->setFormat(tr("step %1 / %2, epoch %3, ETA %4")
                             .arg(step)
                             .arg(total)
                             .arg(num(e, "epoch"), 0, 'f', 2)
                             .arg(QString::fromStdString(formatDuration(num(e, "eta_s")))));
  }
}

// The run's setup, in the log. A synchronous schedule has no delay, learning-rate rescheduling or
// weight gap: say so on those plots instead of leaving them blank.
void LiveRunView::runStarted(const nlohmann::json& e) {
  const nlohmann::json* pipeline = e.contains("config") && e["config"].is_object() && e["config"].contains("pipeline") ? &e["config"]["pipeline"] : nullptr;
  const std::string schedule = pipeline && pipeline->is_object() ? pipeline->value("schedule", std::string()) : "";
  const std::optional<ScheduleKind> kind = choiceFromName<ScheduleKind>(schedule);
  synchronous_ = kind && !isAsynchronous(*kind);
  if (synchronous_) {
    const QString name = QString::fromStdString(schedule);
    asyncPlot_->setTitle(tr("Delay per stage: none (%1 is synchronous)").arg(name));
    gap_->setTitle(tr("Weight gap: none (%1 is synchronous)").arg(name));
    const QString why = tr("%1 is synchronous: forward and backward\nuse the same weights, with no delay").arg(name);
    asyncPlot_->setEmptyText(why);
    gap_->setEmptyText(why);
  }
  stageRanks_.clear();
  if (e.contains("partition") && e["partition"].is_array())
    for (const auto& p : e["partition"]) stageRanks_.push_back(p.value("rank", static_cast<int>(stageRanks_.size())));
  if (memoryPerRank()) {
    memory_->setTitle(tr("Memory per rank (its stages' accounted totals summed; dashed: their peaks summed; MiB)"));
    memoryNow_->setTitle(tr("Memory per rank now, its stages together (MiB)"));
  }
  log_->appendPlainText(tr("started: partition %1, BLAS %2, %3 thread(s) per stage, %4 steps")
                            .arg(QString::fromStdString(e.value("partition_text", std::string("?"))))
                            .arg(QString::fromStdString(e.contains("blas") && e["blas"].is_object() ? e["blas"].value("kind", std::string("?")) : "?"))
                            .arg(e.value("threads", 0))
                            .arg(e.value("total_steps", int64_t{0})));
}

bool LiveRunView::memoryPerRank() const {
  for (size_t s = 0; s < stageRanks_.size(); ++s)
    if (std::count(stageRanks_.begin(), stageRanks_.end(), stageRanks_[s]) > 1) return true;
  return false;
}

QString LiveRunView::rankName(int rank) const {
  QStringList stages;
  for (size_t s = 0; s < stageRanks_.size(); ++s)
    if (stageRanks_[s] == rank) stages << QString::number(s);
  return tr("rank %1 (stages %2)").arg(rank).arg(stages.join(QStringLiteral(", ")));
}

void LiveRunView::redraw() {
  dirty_ = false;
  for (CurvePlot* p : {loss_, accuracy_, utilization_, wait_, memory_, throughput_, asyncPlot_, lr_, gap_}) p->replot();
  if (!memoryNowByStage_.empty()) {
    static const char* kCats[] = {"weights", "gradients", "optimizer", "stash", "delta", "activations"};
    QStringList cats;
    std::vector<std::vector<double>> values(6);
    for (int c = 0; c < 6; ++c) {
      cats << kCats[c];
      if (memoryPerRank()) {
        // Each rank's stages summed, by rank.
        std::map<int, double> byRank;
        for (const auto& [stage, m] : memoryNowByStage_)
          if (static_cast<size_t>(stage) < stageRanks_.size()) byRank[stageRanks_[static_cast<size_t>(stage)]] += m.value(kCats[c], 0.0);
        for (const auto& [rank, v] : byRank) values[static_cast<size_t>(c)].push_back(v / 1048576.0);
      } else {
        for (const auto& [stage, m] : memoryNowByStage_) values[static_cast<size_t>(c)].push_back(m.value(kCats[c], 0.0) / 1048576.0);
      }
    }
    memoryNow_->setData(cats, values, memoryPerRank() ? tr("rank") : tr("stage"), tr("MiB"));
  }
}

}  // namespace pm::ui
