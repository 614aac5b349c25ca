// The planner panel's stability edge (planner_panel.h): `pipemare plan --stability` on the design
// in a child process (its progress, result or error as events), cancelled by the same button,
// and the verdict on the design's lr, which follows the lr as it is typed.
#include <QCoreApplication>
#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTemporaryDir>

#include <cmath>
#include <map>

#include "ui/planner/plan_process.h"
#include "ui/planner/planner_panel.h"

namespace pm::ui {

using Json = nlohmann::json;

std::string PlannerPanel::stabilityKey(const Json& experiment, const QString& timing) {
  if (!experiment.is_object()) return std::string();
  Json key = experiment;
  for (const char* k : {"name", "notes", "tags"}) key.erase(k);
  // The curvature is estimated at initialization, where the lr plays no part; after a pipemare
  // warm-up (trained at the design's lr) it does.
  bool warmup = false;
  if (key.contains("pipeline") && key["pipeline"].is_object() && key["pipeline"].value("schedule", std::string()) == "pipemare" &&
      key.contains("pipemare") && key["pipemare"].is_object() && key["pipemare"].contains("warmup_epochs") &&
      key["pipemare"]["warmup_epochs"].is_number())
    warmup = key["pipemare"]["warmup_epochs"].get<double>() > 0;
  if (!warmup && key.contains("optimizer") && key["optimizer"].is_object()) key["optimizer"].erase("lr");
  key["timing (planner)"] = timing.toStdString();
  return key.dump();
}

bool PlannerPanel::stabilityCurrent() const {
  return stability_.is_object() && experiment_.is_object() && stabilityKey_ == stabilityKey(experiment_, timingModel());
}

bool PlannerPanel::stabilityRunning() const { return stabilityProc_->running(); }

QString PlannerPanel::stabilityText() const { return stabilityLabel_->text(); }

void PlannerPanel::toggleStability() {
  if (stabilityRunning())
    cancelStability();
  else
    runStability();
}

void PlannerPanel::runStability() {
  stabilityMessage_.clear();
  if (!experiment_.is_object()) {
    stabilityMessage_ = tr("<span style='color:#d62728'>stability: the design is not valid; nothing to predict</span>");
    showStability();
    return;
  }
  // Its own file: the plan may rewrite design.json while the estimate reads it.
  const QString designFile = tmp_->filePath("stability-design.json");
  QFile f(designFile);
  const QByteArray text = QByteArray::fromStdString(experiment_.dump(2));
  if (!tmp_->isValid() || !f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size()) {
    stabilityMessage_ = tr("<span style='color:#d62728'>stability: cannot write the design to %1</span>").arg(designFile.toHtmlEscaped());
    showStability();
    Q_EMIT stabilityFailed();
    return;
  }
  f.close();
  runningKey_ = stabilityKey(experiment_, timingModel());
  stabilityProgress_ = tr("starting");
  stabilityCancelled_ = false;
  // The probe is what the verdict rests on; the analytic bound comes first and beside it, its
  // curvature on one microbatch (three take ResNet-20 at P = 11 over three minutes alone: both
  // together stay under five).
  stabilityProc_->start({"plan", "--stability", designFile, "--timing", timingModel(), "--probe", "--stability-microbatches", "1"});
  setStabilityRunning(true);
  showStability();
}

void PlannerPanel::cancelStability() {
  if (!stabilityRunning()) return;
  stabilityCancelled_ = true;
  stabilityProc_->cancel();  // cancelled() follows, which says so
}

void PlannerPanel::setStabilityRunning(bool running) {
  stabilityButton_->setText(running ? tr("Cancel") : tr("Predict stability edge"));
  stabilityBusy_->setRange(0, 0);  // busy until the first progress that counts
  stabilityBusy_->setVisible(running);
}

void PlannerPanel::connectStability() {
  connect(stabilityButton_, &QPushButton::clicked, this, &PlannerPanel::toggleStability);
  connect(stabilityProc_, &PlanProcess::progress, this, [this](const QString&, qint64 done, qint64 total, const QString& message) {
    stabilityProgress_ = message;
    if (total > 0) {
      stabilityBusy_->setRange(0, static_cast<int>(total));
      stabilityBusy_->setValue(static_cast<int>(done));
    } else {
      stabilityBusy_->setRange(0, 0);
    }
    showStability();
  });
  connect(stabilityProc_, &PlanProcess::finished, this, &PlannerPanel::stabilityFinished);
  connect(stabilityProc_, &PlanProcess::failed, this, [this](const QString& message, const QString& place) {
    // A problem of the design names the temporary file it was handed over in.
    const QString where = place.isEmpty() ? QString() : place + QStringLiteral(": ");
    stabilityFailedWith(QString(where + message).replace(tmp_->filePath("stability-design.json"), tr("the design")));
  });
  connect(stabilityProc_, &PlanProcess::cancelled, this, [this] {
    setStabilityRunning(false);
    stabilityMessage_ = tr("<span style='color:#7f7f7f'>Stability prediction cancelled.</span>");
    showStability();
  });
}

void PlannerPanel::stabilityFinished() {
  setStabilityRunning(false);
  const Json& j = stabilityProc_->result();
  if (!j.contains("design") || !j["design"].is_object()) {
    stabilityFailedWith(tr("the result has no design"));
    return;
  }
  stability_ = j;
  stabilityKey_ = runningKey_;
  showStability();
  Q_EMIT stabilityPredicted();
}

void PlannerPanel::stabilityFailedWith(const QString& message) {
  setStabilityRunning(false);
  stability_ = Json();
  stabilityKey_.clear();
  stabilityMessage_ = tr("<span style='color:#d62728'>stability: %1</span>").arg(message.toHtmlEscaped());
  showStability();
  Q_EMIT stabilityFailed();
}

namespace {

QString rate(double v) { return QString::number(v, 'g', 4); }

double number(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

QString text(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? QString::fromStdString(j[key].get<std::string>()) : QString();
}

const QString kGrey = QStringLiteral("#7f7f7f"), kRed = QStringLiteral("#d62728"), kGreen = QStringLiteral("#2ca02c");

// "lr 0.3 is above the probed stability edge 0.075 of pipemare (detail): consequence" in red, or
// "lr 0.05 is below ... (detail)." in green.
QString verdictLine(double lr, double edge, const QString& kind, const QString& schedule, const QString& detail,
                    const QString& consequence) {
  if (lr > edge)
    return QCoreApplication::translate("PlannerPanel", "<span style='color:%1'><b>lr %2 is above the %3 stability edge %4 of %5</b> (%6): %7.</span>")
        .arg(kRed, rate(lr), kind, rate(edge), schedule.toHtmlEscaped(), detail, consequence);
  return QCoreApplication::translate("PlannerPanel", "<span style='color:%1'>lr %2 is below the %3 stability edge %4 of %5</span> (%6).")
      .arg(kGreen, rate(lr), kind, rate(edge), schedule.toHtmlEscaped(), detail);
}

}  // namespace

// The verdict on the design's current lr: against the probed edge of its schedule when the probe
// ran (what it rests on said), against the analytic bound beside it; then every schedule's edges.
QString PlannerPanel::stabilityVerdictHtml() const {
  const Json& d = stability_["design"];
  // The design's current lr (it follows the field as it is typed).
  double lr = number(d, "lr");
  if (experiment_.contains("optimizer") && experiment_["optimizer"].is_object()) {
    const double typed = number(experiment_["optimizer"], "lr");
    if (std::isfinite(typed)) lr = typed;
  }
  const std::string optimizer = stability_.contains("optimizer") ? text(stability_["optimizer"], "name").toStdString() : "sgd";
  const bool sgd = optimizer.empty() || optimizer == "sgd";
  QString html;

  // The probe: the design's row, its bracket, and what the trials were.
  const Json probe = stability_.contains("probe") ? stability_["probe"] : Json();
  if (probe.is_object() && probe.contains("design")) {
    const Json& pd = probe["design"];
    const QString row = text(pd, "schedule");
    const double edge = number(pd, "edge");
    const Json* r = nullptr;
    if (probe.contains("schedules"))
      for (const auto& x : probe["schedules"])
        if (text(x, "schedule") == row) r = &x;
    const QString bracket = r ? tr("trains up to %1, breaks at %2").arg(rate(number(*r, "trains_up_to")),
                                                                       std::isfinite(number(*r, "breaks_at"))
                                                                           ? rate(number(*r, "breaks_at"))
                                                                           : tr("none tried"))
                              : QString();
    if (!std::isfinite(edge))
      html = tr("<span style='color:%1'>The probe found no rate that trains %2.</span>").arg(kGrey, row.toHtmlEscaped());
    else
      html = verdictLine(lr, edge, tr("probed"), row, bracket, tr("short trainings of the design at such rates broke"));
    if (probe.value("cancelled", false)) html += tr(" <span style='color:%1'>(the probe was cancelled: partial)</span>").arg(kGrey);
  }

  // The analytic bound.
  const QString designRow = text(d, "schedule");
  const QString method = d.contains("method") ? text(d, "method") : designRow;
  const QString schedule = method == designRow ? designRow : tr("%1 (the %2 row)").arg(method, designRow);
  const QString curvature = text(d, "curvature");
  const bool hasEdge = std::isfinite(number(d, "max_lr")) && std::isfinite(number(d, "breaking_stage"));
  QString bound;
  if (!hasEdge) {
    bound = tr("<span style='color:%1'>No stage of %2 has positive curvature (%3): no analytic stability edge.</span>")
                .arg(kGrey, schedule.toHtmlEscaped(), curvature.toHtmlEscaped());
  } else {
    const double edge = number(d, "max_lr");
    const int stage = static_cast<int>(number(d, "breaking_stage"));
    const QString where = tr("stage %1 breaks first, curvature %2").arg(stage).arg(curvature.toHtmlEscaped());
    if (!sgd)
      bound = tr("<span style='color:%1'>Analytic stability edge %2 of %3 for plain SGD (%4); no verdict on lr %5: %6's "
                 "per-coordinate scaling is not modelled.</span>")
                  .arg(kGrey, rate(edge), schedule.toHtmlEscaped(), where, rate(lr), QString::fromStdString(optimizer).toHtmlEscaped());
    else if (probe.is_object())
      bound = tr("<span style='color:%1'>Analytic bound (delayed quadratic): lr %2 is %3 the predicted stability edge %4 of %5 "
                 "(%6); the bound is conservative where curvature and BatchNorm change as training goes "
                 "(reports/study.md, section 4).</span>")
                  .arg(kGrey, rate(lr), lr > edge ? tr("above") : tr("below"), rate(edge), schedule.toHtmlEscaped(), where);
    else
      bound = verdictLine(lr, edge, tr("predicted"), schedule, where, tr("on the delayed-quadratic model it diverges"));
  }
  html += (html.isEmpty() ? QString() : QStringLiteral("<br>")) + bound;

  // Every schedule's edges: probed (with its ratio to the synchronous one) and analytic.
  std::map<std::string, double> analytic;
  if (stability_.contains("predictions"))
    for (const auto& p : stability_["predictions"]) {
      if (text(p, "curvature") != curvature || !p.contains("schedules")) continue;
      for (const auto& row : p["schedules"]) analytic[text(row, "schedule").toStdString()] = number(row, "max_lr");
    }
  QStringList edges;
  if (probe.is_object() && probe.contains("schedules")) {
    for (const auto& row : probe["schedules"]) {
      const std::string name = text(row, "schedule").toStdString();
      const double e = number(row, "edge"), ratio = number(row, "ratio_to_synchronous");
      QString item = QString::fromStdString(name) + " " + (std::isfinite(e) ? rate(e) : tr("none"));
      if (std::isfinite(ratio) && name != "gpipe") item += tr(" (%1x sync)").arg(QString::number(ratio, 'f', 2));
      const auto a = analytic.find(name);
      if (a != analytic.end()) item += tr(", bound %1").arg(std::isfinite(a->second) ? rate(a->second) : tr("none"));
      edges << item;
    }
    html += tr("<br><span style='color:%1'>Probed edges: %2.</span>").arg(kGrey, edges.join("; ").toHtmlEscaped());
    html += tr("<br><span style='color:%1'>The probe (%2 s): %3-step trainings of each schedule from initialization, "
               "bisected to %4x; a rate trains while no loss blows up and its last losses stay within %5% of the "
               "schedule's best rate's; the delayed schedules are capped by gpipe's edge (hover for more).</span>")
                .arg(kGrey, QString::number(number(probe, "seconds"), 'f', 0), QString::number(number(probe, "steps"), 'f', 0),
                     QString::number(number(probe, "resolution"), 'g', 3), QString::number(100 * number(probe, "tolerance"), 'g', 3));
  } else {
    for (const auto& [name, e] : analytic)
      if (QString::fromStdString(name) != designRow) edges << QString::fromStdString(name) + " " + (std::isfinite(e) ? rate(e) : tr("none"));
    const QString oneEdge = text(stability_, "one_edge");
    if (!oneEdge.isEmpty())
      html += tr("<br><span style='color:%1'>Every schedule has this edge: %2.</span>").arg(kGrey, oneEdge.toHtmlEscaped());
    else if (!edges.isEmpty())
      html += tr("<br><span style='color:%1'>Other schedules' edges: %2.</span>").arg(kGrey, edges.join(", ").toHtmlEscaped());
  }
  return html;
}

void PlannerPanel::showStability() {
  QString html;
  if (stabilityRunning()) {
    html = tr("<span style='color:#7f7f7f'>Predicting the stability edge%1</span>")
               .arg(stabilityProgress_.isEmpty() ? tr("...") : tr(": %1").arg(stabilityProgress_.toHtmlEscaped()));
  } else if (!stabilityMessage_.isEmpty() && !(stabilityCancelled_ && stability_.is_object())) {
    // A failure, or a cancel with no earlier prediction to show (a cancel keeps the last one).
    html = stabilityMessage_;
  } else if (!stability_.is_object()) {
    html = tr("<span style='color:#7f7f7f'>Stability edge: not predicted (the largest stable learning rate of the "
              "design's schedule).</span>");
  } else if (!experiment_.is_object()) {
    html = tr("<span style='color:#7f7f7f'>Stability edge: the design is not valid.</span>");
  } else if (!stabilityCurrent()) {
    html = tr("<span style='color:#7f7f7f'>Stability edge: design changed: predict again.</span>");
  } else {
    html = stabilityVerdictHtml();
  }
  stabilityLabel_->setText(html);
  // What the probe rests on, in full (the line says it in short).
  const bool probed = stabilityCurrent() && stability_.contains("probe") && stability_["probe"].is_object();
  stabilityLabel_->setToolTip(probed ? text(stability_["probe"], "assumes") : QString());
}

}  // namespace pm::ui
