// The planner panel's stability edge (planner_panel.h): `pipemare plan --stability` on the design
// in a child process (its progress, result or error as events), cancelled by the same button,
// and the verdict on the design's lr, which follows the lr as it is typed.
#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTemporaryDir>

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
  stabilityProc_->start({"plan", "--stability", designFile, "--timing", timingModel()});
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

}  // namespace

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
    const Json& d = stability_["design"];
    // The row the design takes ("pipemare+T1"), named as the design is where that differs
    // ("pipemare+T1+T2 (the pipemare+T1 row)": T2 does not move the edge).
    const QString designRow = QString::fromStdString(d.value("schedule", std::string()));
    const QString method = QString::fromStdString(d.value("method", designRow.toStdString()));
    const QString schedule = method == designRow ? designRow : tr("%1 (the %2 row)").arg(method, designRow);
    const QString curvature = QString::fromStdString(d.value("curvature", std::string()));
    const std::string optimizer = stability_.contains("optimizer") && stability_["optimizer"].is_object()
                                      ? stability_["optimizer"].value("name", std::string("sgd"))
                                      : std::string("sgd");
    double lr = d.value("lr", 0.0);
    if (experiment_.contains("optimizer") && experiment_["optimizer"].is_object() && experiment_["optimizer"].contains("lr") &&
        experiment_["optimizer"]["lr"].is_number())
      lr = experiment_["optimizer"]["lr"].get<double>();
    const bool hasEdge = d.contains("max_lr") && d["max_lr"].is_number() && d.contains("breaking_stage") &&
                         d["breaking_stage"].is_number();
    if (!hasEdge) {
      html = tr("<span style='color:#7f7f7f'>No stage of %1 has positive curvature (%2): no predicted stability "
                "edge.</span>").arg(schedule.toHtmlEscaped(), curvature.toHtmlEscaped());
    } else {
      const double edge = d["max_lr"].get<double>();
      const int stage = d["breaking_stage"].get<int>();
      if (optimizer != "sgd")
        html = tr("<span style='color:#7f7f7f'>Predicted stability edge %1 of %2 for plain SGD (stage %3 breaks first, "
                  "curvature %4); no verdict on lr %5: %6's per-coordinate scaling is not modelled.</span>")
                   .arg(rate(edge), schedule.toHtmlEscaped())
                   .arg(stage)
                   .arg(curvature.toHtmlEscaped(), rate(lr), QString::fromStdString(optimizer).toHtmlEscaped());
      else if (lr > edge)
        html = tr("<span style='color:#d62728'><b>lr %1 is above the predicted stability edge %2 of %3</b> (stage %4 "
                  "breaks first, curvature %5): on the delayed-quadratic model it diverges. The bound is conservative: "
                  "in the study (reports/study.md, section 4) ResNet-20 trained above its predicted edge.</span>")
                   .arg(rate(lr), rate(edge), schedule.toHtmlEscaped())
                   .arg(stage)
                   .arg(curvature.toHtmlEscaped());
      else
        html = tr("<span style='color:#2ca02c'>lr %1 is below the predicted stability edge %2 of %3</span> (stage %4 "
                  "breaks first, curvature %5).")
                   .arg(rate(lr), rate(edge), schedule.toHtmlEscaped())
                   .arg(stage)
                   .arg(curvature.toHtmlEscaped());
    }
    // The other schedules' edges at the same curvature, for comparison.
    QStringList others;
    if (stability_.contains("predictions"))
      for (const auto& p : stability_["predictions"]) {
        if (p.value("curvature", std::string()) != curvature.toStdString() || !p.contains("schedules")) continue;
        for (const auto& row : p["schedules"]) {
          const QString name = QString::fromStdString(row.value("schedule", std::string()));
          if (name == designRow) continue;
          others << (row.contains("max_lr") && row["max_lr"].is_number() ? tr("%1 %2").arg(name, rate(row["max_lr"].get<double>()))
                                                                          : tr("%1 none").arg(name));
        }
      }
    const QString oneEdge = QString::fromStdString(stability_.value("one_edge", std::string()));
    if (!oneEdge.isEmpty())
      html += tr("<br><span style='color:#7f7f7f'>Every schedule has this edge: %1.</span>").arg(oneEdge.toHtmlEscaped());
    else if (!others.isEmpty())
      html += tr("<br><span style='color:#7f7f7f'>Other schedules' edges: %1.</span>").arg(others.join(", ").toHtmlEscaped());
  }
  stabilityLabel_->setText(html);
}

}  // namespace pm::ui
