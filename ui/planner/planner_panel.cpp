#include "ui/planner/planner_panel.h"

#include <QComboBox>
#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProcess>
#include <QSplitter>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QVBoxLayout>

#include "ui/plots/gantt_plot.h"

namespace pm::ui {

using Json = nlohmann::json;

PlannerPanel::PlannerPanel(const QString& pipemareBinary, QWidget* parent)
    : QWidget(parent), binary_(pipemareBinary), timing_(new QComboBox(this)), table_(new QTableWidget(this)),
      memory_(new StackedBarsPlot(this)), gantt_(new GanttPlot(this)), status_(new QLabel(this)),
      debounce_(new QTimer(this)), proc_(new QProcess(this)), tmp_(new QTemporaryDir()) {
  timing_->addItem(tr("1F1B timing (engine default)"), "1f1b");
  timing_->addItem(tr("paper timing (pipeline.timing = paper)"), "paper");
  table_->setColumnCount(7);
  table_->setHorizontalHeaderLabels({tr("schedule"), tr("utilization"), tr("bubble"), tr("max tau"), tr("versions"),
                                     tr("max stage memory"), tr("weights+optimizer (all stages)")});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  status_->setWordWrap(true);
  memory_->setTitle(tr("Predicted memory per stage (MiB)"));
  gantt_->setTitle(tr("Predicted timeline"));

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("<b>Planner</b> (predictions before anything runs)"), this), 1);
  top->addWidget(timing_);
  auto* plots = new QSplitter(Qt::Horizontal, this);
  plots->addWidget(memory_);
  plots->addWidget(gantt_);
  plots->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(plots);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, &PlannerPanel::runPlanner);
  connect(timing_, &QComboBox::currentIndexChanged, this, [this] { debounce_->start(); });
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) {
    if (row >= 0 && table_->item(row, 0)) showSchedule(table_->item(row, 0)->text());
  });
  connect(proc_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus exitStatus) {
    planFinished(code, exitStatus != QProcess::NormalExit);
  });
  // A planner that cannot start (binary missing or not executable) gives no finished signal.
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart)
      showFailure(tr("cannot start %1: %2").arg(binary_, proc_->errorString()));
  });
}

// The planner's answer: its JSON plan on stdout, or what went wrong.
void PlannerPanel::planFinished(int code, bool crashed) {
  const QByteArray out = proc_->readAllStandardOutput();
  if (!experiment_.is_object()) return;  // the design became invalid while it planned
  if (crashed) {
    showFailure(tr("the planner process crashed"));
    return;
  }
  if (code != 0) {
    // A problem of the design names the temporary file it was handed over in.
    showFailure(QString::fromUtf8(proc_->readAllStandardError()).trimmed().replace(tmp_->filePath("design.json"), tr("the design")));
    return;
  }
  Json j = Json::parse(out.toStdString(), nullptr, false);
  if (j.is_discarded()) {
    showFailure(tr("unreadable output"));
    return;
  }
  plan_ = j;
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
  memory_->setTitle(tr("Predicted memory per stage (MiB)"));
  memory_->setData({}, {}, tr("stage"), tr("MiB"));
  gantt_->setTitle(tr("Predicted timeline"));
  gantt_->setBoxes({}, 1);
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
}

PlannerPanel::~PlannerPanel() {
  if (proc_->state() != QProcess::NotRunning) {
    proc_->kill();
    proc_->waitForFinished(2000);
  }
  delete tmp_;
}

void PlannerPanel::setExperiment(const Json& experiment) {
  experiment_ = experiment;
  std::string timing = "1f1b";
  if (experiment.is_object() && experiment.contains("pipeline") && experiment["pipeline"].is_object())
    timing = experiment["pipeline"].value("timing", std::string("1f1b"));
  if (timing != experimentTiming_) {
    experimentTiming_ = timing;
    setTimingModel(QString::fromStdString(timing));
  }
  debounce_->start();
}

QString PlannerPanel::timingModel() const { return timing_->currentData().toString(); }

void PlannerPanel::setTimingModel(const QString& timing) {
  const int i = timing_->findData(timing);
  if (i >= 0) timing_->setCurrentIndex(i);
}

void PlannerPanel::runPlanner() {
  if (!experiment_.is_object()) return;
  if (proc_->state() != QProcess::NotRunning) {
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
  const QStringList args{"plan",   "--experiment", designFile, "--timing", timing_->currentData().toString(),
                         "--json", "--trace",      tmp_->filePath("plan-trace.json")};
  status_->setText(tr("planning..."));
  proc_->start(binary_, args);
}

int PlannerPanel::rowCount() const { return table_->rowCount(); }
size_t PlannerPanel::ganttBoxes() const { return gantt_->boxCount(); }
QString PlannerPanel::statusText() const { return status_->text(); }
QString PlannerPanel::selectedSchedule() const {
  const auto rows = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList();
  if (rows.isEmpty() || !table_->item(rows.front().row(), 0)) return QString();
  return table_->item(rows.front().row(), 0)->text();
}

void PlannerPanel::showPlan() {
  const auto& schedules = plan_["schedules"];
  table_->setRowCount(static_cast<int>(schedules.size()));
  int selectRow = 0;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const auto& s = schedules[i];
    const int r = static_cast<int>(i);
    auto mib = [](double b) { return QString::number(b / 1048576.0, 'f', 2) + " MiB"; };
    const QString name = QString::fromStdString(s.value("schedule", std::string()));
    table_->setItem(r, 0, new QTableWidgetItem(name));
    table_->setItem(r, 1, new QTableWidgetItem(QString::number(s.value("utilization", 0.0), 'f', 3)));
    table_->setItem(r, 2, new QTableWidgetItem(QString::number(s.value("bubble", 0.0), 'f', 3)));
    table_->setItem(r, 3, new QTableWidgetItem(QString::number(s.value("max_tau", 0))));
    table_->setItem(r, 4, new QTableWidgetItem(QString::number(s.value("max_versions", 0))));
    table_->setItem(r, 5, new QTableWidgetItem(mib(s["memory"]["per_stage_max"].value("stage_total", 0.0))));
    table_->setItem(r, 6, new QTableWidgetItem(mib(s["memory"]["total"].value("weight_and_optimizer", 0.0))));
    if (name == shownSchedule_) selectRow = r;
  }
  table_->selectRow(selectRow);
  if (auto* item = table_->item(selectRow, 0)) table_->scrollToItem(item);  // the design's row in view
  showSchedule(table_->item(selectRow, 0) ? table_->item(selectRow, 0)->text() : shownSchedule_);
  const auto& ratios = plan_["ratios"];
  status_->setText(tr("%1, P=%2, N=%3, %4 timing. Utilization pipemare/gpipe %5x; weight+optimizer memory pipedream/pipemare+T2 %6x.")
                       .arg(QString::fromStdString(plan_.value("model", std::string())))
                       .arg(plan_.value("stages", 0))
                       .arg(plan_.value("microbatches", 0))
                       .arg(QString::fromStdString(plan_.value("timing", std::string())))
                       .arg(ratios.value("utilization_pipemare_over_gpipe", 0.0), 0, 'f', 2)
                       .arg(ratios.value("weight_optimizer_memory_pipedream_over_pipemare_t2", 0.0), 0, 'f', 2));
  if (plan_.value("warmup_fraction", 0.0) > 0)
    status_->setText(status_->text() + " " +
                     tr("With its warm-up (%1 % of the run as gpipe) pipemare's utilization is %2, time-weighted.")
                         .arg(plan_.value("warmup_fraction", 0.0) * 100, 0, 'f', 0)
                         .arg(plan_.value("utilization_pipemare_with_warmup", 0.0), 0, 'f', 3));

  // The simulated timeline of the experiment's schedule.
  QFile f(tmp_->filePath("plan-trace.json"));
  std::vector<GanttBox> boxes;
  if (f.open(QIODevice::ReadOnly)) {
    Json t = Json::parse(f.readAll().toStdString(), nullptr, false);
    if (t.is_object())
      for (const auto& e : t["traceEvents"]) {
        if (e.value("ph", std::string()) != "X") continue;
        const auto& a = e["args"];
        boxes.push_back({e.value("pid", 0), QString::fromStdString(a.value("action", std::string())), a.value("mb", -1),
                         e.value("ts", 0.0) * 1e-6, (e.value("ts", 0.0) + e.value("dur", 0.0)) * 1e-6});
      }
  }
  gantt_->setTitle(tr("Predicted timeline: %1 (F blue, B orange, step green)").arg(shownSchedule_));
  gantt_->setBoxes(boxes, plan_.value("stages", 1));
}

void PlannerPanel::showSchedule(const QString& schedule) {
  for (const auto& s : plan_["schedules"]) {
    if (QString::fromStdString(s.value("schedule", std::string())) != schedule) continue;
    const auto& per = s["per_stage"]["memory"];
    const char* keys[] = {"weights", "gradients", "optimizer", "stash", "delta", "activations"};
    std::vector<std::vector<double>> values(6);
    for (const auto& m : per)
      for (int c = 0; c < 6; ++c) values[static_cast<size_t>(c)].push_back(m.value(keys[c], 0.0) / 1048576.0);
    memory_->setTitle(tr("Predicted memory, %1\n(MiB per stage)").arg(schedule));
    memory_->setData({"weights", "gradients", "optimizer", "stash", "delta", "activations"}, values, tr("stage"), tr("MiB"));
    return;
  }
}

}  // namespace pm::ui
