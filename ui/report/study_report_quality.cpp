// The study report's quality sections (1, 1b-1f): ResNet-20's accuracy per variant and learning
// rate, the quality targets and what a synchronous warm-up costs.
#include "ui/report/study_report_writer.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/analysis/stored_run.h"
#include "core/events/metric_keys.h"
#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"
#include "core/analysis/sweep_tags.h"
#include "core/pipeline/utilization.h"
#include "core/store/run_store.h"
#include "core/util/stats.h"
#include "ui/plots/curve_plot.h"

namespace pm::ui {

namespace {

using namespace study;

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

// The optimizer a run used, as the setup line of a quality section names it (absent fields take
// the engine's defaults: sgd, momentum 0).
QString optimizerText(const RunRecord& r) {
  const OptimizerConfig& o = readStoredExperiment(r).experiment.optimizer;
  if (o.name == OptimizerType::Adam) return "Adam";
  if (o.name == OptimizerType::AdamW) return "AdamW";
  if (o.momentum <= 0) return "plain SGD (momentum 0)";
  return QString("SGD with %1momentum %2").arg(o.nesterov ? "Nesterov " : "").arg(o.momentum);
}

// The optimizer of a section's runs, or each one's when they differ.
QString optimizerText(const std::vector<RunRecord>& runs) {
  QStringList names;
  for (const auto& r : runs)
    if (const QString name = optimizerText(r); !names.contains(name)) names << name;
  return names.size() == 1 ? names.front() : "mixed optimizers (" + names.join(", ") + ")";
}

// Whether every one of `status` (one per seed) is `s` (false for none).
bool allAre(const std::vector<RunStatus>& status, RunStatus s) {
  return !status.empty() && std::all_of(status.begin(), status.end(), [s](RunStatus x) { return x == s; });
}

// The status shared by every seed, or each seed's: "finished", "finished / diverged".
std::string seedsStatusText(const std::vector<RunStatus>& status) {
  if (allAre(status, status.front())) return toString(status.front());
  std::string out;
  for (RunStatus x : status) out += (out.empty() ? "" : " / ") + std::string(toString(x));
  return out;
}

// One variant at one learning rate in a quality section: a figure per seed.
struct QualityCell {
  std::vector<int64_t> seeds;
  std::vector<double> epoch1, mid, last;  // mid: after the section's alsoEpoch
  std::vector<RunStatus> status;
  double delay = NAN;  // stage 0's largest recorded delay (stage0/tau) over the seeds
  // The final accuracy the targets judge: the mean over seeds, and only when every seed finished
  // (a diverged, failed or stopped run's last evaluation came before its end: it must not read as
  // a result, let alone meet a target).
  bool allFinished() const { return allAre(status, RunStatus::Finished); }
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
  std::string statusText() const { return seedsStatusText(status); }
};

// lr -> variant -> the variant's cell; lr -> (variant, data) of each run, for the figures.
using QualityCells = std::map<std::string, std::map<QString, QualityCell>>;
using QualityCurves = std::map<std::string, std::vector<std::pair<QString, RunData>>>;

// The setup line: mode, stages, microbatches, training images and optimizer of the section's runs.
void writeQualitySetup(QTextStream& md, const std::vector<RunRecord>& runs, const QString& variantsNote, int alsoEpoch) {
  const RunRecord& any = runs.front();
  const int64_t limit = readStoredExperiment(any).experiment.data.train_limit;
  md << "Single-process mode, " << any.stages << " stages, N = " << any.microbatches << " microbatches, "
     << (limit > 0 ? QString("the first %L1 training images").arg(limit) : QString("all training images"))
     << ", " << optimizerText(runs) << "; test accuracy at the end of epoch 1" << (alsoEpoch > 1 ? QString(", of epoch %1").arg(alsoEpoch) : QString())
     << " and of the last epoch (the experiment files are "
         "`experiments/study/resnet20-*.json`)." << (variantsNote.isEmpty() ? QString() : " " + variantsNote) << "\n\n";
}

// lr -> variant -> one entry per seed, and each run's data for the figures.
void collectQuality(const RunStore& store, const std::vector<RunRecord>& runs, int alsoEpoch, QualityCells& byLr,
                    QualityCurves& curves) {
  for (const auto& r : runs) {
    const std::string lr = sweepTagValue(r, "optimizer.lr", "");
    RunData d = loadRunData(store, r.id);
    const auto& acc = d.metric(metric::kEvalAccuracy);
    QualityCell& c = byLr[lr][variantOf(r)];
    c.seeds.push_back(seedOf(r));
    c.epoch1.push_back(acc.empty() ? NAN : acc.front().value);
    c.mid.push_back(alsoEpoch > 1 && acc.size() >= static_cast<size_t>(alsoEpoch) ? acc[alsoEpoch - 1].value : NAN);
    c.last.push_back(lastFinite(acc));
    c.status.push_back(r.status);
    for (const auto& p : d.metric(metric::stageKey(0, metric::kStageTau)))
      if (std::isfinite(p.value) && !(p.value <= c.delay)) c.delay = p.value;
    curves[lr].emplace_back(variantOf(r), std::move(d));
  }
}

// The section's table, a row per variant and learning rate; `into` receives each row's final accuracy.
void writeQualityTable(QTextStream& md, const QualityCells& byLr, int alsoEpoch, RegimeResults& into) {
  const QString midColumn = alsoEpoch > 1 ? QString(" accuracy after epoch %1 |").arg(alsoEpoch) : QString();
  md << "| variant | lr | accuracy after epoch 1 |" << midColumn << " accuracy at the end | vs gpipe (points) | status |\n"
     << "|---|---|---|" << (alsoEpoch > 1 ? "---|" : "") << "---|---|---|\n";
  for (const auto& [lr, variants] : byLr) {
    const double ref = variants.count("gpipe") ? variants.at("gpipe").meanLast() : NAN;
    for (const auto& [v, c] : variants) {
      md << "| " << v << " | " << QString::fromStdString(lr) << " | " << c.show(c.epoch1) << " | "
          << (alsoEpoch > 1 ? c.show(c.mid) + " | " : QString()) << c.show(c.last) << " | "
          << (v == "gpipe" && std::isfinite(ref) ? num(0.0, 2) : signedNum((c.meanLast() - ref) * 100, 2)) << " | " << QString::fromStdString(c.statusText()) << " |\n";
      FinalAccuracy& f = into[lr][v.toStdString()];
      f.mean = c.meanLast();
      f.seeds = c.seeds;
      f.delay = c.delay;
      for (double x : c.last)
        if (std::isfinite(x)) {
          f.lo = std::isfinite(f.lo) ? std::min(f.lo, x) : x;
          f.hi = std::isfinite(f.hi) ? std::max(f.hi, x) : x;
        }
    }
  }
}

// One learning rate's figure: each run's test accuracy against the step.
void addQualityCurves(CurvePlot& plot, const std::vector<std::pair<QString, RunData>>& list,
                      const std::map<QString, QualityCell>& cells) {
  int i = 0;
  std::map<QString, int> seen;  // a variant's later seeds keep its colour, dashed
  std::map<QString, QColor> colour;
  for (const auto& [v, d] : list) {
    if (!colour.count(v)) colour[v] = kPalette[i++ % 10];
    const int nth = seen[v]++;
    const QString label = cells.at(v).seeds.size() > 1 ? QString("%1 (seed %2)").arg(v).arg(cells.at(v).seeds[nth]) : v;
    addStepSeries(plot, label, colour[v], d.metric(metric::kEvalAccuracy), nth > 0 ? Qt::DashLine : Qt::SolidLine);
  }
}

}  // namespace

using namespace study;

void StudyReportWriter::quality(const std::string& tag, const QString& heading, const QString& figurePrefix,
                                RegimeResults& into, const QString& variantsNote,
                                int alsoEpoch) {
  auto runs = runsTagged(store_, tag);
  md_ << heading << "\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `" << QString::fromStdString(tag) << "` in the store._\n\n";
    return;
  }
  md_ << provenance(runs) << "\n\n";
  settings_[&into] = regimeSetting(runs);
  writeQualitySetup(md_, runs, variantsNote, alsoEpoch);
  // lr -> variant -> one entry per seed. Several seeds of a variant show as their mean, with each
  // seed's figure beside it; the targets are judged on the means.
  QualityCells byLr;
  QualityCurves curves;
  collectQuality(store_, runs, alsoEpoch, byLr, curves);
  writeQualityTable(md_, byLr, alsoEpoch, into);
  md_ << "\n";
  std::map<std::string, std::map<QString, std::pair<double, double>>> means;  // lr -> variant -> (epoch1, last)
  std::map<std::string, std::map<QString, std::vector<RunStatus>>> statusOf;
  for (const auto& [lr, variants] : byLr)
    for (const auto& [v, c] : variants) {
      means[lr][v] = {mean(c.epoch1), c.meanLast()};
      statusOf[lr][v] = c.status;
    }
  qualityTargets(means, statusOf, into);
  warmupCost(runs);
  for (auto& [lr, list] : curves) {
    CurvePlot plot;
    plot.setTitle(QString("ResNet-20, P = 11: test accuracy, lr = %1").arg(QString::fromStdString(lr)));
    plot.setAxisLabels("step", "test accuracy");
    plot.setLegendCorner(Qt::AlignBottom | Qt::AlignRight);  // the curves rise to the top right
    addQualityCurves(plot, list, byLr.at(lr));
    plot.replot();
    const QString name = figure(QString("%1-lr%2.png").arg(figurePrefix, QString::fromStdString(lr)));
    plot.save(o_.outDir + "/" + name, 900, 500);
    md_ << "![test accuracy, lr " << QString::fromStdString(lr) << "](" << name << ")\n\n";
  }
}

// The asynchronous-schedules issue's two quality targets, judged on this regime's runs: T1+T2
// within 1.0 accuracy point of gpipe after the last epoch at every learning rate, and the naive
// baseline more than 5 points worse, or diverged, at the highest learning rate. A gap judged on two
// or more seeds states their spread, and one that misses the 1.0 point by less than it is within
// noise.
void StudyReportWriter::qualityTargets(
    const std::map<std::string, std::map<QString, std::pair<double, double>>>& byLr,
    const std::map<std::string, std::map<QString, std::vector<RunStatus>>>& statusOf, const RegimeResults& results) {
  QStringList within;  // per PipeMare variant: "T1+T2 within 1.0 point of gpipe: lr .. (met), .."
  for (const auto& [variant, title] : kPipeMareVariants) {
    QStringList per;
    for (const auto& [lr, v] : byLr)
      if (v.count("gpipe") && v.count(variant)) {
        const std::vector<RunStatus>& st = statusOf.at(lr).at(variant);
        const std::vector<RunStatus>& gpipeSt = statusOf.at(lr).at("gpipe");
        const double d = (v.at(variant).second - v.at("gpipe").second) * 100;
        if (!allAre(st, RunStatus::Finished))  // diverged, failed, stopped: its last accuracy is not a final one
          per << QString("lr %1 %2 (not met)").arg(QString::fromStdString(lr), QString::fromStdString(seedsStatusText(st)));
        else if (!allAre(gpipeSt, RunStatus::Finished))
          per << QString("lr %1 - (gpipe %2: no reference)").arg(QString::fromStdString(lr), QString::fromStdString(seedsStatusText(gpipeSt)));
        else {
          const Gap g = gapOf(results, lr, variant);
          const QString verdict = std::isfinite(d) && d >= -kTargetPoints ? "met" : !std::isfinite(d) || missesTarget(g) ? "not met" : "within noise";
          per << QString("lr %1 %2 (%3%4)")
                     .arg(QString::fromStdString(lr), num(d, 2), verdict,
                          g.seeds >= 2 ? QString("; %1 seeds, spread %2").arg(g.seeds).arg(num(g.spread, 2)) : QString());
        }
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
    const std::vector<RunStatus>& naiveStatus = statusOf.at(high).at("naive");
    const std::vector<RunStatus>& gpipeStatus = statusOf.at(high).at("gpipe");
    // Diverged in any seed counts: the rate is not safe for the naive baseline.
    const bool diverged = std::find(naiveStatus.begin(), naiveStatus.end(), RunStatus::Diverged) != naiveStatus.end();
    const bool allDiverged = allAre(naiveStatus, RunStatus::Diverged);
    const double d = (v.at("naive").second - v.at("gpipe").second) * 100;
    const QString head = QString("naive more than 5 points worse than gpipe, or diverged, at the highest learning rate (%1): ").arg(QString::fromStdString(high));
    if (!allAre(gpipeStatus, RunStatus::Finished))  // the target presumes gpipe still trains at that rate
      naive = head + QString("- (gpipe %1: no reference)").arg(QString::fromStdString(seedsStatusText(gpipeStatus)));
    else if (diverged)
      naive = head + (allDiverged ? QString("diverged (met)") : QString("diverged in some seeds (%1) (met)").arg(QString::fromStdString(seedsStatusText(naiveStatus))));
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
    const Experiment e = readStoredExperiment(r).experiment;
    const double w = e.pipemare.warmup_epochs;
    const double epochs = e.training.epochs;
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

}  // namespace pm::ui
