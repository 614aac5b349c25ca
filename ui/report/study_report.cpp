#include "ui/report/study_report.h"
#include "ui/report/study_report_writer.h"

#include <QDir>
#include <QFileInfo>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "core/analysis/run_data.h"
#include "core/analysis/speedup_breakdown.h"
#include "core/analysis/run_summary.h"
#include "core/analysis/sweep_tags.h"
#include "core/pipeline/utilization.h"
#include "core/store/run_store.h"
#include "core/util/stats.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/gantt_plot.h"
#include "ui/plots/heat_map.h"

namespace pm::ui {
namespace study {

const QColor kPalette[10] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44), QColor(214, 39, 40),
                             QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194), QColor(127, 127, 127),
                             QColor(188, 189, 34), QColor(23, 190, 207)};

QString num(double v, int decimals) { return std::isfinite(v) ? QString::number(v, 'f', decimals) : QString("-"); }

QString variantOf(const RunRecord& r) {
  QString n = QString::fromStdString(r.name);
  const int bracket = n.indexOf(" [");
  if (bracket >= 0) n = n.left(bracket);
  const int dash = n.lastIndexOf('-');
  const QStringList parts = n.split('-');
  return parts.size() >= 3 ? parts.mid(2).join('-') : (dash >= 0 ? n.mid(dash + 1) : n);
}

std::vector<RunRecord> runsTagged(const RunStore& store, const std::string& tag) {
  RunFilter f;
  f.tag = tag;
  auto runs = store.listRuns(f);
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  return runs;
}

void addStepSeries(CurvePlot& plot, const QString& name, const QColor& color, const std::vector<MetricPoint>& pts,
                   Qt::PenStyle style) {
  std::vector<double> x, y;
  for (const auto& p : pts) {
    x.push_back(static_cast<double>(p.step));
    y.push_back(p.value);
  }
  plot.setSeriesData(plot.addSeries(name, color, style), std::move(x), std::move(y));
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

}  // namespace study

namespace {

using namespace study;

// The PipeMare variants of the quality sections (T1 and T2 both on), each judged against the
// target "within 1.0 point of gpipe", and their titles.
const std::vector<std::pair<QString, QString>> kPipeMareVariants = {
    {"t1t2", "T1+T2"},
    {"t1t2-k3", "T1+T2 with K = 3 epochs"},
    {"t1t2-dm", "T1+T2 with delay-scaled momentum"},
    {"t1t2-warmup", "T1+T2 after a warm-up epoch"},
    {"t1t2-warmup0.25", "T1+T2 after a quarter-epoch warm-up"}};

double mean(const std::vector<double>& v) {
  double sum = 0;
  int n = 0;
  for (double x : v)
    if (std::isfinite(x)) {
      sum += x;
      ++n;
    }
  return n ? sum / n : NAN;
}

// The training seed a run used (its experiment's training.seed).
int64_t seedOf(const RunRecord& r) {
  const QJsonObject cfg = QJsonDocument::fromJson(QByteArray::fromStdString(r.config_json)).object();
  return cfg.value("training").toObject().value("seed").toInteger(1);
}

// The optimizer a run used, as the setup line of a quality section names it (absent fields take
// the engine's defaults: sgd, momentum 0).
QString optimizerText(const RunRecord& r) {
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(r.config_json));
  if (!doc.isObject()) return "an unknown optimizer";
  const QJsonObject o = doc.object().value("optimizer").toObject();
  const QString name = o.value("name").toString("sgd");
  if (name == "adam") return "Adam";
  if (name == "adamw") return "AdamW";
  if (name != "sgd") return name;
  const double momentum = o.value("momentum").toDouble(0);  // the engine's default: 0
  if (momentum <= 0) return "plain SGD (momentum 0)";
  return QString("SGD with %1momentum %2").arg(o.value("nesterov").toBool(false) ? "Nesterov " : "").arg(momentum);
}

// The optimizer of a section's runs, or each one's when they differ.
QString optimizerText(const std::vector<RunRecord>& runs) {
  QStringList names;
  for (const auto& r : runs)
    if (const QString name = optimizerText(r); !names.contains(name)) names << name;
  return names.size() == 1 ? names.front() : "mixed optimizers (" + names.join(", ") + ")";
}

// One variant at one learning rate in a quality section: a figure per seed.
struct QualityCell {
  std::vector<int64_t> seeds;
  std::vector<double> epoch1, mid, last;  // mid: after the section's alsoEpoch
  std::vector<std::string> status;
  // The final accuracy the targets judge: the mean over seeds, and only when every seed finished
  // (a diverged, failed or stopped run's last evaluation came before its end: it must not read as
  // a result, let alone meet a target).
  bool allFinished() const {
    return !status.empty() && std::all_of(status.begin(), status.end(), [](const std::string& x) { return x == "finished"; });
  }
  double meanLast() const {
    if (!allFinished()) return NAN;
    for (double x : last)
      if (!std::isfinite(x)) return NAN;
    return mean(last);
  }
  // One seed: its figure. Several: the mean (of the seeds that have the figure), then each seed's.
  QString show(const std::vector<double>& v) const {
    if (v.size() == 1) return num(v.front());
    QStringList each;
    size_t finite = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      each << QString("seed %1: %2").arg(seeds[i]).arg(num(v[i]));
      finite += std::isfinite(v[i]) ? 1 : 0;
    }
    const QString of = finite == v.size() ? QString::number(v.size()) : QString("%1 of %2").arg(finite).arg(v.size());
    return QString("%1 (mean of %2; %3)").arg(num(mean(v))).arg(of).arg(each.join(", "));
  }
  // The status shared by every seed, or each seed's.
  std::string statusText() const {
    if (std::all_of(status.begin(), status.end(), [&](const std::string& x) { return x == status.front(); })) return status.front();
    std::string out;
    for (const auto& x : status) out += (out.empty() ? "" : " / ") + x;
    return out;
  }
};

}  // namespace

using namespace study;

StudyReportWriter::StudyReportWriter(const StudyReportOptions& o)
    : o_(o), store_(o.db.isEmpty() ? std::string(":memory:") : o.db.toStdString(), /*readOnly=*/!o.db.isEmpty()) {
  QDir().mkpath(o.outDir + "/figures");
}

int StudyReportWriter::write() {
  md_ << "# Reproduction study: PipeMare against GPipe, 1F1B, PipeDream and PipeDream-2BW\n\n"
      << "Generated by `scripts/reproduce.sh` (`pipemare-report`) "
      << (o_.db.isEmpty() ? QStringLiteral("without a run store (only the parts that need no runs)")
                          : "from the runs in `" + QFileInfo(o_.db).fileName() + "`")
      << "; every figure below is drawn by the workbench's own plot widgets. Runs were made on this "
         "machine (" << QString::fromStdString(hostLine()) << ").\n\n";
  quality("study:quality", "## 1. Model quality: ResNet-20 on Fashion-MNIST, one stage per unit (P = 11)", "quality", quality_);
  quality("study:quality-full", "### 1b. Longer training: all 60,000 training images (5x the optimizer steps)", "quality-full",
          qualityFull_,
          "t1t2-k3 is T1+T2 with T1 annealed over the whole run (K = 3 epochs of updates, not 1), so the delayed "
          "stages keep a reduced learning rate to the end; t1t2-dm is T1+T2 with each stage's momentum reduced by "
          "tau/(1+tau); t1t2-warmup is T1+T2 after one synchronous "
          "(gpipe) warm-up epoch in the same processes, so its epoch-1 figure is gpipe's exactly; t1t2-warmup0.25 "
          "warms up for a quarter of an epoch only. Single runs of one variant differ by up to about a point between "
          "seeds, as large as the target itself, so the variants the targets judge ran with a second seed at lr 0.1; "
          "lr 0.3 asks whether the naive baseline breaks at a rate where gpipe still trains.");
  quality("study:quality-n8", "### 1c. Shorter delays: N = 8 microbatches, all 60,000 training images", "quality-n8", qualityN8_,
          "With 8 microbatches per minibatch (16 images each) a stage steps once per 8 microbatches, so stage 0's delay "
          "is ceil(10/8) = 2 optimizer steps instead of 5 with N = 2; gpipe is the same algorithm at any N (only "
          "BatchNorm sees smaller microbatches). Where lr 0.3 appears (gpipe and naive only), it asks whether the naive "
          "baseline breaks at a rate above the two of the other sections.");
  quality("study:quality-n4", "### 1d. Middle delays: N = 4 microbatches, all 60,000 training images", "quality-n4", qualityN4_,
          "With 4 microbatches per minibatch (32 images each) stage 0's delay is ceil(10/4) = 3 optimizer steps, between "
          "N = 2's 5 and N = 8's 2: where between them does the naive baseline break at the high rate, and does T1+T2 "
          "hold there?");
  quality("study:quality-long", "### 1e. Longer training still: N = 2, all 60,000 training images, 10 epochs", "quality-long",
          qualityLong_,
          "As 1b, but 10 epochs instead of 3 (the cosine decay spans the 10): does the gap between T1+T2 and gpipe "
          "that 1b measured after 3 epochs close with more training, as the paper's full-length runs suggest? T1 "
          "still anneals over the first epoch (K = one epoch of updates); the epoch-3 column is the point 1b ends "
          "at, though on a slower-decaying learning rate.",
          3);
  quality("study:quality-m0", "### 1f. Without momentum: plain SGD, N = 2, all 60,000 training images", "quality-m0", qualityM0_,
          "As 1b (stage 0's delay 5 optimizer steps), but every variant uses plain SGD (momentum 0) instead of SGD "
          "with momentum 0.9: a delay acts like extra momentum (Mitliagkas et al., \"Asynchrony begets momentum\"), "
          "so on top of 0.9 it adds to a step that is already near its stability limit. Without momentum the same "
          "effective step needs a learning rate about 10x higher (lr 1.0 here against lr 0.1 with momentum 0.9).");
  charlm();
  hardware();
  planner();
  stability();
  claims();
  QFile f(o_.outDir + "/study.md");
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) throw std::runtime_error("cannot write " + f.fileName().toStdString());
  f.write(text_.toUtf8());
  return figures_;
}

std::string StudyReportWriter::hostLine() const {
  auto runs = store_.listRuns();
  return runs.empty() ? std::string("no runs") : runs.front().host + ", revision " + runs.front().revision;
}

QString StudyReportWriter::figure(const QString& name) {
  ++figures_;
  return "figures/" + name;
}

void StudyReportWriter::quality(const std::string& tag, const QString& heading, const QString& figurePrefix,
                                std::map<std::string, std::map<QString, double>>& into, const QString& variantsNote,
                                int alsoEpoch) {
  auto runs = runsTagged(store_, tag);
  md_ << heading << "\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `" << QString::fromStdString(tag) << "` in the store._\n\n";
    return;
  }
  const RunRecord& any = runs.front();
  const QJsonObject data = QJsonDocument::fromJson(QByteArray::fromStdString(any.config_json)).object().value("data").toObject();
  const int limit = data.value("train_limit").toInt();
  md_ << "Single-process mode, " << any.stages << " stages, N = " << any.microbatches << " microbatches, "
      << (limit > 0 ? QString("the first %L1 training images").arg(limit) : QString("all training images"))
      << ", " << optimizerText(runs) << "; test accuracy at the end of epoch 1" << (alsoEpoch > 1 ? QString(", of epoch %1").arg(alsoEpoch) : QString())
      << " and of the last epoch (the experiment files are "
         "`experiments/study/resnet20-*.json`)." << (variantsNote.isEmpty() ? QString() : " " + variantsNote) << "\n\n";
  // lr -> variant -> one entry per seed. Several seeds of a variant show as their mean, with each
  // seed's figure beside it; the targets are judged on the means.
  std::map<std::string, std::map<QString, QualityCell>> byLr;
  std::map<std::string, std::vector<std::pair<QString, RunData>>> curves;
  for (const auto& r : runs) {
    const std::string lr = sweepTagValue(r, "optimizer.lr", "");
    RunData d = loadRunData(store_, r.id);
    const auto& acc = d.metric("eval/accuracy");
    QualityCell& c = byLr[lr][variantOf(r)];
    c.seeds.push_back(seedOf(r));
    c.epoch1.push_back(acc.empty() ? NAN : acc.front().value);
    c.mid.push_back(alsoEpoch > 1 && acc.size() >= static_cast<size_t>(alsoEpoch) ? acc[alsoEpoch - 1].value : NAN);
    c.last.push_back(lastFinite(acc));
    c.status.push_back(r.status);
    curves[lr].emplace_back(variantOf(r), std::move(d));
  }
  const QString midColumn = alsoEpoch > 1 ? QString(" accuracy after epoch %1 |").arg(alsoEpoch) : QString();
  md_ << "| variant | lr | accuracy after epoch 1 |" << midColumn << " accuracy at the end | vs gpipe (points) | status |\n"
      << "|---|---|---|" << (alsoEpoch > 1 ? "---|" : "") << "---|---|---|\n";
  for (const auto& [lr, variants] : byLr) {
    const double ref = variants.count("gpipe") ? variants.at("gpipe").meanLast() : NAN;
    for (const auto& [v, c] : variants) {
      md_ << "| " << v << " | " << QString::fromStdString(lr) << " | " << c.show(c.epoch1) << " | "
          << (alsoEpoch > 1 ? c.show(c.mid) + " | " : QString()) << c.show(c.last) << " | "
          << num((c.meanLast() - ref) * 100, 2) << " | " << QString::fromStdString(c.statusText()) << " |\n";
      into[lr][v] = c.meanLast();
    }
  }
  md_ << "\n";
  std::map<std::string, std::map<QString, std::pair<double, double>>> means;  // lr -> variant -> (epoch1, last)
  std::map<std::string, std::map<QString, std::string>> statusOf;
  for (const auto& [lr, variants] : byLr)
    for (const auto& [v, c] : variants) {
      means[lr][v] = {mean(c.epoch1), c.meanLast()};
      statusOf[lr][v] = c.statusText();
    }
  qualityTargets(means, statusOf);
  warmupCost(runs);
  for (auto& [lr, list] : curves) {
    CurvePlot plot;
    plot.setTitle(QString("ResNet-20, P = 11: test accuracy, lr = %1").arg(QString::fromStdString(lr)));
    plot.setAxisLabels("step", "test accuracy");
    plot.setLegendCorner(Qt::AlignBottom | Qt::AlignRight);  // the curves rise to the top right
    int i = 0;
    std::map<QString, int> seen;  // a variant's later seeds keep its colour, dashed
    std::map<QString, QColor> colour;
    for (auto& [v, d] : list) {
      if (!colour.count(v)) colour[v] = kPalette[i++ % 10];
      const int nth = seen[v]++;
      const QString label = byLr[lr][v].seeds.size() > 1 ? QString("%1 (seed %2)").arg(v).arg(byLr[lr][v].seeds[nth]) : v;
      addStepSeries(plot, label, colour[v], d.metric("eval/accuracy"), nth > 0 ? Qt::DashLine : Qt::SolidLine);
    }
    plot.replot();
    const QString name = figure(QString("%1-lr%2.png").arg(figurePrefix, QString::fromStdString(lr)));
    plot.save(o_.outDir + "/" + name, 900, 500);
    md_ << "![test accuracy, lr " << QString::fromStdString(lr) << "](" << name << ")\n\n";
  }
}

// The asynchronous-schedules issue's two quality targets, judged on this regime's runs: T1+T2
// within 1.0 accuracy point of gpipe after the last epoch at every learning rate, and the naive
// baseline more than 5 points worse, or diverged, at the highest learning rate.
void StudyReportWriter::qualityTargets(
    const std::map<std::string, std::map<QString, std::pair<double, double>>>& byLr,
    const std::map<std::string, std::map<QString, std::string>>& statusOf) {
  QStringList within;  // per PipeMare variant: "T1+T2 within 1.0 point of gpipe: lr .. (met), .."
  for (const auto& [variant, title] : kPipeMareVariants) {
    QStringList per;
    for (const auto& [lr, v] : byLr)
      if (v.count("gpipe") && v.count(variant)) {
        const std::string& st = statusOf.at(lr).at(variant);
        const double d = (v.at(variant).second - v.at("gpipe").second) * 100;
        if (st != "finished")  // diverged, failed, stopped: its last accuracy is not a final one
          per << QString("lr %1 %2 (not met)").arg(QString::fromStdString(lr), QString::fromStdString(st));
        else if (statusOf.at(lr).at("gpipe") != "finished")
          per << QString("lr %1 - (gpipe %2: no reference)").arg(QString::fromStdString(lr), QString::fromStdString(statusOf.at(lr).at("gpipe")));
        else
          per << QString("lr %1 %2 (%3)").arg(QString::fromStdString(lr), num(d, 2), std::isfinite(d) && d >= -1.0 ? "met" : "not met");
      }
    if (!per.isEmpty()) within << title + " within 1.0 point of gpipe: " + per.join(", ");
  }
  QString naive;
  std::string high;
  double highRate = 0;
  for (const auto& [lr, v] : byLr) {
    bool isNumber = false;
    const double rate = QString::fromStdString(lr).toDouble(&isNumber);
    if (isNumber && v.count("gpipe") && v.count("naive") && (high.empty() || rate > highRate)) {
      high = lr;
      highRate = rate;
    }
  }
  if (!high.empty()) {
    const auto& v = byLr.at(high);
    const std::string& naiveStatus = statusOf.at(high).at("naive");
    const std::string& gpipeStatus = statusOf.at(high).at("gpipe");
    // Diverged in any seed counts: the rate is not safe for the naive baseline.
    const bool diverged = naiveStatus.find("diverged") != std::string::npos;
    const bool allDiverged = naiveStatus == "diverged";
    const double d = (v.at("naive").second - v.at("gpipe").second) * 100;
    const QString head = QString("naive more than 5 points worse than gpipe, or diverged, at the highest learning rate (%1): ").arg(QString::fromStdString(high));
    if (gpipeStatus != "finished")  // the target presumes gpipe still trains at that rate
      naive = head + QString("- (gpipe %1: no reference)").arg(QString::fromStdString(gpipeStatus));
    else if (diverged)
      naive = head + (allDiverged ? QString("diverged (met)") : QString("diverged in some seeds (%1) (met)").arg(QString::fromStdString(naiveStatus)));
    else
      naive = head + QString("%1 (%2)").arg(num(d, 2), std::isfinite(d) && d < -5.0 ? "met" : "not met");
  }
  if (!naive.isEmpty()) within << naive;
  if (within.isEmpty()) return;
  md_ << "**Targets** (after the last epoch): " << within.join("; ") << ".";
  md_ << "\n\n";
}

// What a synchronous warm-up costs in utilization, beside what it buys in accuracy: the
// planner's figures (equal stages) for gpipe, pipemare, and each warm-up variant's hybrid.
void StudyReportWriter::warmupCost(const std::vector<RunRecord>& runs) {
  std::map<QString, std::pair<double, double>> warmups;  // variant -> (warmup_epochs, epochs)
  for (const auto& r : runs) {
    const QJsonObject cfg = QJsonDocument::fromJson(QByteArray::fromStdString(r.config_json)).object();
    const double w = cfg.value("pipemare").toObject().value("warmup_epochs").toDouble(0);
    const double epochs = cfg.value("training").toObject().value("epochs").toDouble(0);
    if (w > 0 && epochs > 0) warmups[variantOf(r)] = {w, epochs};
  }
  if (warmups.empty()) return;
  const RunRecord& any = runs.front();
  const double ug = synchronousUtilization(any.stages, any.microbatches, {});
  const double um = asynchronousUtilization(any.stages, 0, {});
  QStringList parts;
  for (const auto& [v, we] : warmups) {
    const double u = hybridUtilization(std::min(1.0, we.first / we.second), ug, um);
    parts << QString("%1 (%2 of %3 epochs as gpipe) %4 (%5x)").arg(v).arg(we.first).arg(we.second).arg(num(u, 3)).arg(num(u / ug, 2));
  }
  md_ << "**What the warm-up costs** (planner, equal stages, P = " << any.stages << ", N = " << any.microbatches
      << "; the hybrid's utilization is time-weighted): gpipe " << num(ug, 3) << ", pipemare " << num(um, 3) << " ("
      << num(um / ug, 2) << "x gpipe); " << parts.join("; ") << ".\n\n";
}

// (6) The claims.
void StudyReportWriter::claims() {
  md_ << "## 6. The paper's claims beside this project's measurements\n\n"
      << "| claim (PipeMare paper) | planner prediction | measured here |\n|---|---|---|\n";
  QString q;
  for (const auto& [lr, v] : quality_)
    if (v.count("t1t2") && v.count("gpipe"))
      q += std::isfinite(v.at("t1t2") - v.at("gpipe"))
               ? QString("lr %1: T1+T2 %2 points vs gpipe; ").arg(QString::fromStdString(lr)).arg(num((v.at("t1t2") - v.at("gpipe")) * 100, 2))
               : QString("lr %1: T1+T2 not comparable (a run did not finish); ").arg(QString::fromStdString(lr));
  using Results = std::map<std::string, std::map<QString, double>>;
  const std::vector<std::pair<const Results*, QString>> regimes = {{&qualityFull_, "all 60,000 images"},
                                                                    {&qualityN8_, "all 60,000 images, N = 8"},
                                                                    {&qualityN4_, "all 60,000 images, N = 4"},
                                                                    {&qualityLong_, "all 60,000 images, 10 epochs"},
                                                                    {&qualityM0_, "all 60,000 images, plain SGD"}};
  for (const auto& [results, regime] : regimes)
    for (const auto& [lr, v] : *results) {
      if (!v.count("gpipe")) continue;
      for (const auto& [variant, title] : kPipeMareVariants)
        if (v.count(variant))
          q += QString("%1, lr %2: %3 %4; ")
                   .arg(regime, QString::fromStdString(lr), title)
                   .arg(std::isfinite(v.at(variant) - v.at("gpipe")) ? num((v.at(variant) - v.at("gpipe")) * 100, 2) + " points vs gpipe"
                                                                     : QString("not comparable (a run did not finish)"));
    }
  md_ << "| quality within ~1 point of synchronous training | - | " << (q.isEmpty() ? "-" : q) << " |\n";
  md_ << "| 2.7x less weight+optimizer memory than PipeDream (ResNet-50, N = 8) | "
      << (plan_.count(8) ? num(plan_[8].second, 2) + "x" : QString("-")) << " | (P = 2 runs: see section 3) |\n";
  md_ << "| 4.3x higher utilization than GPipe (N = 32) | " << (plan_.count(32) ? num(plan_[32].first, 2) + "x" : QString("-"))
      << " | - |\n";
  md_ << "| 14.3x higher utilization than GPipe (N = 8) | " << (plan_.count(8) ? num(plan_[8].first, 2) + "x" : QString("-"))
      << " | ";
  if (hw_.count("pipemare/2") && hw_.count("gpipe/2"))
    md_ << "P = 2, N = 8 on 2 cores: throughput pipemare/gpipe " << num(hw_["pipemare/2"][0] / hw_["gpipe/2"][0], 2) << "x"
        << (hw_.count("pipemare (paper timing)/2")
                ? QString(" (%1x with the paper's timing)").arg(num(hw_["pipemare (paper timing)/2"][0] / hw_["gpipe/2"][0], 2))
                : QString());
  else
    md_ << "-";
  md_ << " |\n\n";
}


int writeStudyReport(const StudyReportOptions& o) {
  StudyReportWriter r(o);
  return r.write();
}

}  // namespace pm::ui
