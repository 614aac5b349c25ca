#include "ui/runs/run_details.h"

#include <QDateTime>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QSplitter>
#include <QTextDocument>
#include <QVBoxLayout>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/analysis/run_data.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm::ui {

namespace {

using Rows = std::vector<std::pair<QString, QString>>;

// Stored text for rich text: escaped, its line breaks kept; "-" when empty.
QString shown(const std::string& s) {
  if (s.empty()) return QStringLiteral("-");
  return QString::fromStdString(s).toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"));
}

QString when(double secondsSinceEpoch) {
  if (secondsSinceEpoch <= 0) return QStringLiteral("-");
  return QDateTime::fromSecsSinceEpoch(static_cast<qint64>(secondsSinceEpoch)).toString(QStringLiteral("yyyy-MM-dd hh:mm:ss"));
}

QString number(double v) { return std::isnan(v) ? QStringLiteral("-") : QString::number(v, 'g', 6); }

// The record's own fields (what the store lists), as table rows.
Rows recordRows(const RunRecord& r) {
  Rows rows;
  const auto add = [&rows](const QString& label, const QString& value) { rows.emplace_back(label, value); };
  add(RunDetailsPane::tr("Id"), QString::number(r.id));
  add(RunDetailsPane::tr("Name"), shown(r.name));
  QString status = QString::fromUtf8(toString(r.status));
  if (!r.status_message.empty()) status += QStringLiteral(": ") + shown(r.status_message);
  add(RunDetailsPane::tr("Status"), status);
  add(RunDetailsPane::tr("Schedule"), shown(r.schedule));
  add(RunDetailsPane::tr("Model"), shown(r.model));
  add(RunDetailsPane::tr("Stages (P)"), QString::number(r.stages));
  add(RunDetailsPane::tr("Microbatches (N)"), QString::number(r.microbatches));
  QStringList units;
  for (size_t s = 0; s < r.partition.size(); ++s)
    units << RunDetailsPane::tr("stage %1: units [%2, %3)").arg(s).arg(r.partition[s].first).arg(r.partition[s].second);
  QString partition = units.isEmpty() ? RunDetailsPane::tr("none recorded") : units.join(QStringLiteral("<br>"));
  if (!r.partition_method.empty()) partition += RunDetailsPane::tr("<br>(method: %1)").arg(shown(r.partition_method));
  add(RunDetailsPane::tr("Partition"), partition);
  add(RunDetailsPane::tr("Model file"),
      r.model_file.path.empty() ? RunDetailsPane::tr("none (a built-in model)")
                                : RunDetailsPane::tr("%1<br>%2 bytes, SHA-256 %3")
                                      .arg(shown(r.model_file.path))
                                      .arg(r.model_file.size)
                                      .arg(shown(r.model_file.sha256)));
  add(RunDetailsPane::tr("Tags"), shown(join(r.tags, ", ")));
  add(RunDetailsPane::tr("Notes"), shown(r.notes));
  add(RunDetailsPane::tr("Revision"), shown(r.revision));
  add(RunDetailsPane::tr("Host"), shown(r.host));
  add(RunDetailsPane::tr("Sweep"), shown(r.sweep_id));
  add(RunDetailsPane::tr("Created"), when(r.created_at));
  add(RunDetailsPane::tr("Started"), when(r.started_at));
  add(RunDetailsPane::tr("Ended"), when(r.finished_at));
  const bool going = r.status == RunStatus::Running;
  const double trained = trainingDuration(r, wallClockSeconds());
  add(RunDetailsPane::tr("Duration"), std::isfinite(trained) ? QString::fromStdString(formatDuration(trained)) +
                                                                   (going ? RunDetailsPane::tr(" so far") : QString()) +
                                                                   (r.paused_s > 0 ? RunDetailsPane::tr(" training") : QString())
                                                             : QStringLiteral("-"));
  if (r.paused_s > 0) add(RunDetailsPane::tr("Paused"), QString::fromStdString(formatDuration(r.paused_s)) + RunDetailsPane::tr(" between sessions"));
  if (r.halt_step > 0) add(RunDetailsPane::tr("Stopped after"), RunDetailsPane::tr("step %1 (checkpoint)").arg(r.halt_step));
  if (r.resume_step > 0) add(RunDetailsPane::tr("Resumed from"), RunDetailsPane::tr("step %1").arg(r.resume_step));
  add(RunDetailsPane::tr("Final loss"), number(r.final_loss));
  add(RunDetailsPane::tr("Final accuracy"), number(r.final_accuracy));
  return rows;
}

QString table(const Rows& rows) {
  QString html = QStringLiteral("<table cellspacing='0' cellpadding='2'>");
  for (const auto& [label, value] : rows)
    html += QStringLiteral("<tr><td valign='top'><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>").arg(label.toHtmlEscaped(), value);
  return html + QStringLiteral("</table>");
}

}  // namespace

RunDetailsPane::RunDetailsPane(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      fields_(new QLabel(this)),
      json_(new QPlainTextEdit(this)),
      close_(new QPushButton(tr("Close"), this)) {
  setObjectName(QStringLiteral("runDetails"));
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setWordWrap(true);
  close_->setToolTip(tr("Close the run's details (Escape)"));
  fields_->setObjectName(QStringLiteral("runDetailsFields"));
  fields_->setTextFormat(Qt::RichText);
  fields_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  fields_->setWordWrap(true);
  fields_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  fields_->setMargin(4);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(fields_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  json_->setObjectName(QStringLiteral("runDetailsExperiment"));
  json_->setReadOnly(true);  // still selectable and copyable
  json_->setLineWrapMode(QPlainTextEdit::NoWrap);
  json_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));

  auto* top = new QHBoxLayout;
  top->addWidget(title_, 1);
  top->addWidget(close_, 0, Qt::AlignTop);
  auto* experiment = new QWidget(this);
  auto* experimentLayout = new QVBoxLayout(experiment);
  experimentLayout->setContentsMargins(0, 0, 0, 0);
  experimentLayout->addWidget(new QLabel(tr("<b>Experiment</b> (as recorded for the run)"), experiment));
  experimentLayout->addWidget(json_, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(scroll);
  split->addWidget(experiment);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({1000, 1000});  // half each to begin with (a word-wrapped label hints at little height)
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(split, 1);

  connect(close_, &QPushButton::clicked, this, &RunDetailsPane::closePane);
  auto* escape = new QShortcut(QKeySequence(Qt::Key_Escape), this, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
  connect(escape, &QShortcut::activated, this, &RunDetailsPane::closePane);
}

bool RunDetailsPane::showRun(const RunStore& store, int64_t run) {
  const bool another = run != run_;
  run_ = run;
  const auto r = store.getRun(run);
  if (!r) {
    shownKey_.clear();
    title_->setText(tr("<b>Run %1</b>").arg(run));
    setFields(tr("The store has no run %1 (it was deleted).").arg(run));
    json_->clear();
    return false;
  }
  title_->setText(tr("<b>Run %1</b> %2").arg(r->id).arg(QString::fromStdString(r->name).toHtmlEscaped()));
  Rows rows = recordRows(*r);
  shownKey_ = table(rows);
  // The last value of each metric the run recorded (train/loss, eval/accuracy, ...).
  Rows metrics;
  for (const std::string& key : store.metricKeys(run)) {
    const auto points = store.loadMetric(run, key);
    if (points.empty()) continue;
    metrics.emplace_back(QString::fromStdString(key), tr("%1 at step %2 (%3 points)")
                                                          .arg(number(points.back().value))
                                                          .arg(points.back().step)
                                                          .arg(points.size()));
  }
  QString html = table(rows);
  html += tr("<p><b>Final metrics</b></p>");
  html += metrics.empty() ? tr("<p>none recorded</p>") : table(metrics);
  setFields(html);
  // The experiment as the run recorded it, indented; as stored when it is not valid JSON.
  const nlohmann::json config = nlohmann::json::parse(r->config_json, nullptr, false);
  const QString text = config.is_discarded()
                           ? tr("(not valid JSON)\n") + QString::fromStdString(r->config_json)
                           : QString::fromStdString(config.dump(2));
  if (another || json_->toPlainText() != text) json_->setPlainText(text);
  return true;
}

void RunDetailsPane::storeChanged(const RunStore& store, const RunRecord* listed) {
  if (run_ == 0) return;
  if (listed && listed->status != RunStatus::Running && table(recordRows(*listed)) == shownKey_) return;
  showRun(store, run_);
}

void RunDetailsPane::setFields(const QString& html) {
  if (fields_->text() != html) fields_->setText(html);  // an unchanged text keeps the user's selection
}

QString RunDetailsPane::titleText() const {
  QTextDocument doc;
  doc.setHtml(title_->text());
  return doc.toPlainText();
}

QString RunDetailsPane::fieldsText() const {
  QTextDocument doc;
  doc.setHtml(fields_->text());
  return doc.toPlainText();
}

void RunDetailsPane::closePane() {
  hide();
  Q_EMIT closed();
}

}  // namespace pm::ui
