#include "ui/planner/planner_panel.h"

#include <algorithm>

#include <QComboBox>
#include <QEvent>
#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QScrollBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QVBoxLayout>

#include "core/events/event.h"
#include "core/pipeline/trace_actions.h"
#include "ui/planner/plan_process.h"
#include "ui/plots/gantt_plot.h"

namespace pm::ui {

using Json = nlohmann::json;

PlannerPanel::PlannerPanel(const QString& pipemareBinary, QWidget* parent)
    : QWidget(parent), binary_(pipemareBinary), timing_(new QComboBox(this)), table_(new QTableWidget(this)),
      memory_(new StackedBarsPlot(this)), gantt_(new GanttPlot(this)), status_(new QLabel(this)),
      debounce_(new QTimer(this)), proc_(new PlanProcess(pipemareBinary, QStringLiteral("planProcess"), this)),
      tmp_(new QTemporaryDir()),
      stabilityButton_(new QPushButton(tr("Predict stability edge"), this)), stabilityBusy_(new QProgressBar(this)),
      stabilityLabel_(new QLabel(this)),
      stabilityProc_(new PlanProcess(pipemareBinary, QStringLiteral("stabilityProcess"), this)) {
  costs_ = new QComboBox(this);
  costs_->setObjectName(QStringLiteral("stageCostsBox"));
  costs_->addItem(tr("stage times from FLOPs"), "flops");
  costs_->addItem(tr("stage times measured"), "measured");
  costs_->setToolTip(tr("Where each stage's forward, backward and (zb-h1) input- and weight-gradient times come from: "
                        "its FLOPs (backward twice the forward, W half of it), or each unit's passes timed on one "
                        "microbatch on this machine (pipemare plan --stage-costs measured; a second or more)"));
  costs_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  costs_->setMinimumContentsLength(10);
  timing_->addItem(tr("1F1B timing (engine default)"), "1f1b");
  timing_->addItem(tr("paper timing (pipeline.timing = paper)"), "paper");
  // Each column's figure, defined in its header's tooltip.
  const std::vector<std::pair<QString, QString>> columns = {
      {tr("schedule"), tr("The training method: every schedule the engine runs, with gpipe+recompute and pipemare+T2. Click a row "
                          "to see its memory per stage and its timeline; the design's own row is selected first.")},
      {tr("utilization"),
       tr("Busy share of the stages' time on this schedule's predicted timeline (the Gantt chart of the selected row): "
          "forward, backward and step time of all stages over stages x the timeline's span, for the minibatches "
          "simulated, fill and drain included. Each stage's forward time comes from its FLOPs in the design's "
          "partition, the backward takes twice as long; or, with stage times measured, from each unit's passes "
          "timed.")},
      {tr("bubble"), tr("Idle share of the stages' time on the same timeline: 1 - utilization.")},
      {tr("long run"),
       tr("Utilization of a long run with the same stage times c (forward + backward per microbatch): flushed "
          "schedules (gpipe, 1f1b) per minibatch, N*sum(c) / (P*((N-1)*max(c) + sum(c))); unflushed ones "
          "(pipedream, 2bw, pipemare) in the steady state, sum(c) / (P*max(c)). Equal stages: N/(N+P-1) and 1.")},
      {tr("bottleneck"),
       tr("The slowest stage (largest forward + backward time per microbatch) and its share of the work of all "
          "stages, max(c) / sum(c); 1/P with equal stages. An unflushed pipeline runs at its pace: its long-run "
          "utilization is 1 / (P x share).")},
      {tr("max tau"), tr("The largest delay over the stages: optimizer steps between a microbatch's forward and its "
                         "backward (0 for the flushed schedules).")},
      {tr("versions"), tr("The most weight versions one stage holds: the current one plus those stashed.")},
      {tr("max stage memory"), tr("The largest stage's predicted memory: weights, gradients, optimizer state, stash, "
                                  "delta and activations (what one device must hold). For interleaved-1f1b and zb-v, which "
                                  "hold several model chunks per rank: the largest rank's, its chunks together.")},
      {tr("weights+optimizer (all stages)"),
       tr("Weights, stashed versions, optimizer state and T2's delta, summed over all stages: the memory the "
          "PipeMare paper compares.")},
      {tr("timeline (ms)"),
       tr("The span of this schedule's predicted timeline (the minibatches simulated, fill and drain included): "
          "which schedule finishes the same work first. Utilization counts every pass as busy, so a schedule "
          "that computes more (zb-h1's split backward, where its two parts cost more than one backward) can be "
          "busier and still slower.")}};
  table_->setColumnCount(static_cast<int>(columns.size()));
  for (size_t c = 0; c < columns.size(); ++c) {
    auto* header = new QTableWidgetItem(columns[c].first);
    header->setToolTip(columns[c].second);
    table_->setHorizontalHeaderItem(static_cast<int>(c), header);
  }
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);  // no empty band right of the last column
  status_->setWordWrap(true);
  setMemoryTitle(tr("Predicted memory per stage (MiB)"));
  setGantt(tr("Predicted timeline"), {}, 1);

  // The panel shares the Design tab with the designer's form: its parts stack so that it fits
  // narrow (its title wraps, the timing list elides its long entries, the table scrolls).
  timing_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  timing_->setMinimumContentsLength(12);
  timing_->setToolTip(tr("The timing model of the delays and timelines: the engine's 1F1B software timing, or the "
                         "paper's (pipeline.timing = paper)"));
  auto* title = new QLabel(tr("<b>Planner</b> (predictions before anything runs)"), this);
  title->setWordWrap(true);
  stabilityButton_->setObjectName(QStringLiteral("stabilityButton"));
  stabilityButton_->setToolTip(
      tr("Estimates each stage's top Hessian eigenvalue (pipemare plan --stability) and predicts the largest stable "
         "base learning rate of every schedule: seconds for small models, a minute or more for large ones. Click again "
         "to cancel."));
  stabilityBusy_->setRange(0, 0);  // busy: the estimate's length is not known beforehand
  stabilityBusy_->setTextVisible(false);
  stabilityBusy_->setMaximumWidth(80);
  stabilityBusy_->hide();
  stabilityLabel_->setObjectName(QStringLiteral("stabilityLabel"));
  stabilityLabel_->setWordWrap(true);
  stabilityLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* top = new QVBoxLayout;
  top->addWidget(title);
  auto* controls = new QHBoxLayout;
  controls->addWidget(timing_, 1);
  controls->addWidget(costs_, 1);
  controls->addWidget(stabilityButton_);
  controls->addWidget(stabilityBusy_);
  top->addLayout(controls);
  top->addWidget(stabilityLabel_);
  table_->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
  plots_ = new QSplitter(Qt::Horizontal, this);
  plots_->addWidget(memory_);
  plots_->addWidget(gantt_);
  plots_->setStretchFactor(1, 2);
  // As narrow as one plot: the plots go one above the other when they do not fit side by side
  // (eventFilter), so the panel does not ask for the width of both.
  plots_->setMinimumWidth(std::max(memory_->minimumSizeHint().width(), gantt_->minimumSizeHint().width()));
  plots_->installEventFilter(this);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(plots_);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, &PlannerPanel::runPlanner);
  connect(timing_, &QComboBox::currentIndexChanged, this, [this] {
    debounce_->start();
    showStability();  // a prediction holds for one timing model
  });
  connect(costs_, &QComboBox::currentIndexChanged, this, [this] { debounce_->start(); });
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) {
    if (row >= 0 && table_->item(row, 0)) showSchedule(table_->item(row, 0)->text());
  });
  connect(proc_, &PlanProcess::finished, this, &PlannerPanel::planFinished);
  connect(proc_, &PlanProcess::failed, this, [this](const QString& message, const QString& place) {
    if (!experiment_.is_object()) return;  // the design became invalid while it planned
    // A problem of the design names the temporary file it was handed over in.
    const QString where = place.isEmpty() ? QString() : place + QStringLiteral(": ");
    showFailure(QString(where + message).replace(tmp_->filePath("design.json"), tr("the design")));
  });
  connectStability();
  showStability();
}

bool PlannerPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plots_ && event->type() == QEvent::Resize) {
    const int sideBySide = memory_->minimumSizeHint().width() + gantt_->minimumSizeHint().width() + plots_->handleWidth();
    const Qt::Orientation o = plots_->width() >= sideBySide ? Qt::Horizontal : Qt::Vertical;
    if (o != plots_->orientation()) plots_->setOrientation(o);
  }
  return QWidget::eventFilter(watched, event);
}

Qt::Orientation PlannerPanel::plotsOrientation() const { return plots_->orientation(); }

// The planner's answer: the result event's plan.
void PlannerPanel::planFinished() {
  if (!experiment_.is_object()) return;  // the design became invalid while it planned
  plan_ = proc_->result();
  // The design's own row: the schedule the planner traced for it.
  shownSchedule_ = plan_.contains("trace") && plan_["trace"].is_object()
                       ? QString::fromStdString(plan_["trace"].value("schedule", std::string()))
                       : QString();
  showPlan();
  Q_EMIT planned();
}

// A failed plan leaves nothing of the previous one on screen: its table, bars and timeline
// described another design.
void PlannerPanel::clearPlan(const QString& statusHtml) {
  plan_ = Json();
  table_->setRowCount(0);
  setMemoryTitle(tr("Predicted memory per stage (MiB)"));
  memory_->setData({}, {}, tr("stage"), tr("MiB"));
  setGantt(tr("Predicted timeline"), {}, 1);
  status_->setText(statusHtml);
}

void PlannerPanel::showFailure(const QString& message) {
  clearPlan(tr("<span style='color:#d62728'>planner: %1</span>").arg(message.toHtmlEscaped()));
  Q_EMIT failed();
}

void PlannerPanel::setInvalid(const QString& reason) {
  experiment_ = Json();
  debounce_->stop();
  clearPlan(tr("<span style='color:#7f7f7f'>No plan: the design is not valid (%1). The plan follows once it "
               "is.</span>").arg(reason.toHtmlEscaped()));
  showStability();
}

PlannerPanel::~PlannerPanel() {
  // The children go before the folder their files are in.
  delete proc_;
  delete stabilityProc_;
  delete tmp_;
}

void PlannerPanel::setExperiment(const Json& experiment, const QString& note) {
  experiment_ = experiment;
  note_ = note;
  std::string timing = "1f1b";
  if (experiment.is_object() && experiment.contains("pipeline") && experiment["pipeline"].is_object())
    timing = experiment["pipeline"].value("timing", std::string("1f1b"));
  if (timing != experimentTiming_) {
    experimentTiming_ = timing;
    setTimingModel(QString::fromStdString(timing));
  }
  debounce_->start();
  showStability();  // the verdict follows the lr as it is typed
}

QString PlannerPanel::timingModel() const { return timing_->currentData().toString(); }

void PlannerPanel::setTimingModel(const QString& timing) {
  const int i = timing_->findData(timing);
  if (i >= 0) timing_->setCurrentIndex(i);
}

void PlannerPanel::runPlanner() {
  if (!experiment_.is_object()) return;
  if (proc_->running()) {
    debounce_->start();  // try again when the running one is done
    return;
  }
  // The design as a file for `plan --experiment`: the engine maps it to the planner's inputs
  // (partition, context, update interval, warm-up share, the design's plan row).
  const QString designFile = tmp_->filePath("design.json");
  QFile f(designFile);
  const QByteArray text = QByteArray::fromStdString(experiment_.dump(2));
  if (!tmp_->isValid() || !f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size()) {
    showFailure(tr("cannot write the design to %1").arg(designFile));
    return;
  }
  f.close();
  // A timeline per schedule (--trace-dir) for the row the user picks; --trace names the design's row.
  const QStringList args{"plan",          "--experiment", designFile, "--timing", timing_->currentData().toString(),
                         "--stage-costs", costs_->currentData().toString(),
                         "--trace",       tmp_->filePath("plan-trace.json"), "--trace-dir", tmp_->filePath("timelines")};
  status_->setText(tr("planning..."));
  proc_->start(args);
}

int PlannerPanel::rowCount() const { return table_->rowCount(); }
double PlannerPanel::ganttMakespanMs() const { return gantt_->makespanMs(); }

size_t PlannerPanel::ganttBoxes() const { return gantt_->boxCount(); }
QString PlannerPanel::statusText() const { return status_->text(); }
QString PlannerPanel::selectedSchedule() const {
  const auto rows = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList();
  if (rows.isEmpty() || !table_->item(rows.front().row(), 0)) return QString();
  return table_->item(rows.front().row(), 0)->text();
}

double PlannerPanel::ganttBusyShare() const { return ganttBusy_; }

void PlannerPanel::setGantt(const QString& title, const std::vector<GanttBox>& boxes, int stages, const std::vector<int>& stageRanks) {
  ganttTitle_ = title;
  gantt_->setTitle(title);
  gantt_->setStageRanks(stageRanks);
  gantt_->setBoxes(boxes, stages);
  // The busy share is over the rows that run: the ranks where they hold several stages each.
  const int rows = stageRanks.empty() ? stages : *std::max_element(stageRanks.begin(), stageRanks.end()) + 1;
  double busy = 0, t0 = 0, t1 = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const auto& b = boxes[i];
    t0 = i == 0 ? b.start : std::min(t0, b.start);
    t1 = i == 0 ? b.end : std::max(t1, b.end);
    if (isComputeTraceAction(b.action.toStdString()) && b.action != kRecomputeTrace) busy += b.end - b.start;
  }
  ganttBusy_ = t1 > t0 && rows > 0 ? busy / (rows * (t1 - t0)) : 0.0;
}

void PlannerPanel::setMemoryTitle(const QString& title) {
  memoryTitle_ = title;
  memory_->setTitle(title);
}

namespace {

// The row's figure of its timeline (the Gantt's busy share), or the long-run one when the plan
// has no timeline for it.
double timelineUtilization(const Json& s) {
  if (s.contains("timeline") && s["timeline"].is_object()) return s["timeline"].value("utilization", 0.0);
  return s.value("utilization", 0.0);
}

QTableWidgetItem* cell(const QString& text, const QString& tip = QString()) {
  auto* item = new QTableWidgetItem(text);
  if (!tip.isEmpty()) item->setToolTip(tip);
  return item;
}

}  // namespace

void PlannerPanel::showPlan() {
  const auto& schedules = plan_["schedules"];
  const bool equalStages = plan_.value("stage_costs", std::string("equal")) == "equal";
  table_->setRowCount(static_cast<int>(schedules.size()));
  int selectRow = 0;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const auto& s = schedules[i];
    const int r = static_cast<int>(i);
    auto mib = [](double b) { return QString::number(b / 1048576.0, 'f', 2) + " MiB"; };
    const QString name = QString::fromStdString(s.value("schedule", std::string()));
    const double u = timelineUtilization(s);
    table_->setItem(r, 0, cell(name));
    table_->setItem(r, 1, cell(QString::number(u, 'f', 3)));
    table_->setItem(r, 2, cell(QString::number(1.0 - u, 'f', 3)));
    table_->setItem(r, 3, cell(QString::number(s.value("utilization", 0.0), 'f', 3)));
    const Json& b = s.contains("bottleneck") ? s["bottleneck"] : Json::object();
    const double share = b.value("share", 0.0);
    table_->setItem(r, 4, equalStages || !b.contains("stage") || !b["stage"].is_number()
                              ? cell(tr("equal stages"), tr("equal stages assumed: each does 1/P = %1 % of the work")
                                                             .arg(share * 100, 0, 'f', 1))
                              : cell(tr("stage %1: %2 %").arg(b["stage"].get<int>()).arg(share * 100, 0, 'f', 1)));
    table_->setItem(r, 5, cell(QString::number(s.value("max_tau", 0))));
    table_->setItem(r, 6, cell(QString::number(s.value("max_versions", 0))));
    table_->setItem(r, 7, cell(mib(s["memory"]["per_stage_max"].value("stage_total", 0.0))));
    table_->setItem(r, 8, cell(mib(s["memory"]["total"].value("weight_and_optimizer", 0.0))));
    const Json& t = s.contains("timeline") ? s["timeline"] : Json::object();
    table_->setItem(r, 9, t.contains("makespan_s") ? cell(QString::number(1e3 * t.value("makespan_s", 0.0), 'f', 3))
                                                   : cell(tr("-"), tr("no timeline was simulated")));
    if (name == shownSchedule_) selectRow = r;
  }
  table_->selectRow(selectRow);
  fitTableHeight();
  if (auto* item = table_->item(selectRow, 0)) table_->scrollToItem(item);  // the design's row in view
  showSchedule(table_->item(selectRow, 0) ? table_->item(selectRow, 0)->text() : shownSchedule_);
  const auto& ratios = plan_["ratios"];
  status_->setText(tr("%1, P=%2, N=%3, %4 timing. Long run: utilization pipemare/gpipe %5x; weight+optimizer memory pipedream/pipemare+T2 %6x.")
                       .arg(QString::fromStdString(plan_.value("model", std::string())))
                       .arg(plan_.value("stages", 0))
                       .arg(plan_.value("microbatches", 0))
                       .arg(QString::fromStdString(plan_.value("timing", std::string())))
                       .arg(ratios.value("utilization_pipemare_over_gpipe", 0.0), 0, 'f', 2)
                       .arg(ratios.value("weight_optimizer_memory_pipedream_over_pipemare_t2", 0.0), 0, 'f', 2));
  // A design the rows do not cover (several chunks per rank): said first, as the planner says it.
  if (const std::string note = plan_.value("design_note", std::string()); !note.empty())
    status_->setText(tr("Design: %1.").arg(QString::fromStdString(note)) + " " + status_->text());
  if (plan_.value("warmup_fraction", 0.0) > 0)
    status_->setText(status_->text() + " " +
                     tr("With its warm-up (%1 % of the run as gpipe) pipemare's utilization is %2, time-weighted.")
                         .arg(plan_.value("warmup_fraction", 0.0) * 100, 0, 'f', 0)
                         .arg(plan_.value("utilization_pipemare_with_warmup", 0.0), 0, 'f', 3));
  // Which stage times the figures use: the partition's, or equal stages (and why).
  QString stagesNote;
  if (equalStages) {
    const QString why = QString::fromStdString(plan_.value("stage_costs_note", std::string()));
    stagesNote = why.isEmpty() ? tr("Equal stages assumed.") : tr("Equal stages assumed (%1).").arg(why.toHtmlEscaped());
  } else if (!schedules.empty()) {
    const Json& b = schedules[0].contains("bottleneck") ? schedules[0]["bottleneck"] : Json::object();
    if (b.contains("stage") && b["stage"].is_number())
      stagesNote = (plan_.value("stage_costs", std::string()) == "measured"
                        ? tr("Stage times measured (each unit's passes timed): the slowest, stage %1, does %2 % of the work (%3 % if equal).")
                        : tr("Stage times from the partition's FLOPs: the slowest, stage %1, does %2 % of the work (%3 % if equal)."))
                       .arg(b["stage"].get<int>())
                       .arg(b.value("share", 0.0) * 100, 0, 'f', 1)
                       .arg(100.0 / std::max(1, plan_.value("stages", 1)), 0, 'f', 1);
  }
  if (!stagesNote.isEmpty()) status_->setText(status_->text() + " " + stagesNote);
  if (!note_.isEmpty())
    status_->setText(tr("<span style='color:#8a6d3b'>%1</span> ").arg(note_.toHtmlEscaped()) + status_->text());
  // Rows that do not apply to this design, and why (interleaved 1F1B needs N a multiple of P).
  if (plan_.contains("not_planned") && plan_["not_planned"].is_array())
    for (const auto& n : plan_["not_planned"])
      status_->setText(status_->text() + " " +
                       tr("No %1 row: %2.").arg(QString::fromStdString(n.value("schedule", std::string())),
                                                QString::fromStdString(n.value("why", std::string())).toHtmlEscaped()));
}

// The table as tall as its rows (at most 9 of them, and 35 % of the panel), so that every schedule
// shows without scrolling where there is room; the plots below take the rest.
void PlannerPanel::fitTableHeight() {
  const int rows = std::min(table_->rowCount(), 9);
  if (rows == 0) return;
  int height = table_->horizontalHeader()->height() + 2 * table_->frameWidth();
  for (int r = 0; r < rows; ++r) height += table_->rowHeight(r);
  if (table_->horizontalScrollBar()->isVisible()) height += table_->horizontalScrollBar()->height();
  // In a short window the plots keep more than half of the panel (the table then scrolls).
  if (this->height() > 0) height = std::min(height, this->height() * 35 / 100);
  table_->setMinimumHeight(height);
}

void PlannerPanel::showSchedule(const QString& schedule) {
  for (const auto& s : plan_["schedules"]) {
    if (QString::fromStdString(s.value("schedule", std::string())) != schedule) continue;
    const auto& per = s["per_stage"]["memory"];
    const char* keys[] = {"weights", "gradients", "optimizer", "stash", "delta", "activations"};
    std::vector<std::vector<double>> values(6);
    for (const auto& m : per)
      for (int c = 0; c < 6; ++c) values[static_cast<size_t>(c)].push_back(m.value(keys[c], 0.0) / 1048576.0);
    // A schedule with several chunks per rank is planned per rank (its chunks together).
    const bool perRank = s.value("per_stage_is", std::string("stage")) == "rank";
    const std::vector<int> stageRanks = s.contains("stage_ranks") ? s["stage_ranks"].get<std::vector<int>>() : std::vector<int>{};
    // Short enough for one line over the narrow plot of a 1024 px window.
    setMemoryTitle(perRank ? tr("Memory per rank, its %2 chunks together: %1").arg(schedule).arg(s.value("chunks", 1))
                           : tr("Memory per stage: %1").arg(schedule));
    memory_->setData({"weights", "gradients", "optimizer", "stash", "delta", "activations"}, values, perRank ? tr("rank") : tr("stage"),
                     tr("MiB"));

    // The row's simulated timeline: its file from --trace-dir, or the design's row's from --trace.
    QString file;
    int minibatches = 0;
    if (s.contains("timeline") && s["timeline"].is_object()) {
      file = QString::fromStdString(s["timeline"].value("file", std::string()));
      minibatches = s["timeline"].value("minibatches", 0);
    }
    if (file.isEmpty() && schedule == shownSchedule_) file = tmp_->filePath("plan-trace.json");
    std::vector<GanttBox> boxes;
    QFile f(file);
    if (!file.isEmpty() && f.open(QIODevice::ReadOnly)) {
      Json t = Json::parse(f.readAll().toStdString(), nullptr, false);
      if (t.is_object() && t.contains("traceEvents"))
        for (const auto& e : t["traceEvents"]) {
          if (e.value("ph", std::string()) != "X") continue;
          const auto& a = e["args"];
          boxes.push_back({e.value("pid", 0), QString::fromStdString(a.value("action", std::string())), a.value("mb", -1),
                           e.value("ts", 0.0) * 1e-6, (e.value("ts", 0.0) + e.value("dur", 0.0)) * 1e-6});
        }
    }
    const QString span = minibatches == 1 ? tr(", 1 minibatch")
                         : minibatches > 1 ? tr(", %1 minibatches").arg(minibatches)
                                           : QString();
    const QString chunks = ganttChunkLegend(stageRanks);
    setGantt(tr("Predicted timeline: %1%2 (%3)").arg(schedule, span, ganttLegend(boxes) + (chunks.isEmpty() ? QString() : QStringLiteral("; ") + chunks)),
             boxes, stageRanks.empty() ? plan_.value("stages", 1) : static_cast<int>(stageRanks.size()), stageRanks);
    return;
  }
}

}  // namespace pm::ui
