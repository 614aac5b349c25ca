// The study report: the helpers its sections share, its outline and the claims (6). The quality
// sections are in study_report_quality.cpp, the others in study_report_sections.cpp.
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
#include <functional>
#include <cmath>
#include <map>
#include <stdexcept>

#include "core/analysis/stored_run.h"
#include "core/analysis/run_data.h"
#include "core/analysis/speedup_breakdown.h"
#include "core/analysis/run_summary.h"
#include "core/analysis/stability_edges.h"
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

// The PipeMare variants of the quality sections (T1 and T2 both on), each judged against the
// target "within 1.0 point of gpipe", and their titles.
const std::vector<std::pair<QString, QString>> kPipeMareVariants = {
    {"t1t2", "T1+T2"},
    {"t1t2-k3", "T1+T2 with K = 3 epochs"},
    {"t1t2-dm", "T1+T2 with delay-scaled momentum"},
    {"t1t2-warmup", "T1+T2 after a warm-up epoch"},
    {"t1t2-warmup0.25", "T1+T2 after a quarter-epoch warm-up"}};

QString num(double v, int decimals) { return std::isfinite(v) ? QString::number(v, 'f', decimals) : QString("-"); }

QString signedNum(double v, int decimals) { return (std::isfinite(v) && v >= 0 ? "+" : "") + num(v, decimals); }

QString variantOf(const RunRecord& r) {
  const std::string prefix = kVariantTagPrefix;
  for (const auto& t : r.tags)
    if (t.size() > prefix.size() && t.compare(0, prefix.size(), prefix) == 0) return QString::fromStdString(t.substr(prefix.size()));
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

QString roundsRange(const std::vector<double>& v, int decimals, const QString& unit, bool withCount) {
  std::vector<double> f;
  for (double x : v)
    if (std::isfinite(x)) f.push_back(x);
  if (f.size() < 2) return {};
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  const QString range = QString("%1-%2%3").arg(num(*lo, decimals), num(*hi, decimals), unit);
  return withCount ? QString(" (%1 over %2 rounds)").arg(range).arg(f.size()) : " (" + range + ")";
}

int64_t seedOf(const RunRecord& r) {
  return static_cast<int64_t>(readStoredExperiment(r).experiment.training.seed);
}

double cpuHours(const std::vector<RunRecord>& runs) {
  double hours = 0;
  for (const auto& r : runs) {
    if (!(r.started_at > 0) || !(r.finished_at > r.started_at)) continue;
    const ExecutionConfig& exec = readStoredExperiment(r).experiment.execution;
    const int perStage = std::max(1, exec.threads_per_stage);
    // single: one process computes every stage in turn; real: one process per stage.
    const int threads = exec.mode == ExecutionMode::Single ? perStage : perStage * std::max(1, r.stages);
    hours += (r.finished_at - r.started_at) / 3600.0 * threads;
  }
  return hours;
}

QString regimeSetting(const std::vector<RunRecord>& runs) {
  if (runs.empty()) return QString();
  const Experiment e = readStoredExperiment(runs.front()).experiment;
  const int64_t limit = e.data.train_limit;
  const int epochs = static_cast<int>(e.training.epochs);
  const bool plain = e.optimizer.name == OptimizerType::Sgd && e.optimizer.momentum <= 0;
  return QString("%L1 images, %2 epoch%3, N = %4%5")
      .arg(limit > 0 ? limit : 60000)
      .arg(epochs)
      .arg(epochs == 1 ? "" : "s")
      .arg(runs.front().microbatches)
      .arg(plain ? ", plain SGD" : "");
}

}  // namespace study

using namespace study;

namespace {
// The store the report reads, migrated first when it is of an older schema (the shipped
// reports/study.db.xz is decompressed into a copy that may be).
std::string readableStore(const QString& db) {
  if (db.isEmpty()) return ":memory:";
  RunStore::migrateIfOlder(db.toStdString());
  return db.toStdString();
}
}  // namespace

StudyReportWriter::StudyReportWriter(const StudyReportOptions& o)
    : o_(o), store_(readableStore(o.db), /*readOnly=*/!o.db.isEmpty()) {
  QDir().mkpath(o.outDir + "/figures");
}

int StudyReportWriter::write() {
  // Every part is written first and the report assembled after: the summary and section 1's
  // overview need the figures of the detailed parts, which go to the appendix.
  quality("study:quality", "### A1. ResNet-20, the first 12,000 training images, 3 epochs, N = 2", "quality", quality_);
  const QString a1 = take();
  quality("study:quality-full", "### A2. All 60,000 training images, 3 epochs, N = 2 (5x the optimizer steps of A1)", "quality-full",
          qualityFull_,
          "t1t2-k3 is T1+T2 with T1 annealed over the whole run (K = 3 epochs of updates, not 1), so the delayed "
          "stages keep a reduced learning rate to the end; t1t2-dm is T1+T2 with each stage's momentum reduced by "
          "tau/(1+tau); t1t2-warmup is T1+T2 after one synchronous "
          "(gpipe) warm-up epoch in the same processes, so its epoch-1 figure is gpipe's exactly; t1t2-warmup0.25 "
          "warms up for a quarter of an epoch only. lr 0.3 asks whether the naive baseline breaks at a rate where "
          "gpipe still trains.");
  const QString a2 = take();
  quality("study:quality-long", "### A3. Longer training: all 60,000 training images, 10 epochs, N = 2", "quality-long",
          qualityLong_,
          "As A2, but 10 epochs instead of 3 (the cosine decay spans the 10): does the gap between T1+T2 and gpipe "
          "close with more training, as the paper's full-length runs suggest? T1 still anneals over the first epoch; "
          "the epoch-3 column is the point A2 ends at, though on a slower-decaying learning rate.",
          3);
  const QString a3 = take();
  quality("study:quality-n4", "### A4. Middle delays: N = 4 microbatches, all 60,000 training images", "quality-n4", qualityN4_,
          "With 4 microbatches per minibatch (32 images each) stage 0's delay is ceil(10/4) = 3 optimizer steps, between "
          "N = 2's 5 and N = 8's 2.");
  const QString a4 = take();
  quality("study:quality-n8", "### A5. Shorter delays: N = 8 microbatches, all 60,000 training images", "quality-n8", qualityN8_,
          "With 8 microbatches per minibatch (16 images each) a stage steps once per 8 microbatches, so stage 0's delay "
          "is ceil(10/8) = 2 optimizer steps instead of 5 with N = 2; gpipe is the same algorithm at any N (only "
          "BatchNorm sees smaller microbatches).");
  const QString a5 = take();
  quality("study:quality-m0", "### A6. Without momentum: plain SGD, N = 2, all 60,000 training images", "quality-m0", qualityM0_,
          "As A2, but every variant uses plain SGD (momentum 0) instead of SGD with momentum 0.9: a delay acts like "
          "extra momentum (Mitliagkas et al., \"Asynchrony begets momentum\"), so on top of 0.9 it adds to a step "
          "that is already near its stability limit. Without momentum the same effective step needs a learning rate "
          "about 10x higher (lr 1.0 here against lr 0.1 with momentum 0.9).");
  const QString a6 = take();
  charlm();
  const QString a7 = take();
  hardware();
  const QString s2 = take();
  planner();
  const QString s3 = take();
  stability();
  const QString s4 = take();
  frontier();
  const QString s5 = take();
  qualityOverview();
  const QString s1 = take();
  summary();
  const QString top = take();

  md_ << "# Reproduction study: PipeMare against GPipe, 1F1B, PipeDream and PipeDream-2BW\n\n"
      << "Generated by `scripts/reproduce.sh` (`pipemare-report`) "
      << (o_.db.isEmpty() ? QStringLiteral("without a run store (only the parts that need no runs)")
                          : "from the runs in `" + QFileInfo(o_.db).fileName() + "`")
      << " on " << QString::fromStdString(hostLine())
      << "; every figure is drawn by the workbench's own plot widgets. Each section names the revision, seeds and CPU "
         "hours of its runs.\n\n"
      << top << s1 << s2 << s3 << s4 << s5
      << "## Appendix: every quality regime in detail\n\n"
         "ResNet-20 on Fashion-MNIST in single-process mode with one stage per unit (P = 11); test accuracy per "
         "variant, learning rate and seed, the quality targets of each regime, and its curves. A regime without "
         "runs has not been run into this store; `scripts/reproduce.sh --resume --only PART` adds what it lacks (A1 quality, A2 "
         "quality-full, A3 quality-long, A4 quality-n4, A5 quality-n8, A6 quality-m0, A7 charlm).\n\n"
      << a1 << a2 << a3 << a4 << a5 << a6 << a7;
  QFile f(o_.outDir + "/study.md");
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) throw std::runtime_error("cannot write " + f.fileName().toStdString());
  f.write(take().toUtf8());
  return figures_;
}

QString StudyReportWriter::take() {
  md_.flush();
  QString part = text_;
  text_.clear();
  md_.setString(&text_);
  return part;
}

std::string StudyReportWriter::hostLine() const {
  auto runs = store_.listRuns();
  return runs.empty() ? std::string("no runs") : runs.front().host + ", revision " + runs.front().revision;
}

QString StudyReportWriter::figure(const QString& name) {
  ++figures_;
  return "figures/" + name;
}

namespace study {

QString gapText(const Gap& g, bool withUnit) {
  if (!std::isfinite(g.points)) return QStringLiteral("-");
  QString t = signedNum(g.points, 2) + (withUnit ? " points" : "");
  t += g.seeds >= 2 ? QString(" (%1 seeds, spread %2)").arg(g.seeds).arg(num(g.spread, 2)) : QString(" (1 seed)");
  return t;
}

QString gapVerdict(const Gap& g) {
  switch (pm::judgeGap(g)) {
    case pm::GapVerdict::NoFigure: return QStringLiteral("no figure");
    case pm::GapVerdict::NotReproduced: return QStringLiteral("not reproduced");
    case pm::GapVerdict::WithinNoise:
      return QString("within noise: it misses the %1-point target by %2, less than the seeds' spread (%3 points)")
          .arg(num(kTargetPoints, 1), num(-kTargetPoints - g.points, 2), num(g.spread, 2));
    case pm::GapVerdict::ReproducedWithinNoise:
      return QString("reproduced, within noise (seeds differ by %1 points)").arg(num(g.spread, 2));
    case pm::GapVerdict::Reproduced: return QStringLiteral("reproduced");
  }
  return QStringLiteral("no figure");
}

}  // namespace study

namespace {

// One regime of section 1 and the appendix part that details it (its setting is read from its
// runs: settings_).
struct Regime {
  const RegimeResults* results;
  const char* tag;
  QString part;  // "A2"
};

// A planner ratio against the paper's: reproduced within 20 %.
QString ratioVerdict(double ratio, double paper) {
  if (!std::isfinite(ratio)) return QStringLiteral("no figure");
  return pm::ratioReproduced(ratio, paper) ? QStringLiteral("reproduced (planner)") : QStringLiteral("not reproduced (planner)");
}

}  // namespace

// Section 1's lead: per regime, the gap of T1+T2, of the best other PipeMare variant and of the
// naive baseline to gpipe at each learning rate.
void StudyReportWriter::qualityOverview() {
  const std::vector<Regime> regimes = {{&quality_, "study:quality", "A1"},       {&qualityFull_, "study:quality-full", "A2"},
                                       {&qualityLong_, "study:quality-long", "A3"}, {&qualityN4_, "study:quality-n4", "A4"},
                                       {&qualityN8_, "study:quality-n8", "A5"},     {&qualityM0_, "study:quality-m0", "A6"}};
  md_ << "## 1. Quality, and what it depends on\n\n";
  std::vector<RunRecord> all;
  for (const auto& r : regimes)
    for (auto& run : runsTagged(store_, r.tag)) all.push_back(std::move(run));
  if (all.empty()) {
    md_ << "_No quality runs in the store._\n\n";
    return;
  }
  md_ << provenance(all) << "\n\n";
  // The lead figure: the regime and rate the summary judges.
  if (const QualityHeadline h = headline(); h.results)
    md_ << "![test accuracy, " << h.prefix << ", lr " << QString::fromStdString(h.lr) << "](figures/" << h.prefix << "-lr"
        << QString::fromStdString(h.lr) << ".png)\n\n";
  md_ << "ResNet-20 on Fashion-MNIST (5,000 test images), P = 11 (one stage per unit), SGD with momentum 0.9 unless "
         "the regime says otherwise; each cell is the final test accuracy minus gpipe's at the same rate, in points, "
         "with its seeds and their spread. The target is PipeMare (T1+T2) within "
      << num(kTargetPoints, 1) << " point of gpipe; the naive baseline shows what the delay costs without PipeMare.\n\n"
      << "| regime | lr | gpipe | T1+T2 | best other T1+T2 variant | naive | detail |\n|---|---|---|---|---|---|---|\n";
  for (const auto& reg : regimes)
    for (const auto& [lr, v] : *reg.results) {
      if (!v.count("gpipe")) continue;
      QString other = "-";
      double best = -1e9;
      for (const auto& [variant, title] : kPipeMareVariants) {
        if (variant == "t1t2") continue;
        const Gap g = gapOf(*reg.results, lr, variant);
        if (std::isfinite(g.points) && g.points > best) {
          best = g.points;
          other = title + ": " + gapText(g);
        }
      }
      const FinalAccuracy& ref = v.at("gpipe");
      md_ << "| " << settings_.value(reg.results) << " | " << QString::fromStdString(lr) << " | " << num(ref.mean, 4) << " | "
          << gapText(gapOf(*reg.results, lr, "t1t2")) << " | " << other << " | " << gapText(gapOf(*reg.results, lr, "naive"))
          << " | " << reg.part << " |\n";
    }
  md_ << "\n";
  qualityDependencies();
}

// What the gap depends on: the regimes that differ from A2 in one thing each, side by side.
void StudyReportWriter::qualityDependencies() {
  QStringList lines;
  // "T1+T2 -3.18 (2 seeds, spread 0.60) at N = 2, ..." for the entries with a figure; "" when none.
  auto series = [](const QString& title, const std::vector<std::pair<Gap, QString>>& entries) {
    QStringList parts;
    for (const auto& [g, where] : entries)
      if (std::isfinite(g.points)) parts << gapText(g) + " " + where;
    return parts.isEmpty() ? QString() : title + " " + parts.join(", ");
  };
  auto both = [&](const std::function<std::vector<std::pair<Gap, QString>>(const QString&)>& entries) {
    QStringList parts;
    for (const auto& [variant, title] : {std::pair{QStringLiteral("t1t2"), QStringLiteral("T1+T2")}, {"naive", "naive"}})
      if (QString t = series(title, entries(variant)); !t.isEmpty()) parts << t;
    return parts;
  };
  // Delay: the same rate at N = 2, 4 and 8; stage 0's delay in optimizer steps as its runs recorded
  // it (their stage0/tau: ceil((P - 1) / N) once the pipeline is full).
  if (const std::string lr = bestGpipeRate(qualityFull_, "t1t2"); !lr.empty()) {
    const std::vector<std::pair<const RegimeResults*, int>> byN = {{&qualityFull_, 2}, {&qualityN4_, 4}, {&qualityN8_, 8}};
    const QStringList parts = both([&](const QString& variant) {
      std::vector<std::pair<Gap, QString>> e;
      for (const auto& [r, n] : byN) {
        const double delay = delayOf(*r, lr, variant.toStdString());
        e.push_back({gapOf(*r, lr, variant), QString("at N = %1 (delay %2)").arg(n).arg(std::isfinite(delay) ? num(delay, 0) : QString("not recorded"))});
      }
      return e;
    });
    int regimes = 0;
    for (const auto& [r, n] : byN) regimes += std::isfinite(gapOf(*r, lr, "t1t2").points) || std::isfinite(gapOf(*r, lr, "naive").points);
    if (regimes >= 2)
      lines << "- **Delay** (lr " + QString::fromStdString(lr) + "; stage 0's delay in optimizer steps): " + parts.join("; ") + ".";
  }
  // Momentum: A2 (0.9) and A6 (plain SGD), each at its own best gpipe rate.
  const std::string lrM = bestGpipeRate(qualityFull_, "t1t2"), lrP = bestGpipeRate(qualityM0_, "t1t2");
  if (!lrM.empty() && !lrP.empty() && std::isfinite(gapOf(qualityM0_, lrP, "t1t2").points))
    lines << "- **Momentum** (each at gpipe's best rate among those with the most seeds, as plain SGD needs a higher one): " +
                 both([&](const QString& variant) {
                   return std::vector<std::pair<Gap, QString>>{
                       {gapOf(qualityFull_, lrM, variant), "with momentum 0.9 (A2, lr " + QString::fromStdString(lrM) + ")"},
                       {gapOf(qualityM0_, lrP, variant), "with plain SGD (A6, lr " + QString::fromStdString(lrP) + ")"}};
                 }).join("; ") +
                 ".";
  // Warm-up: A2's T1+T2 without, after a quarter epoch and after a whole epoch of synchronous training.
  if (!lrM.empty()) {
    const QString t = series("T1+T2", {{gapOf(qualityFull_, lrM, "t1t2"), "without"},
                                       {gapOf(qualityFull_, lrM, "t1t2-warmup0.25"), "after a quarter-epoch warm-up"},
                                       {gapOf(qualityFull_, lrM, "t1t2-warmup"), "after a warm-up epoch"}});
    if (std::isfinite(gapOf(qualityFull_, lrM, "t1t2-warmup0.25").points) || std::isfinite(gapOf(qualityFull_, lrM, "t1t2-warmup").points))
      lines << "- **Warm-up** (A2, lr " + QString::fromStdString(lrM) + "): " + t + ".";
  }
  // Training length: A2 (3 epochs) and A3 (10 epochs) at A3's best gpipe rate.
  if (const std::string lr = bestGpipeRate(qualityLong_, "t1t2"); !lr.empty() && std::isfinite(gapOf(qualityFull_, lr, "t1t2").points))
    lines << "- **Training length** (lr " + QString::fromStdString(lr) + "): " +
                 both([&](const QString& variant) {
                   return std::vector<std::pair<Gap, QString>>{{gapOf(qualityFull_, lr, variant), "after 3 epochs (A2)"},
                                                               {gapOf(qualityLong_, lr, variant), "after 10 epochs (A3)"}};
                 }).join("; ") +
                 ".";
  if (lines.isEmpty()) return;
  md_ << "**What the gap depends on** (accuracy points from gpipe at the same rate; each line sets A2 beside the regimes "
         "that differ from it in one thing):\n\n"
      << lines.join("\n") << "\n\n";
}

// The longest training that has both gpipe and T1+T2 (10 epochs, else 3 on all images, else 3 on
// 12,000), at gpipe's best rate there.
QualityHeadline StudyReportWriter::headline() const {
  for (const auto& [results, prefix] : {std::pair{&qualityLong_, "quality-long"}, {&qualityFull_, "quality-full"}, {&quality_, "quality"}})
    if (std::string lr = bestGpipeRate(*results, "t1t2"); !lr.empty()) return {results, std::move(lr), prefix};
  return {};
}

// The one-screen summary.
void StudyReportWriter::summary() {
  md_ << "## Summary\n\n"
      << "| claim (PipeMare paper) | measured here | setting | verdict |\n|---|---|---|---|\n";
  // Quality: judged on the headline regime.
  if (const QualityHeadline h = headline(); h.results) {
    const std::string& lr = h.lr;
    const Gap g = gapOf(*h.results, lr, "t1t2");
    QString verdict = gapVerdict(g);
    if (g.points < -kTargetPoints) {
      // A miss, or one within noise: the conditions under which it does hold (a PipeMare variant,
      // shorter delays, no momentum).
      QStringList conditions;
      for (const auto& [variant, title] : kPipeMareVariants) {
        if (variant == "t1t2") continue;
        for (const RegimeResults* r : {&qualityLong_, &qualityFull_}) {
          const Gap c = gapOf(*r, r->count(lr) ? lr : bestGpipeRate(*r, variant), variant);
          if (std::isfinite(c.points) && c.points >= -kTargetPoints) {
            conditions << QString("%1 %2").arg(title, gapText(c, true));
            break;
          }
        }
      }
      for (const auto& [r, condition] : {std::pair{&qualityN8_, "N = 8 (delay 2 steps)"}, {&qualityN4_, "N = 4 (delay 3 steps)"},
                                         {&qualityM0_, "plain SGD"}}) {
        const Gap c = gapOf(*r, bestGpipeRate(*r, "t1t2"), "t1t2");
        if (std::isfinite(c.points) && c.points >= -kTargetPoints) conditions << QString("%1 %2").arg(condition, gapText(c, true));
      }
      if (!conditions.isEmpty())
        verdict = missesTarget(g) ? "reproduced with a condition: " + conditions.join("; ")
                                  : verdict + "; met with a condition: " + conditions.join("; ");
    }
    md_ << "| T1+T2 within ~1 point of synchronous training | T1+T2 - gpipe: " << gapText(g, true) << " | ResNet-20, "
        << settings_.value(h.results) << ", P = 11, lr " << QString::fromStdString(lr) << " (section 1) | " << verdict << " |\n";
  } else {
    md_ << "| T1+T2 within ~1 point of synchronous training | - | no quality runs | - |\n";
  }

  const double memPlan = plan_.count(8) ? plan_[8].second : NAN;
  QString memMeasured;
  if (hwMemory_.count("pipedream") && hwMemory_.count("pipemare") && hwMemory_["pipemare"] > 0)
    memMeasured = QString("; measured at P = 2 (cnn): %1x").arg(num(hwMemory_["pipedream"] / hwMemory_["pipemare"], 2));
  md_ << "| 2.7x less weight+optimizer memory than PipeDream | planner " << num(memPlan, 2) << "x" << memMeasured
      << " | ResNet-50, P = 107, N = 8 (section 3); P = 2 in section 2 | " << ratioVerdict(memPlan, 2.7) << " |\n";
  const double u8 = plan_.count(8) ? plan_[8].first : NAN, u32 = plan_.count(32) ? plan_[32].first : NAN;
  QString tput;
  if (hw_.count("pipemare/2") && hw_.count("gpipe/2")) {
    // Round by round, as both ran against the same baseline.
    const auto& pm = hw_["pipemare/2"];
    const auto& gp = hw_["gpipe/2"];
    std::vector<double> ratios;
    for (size_t k = 0; k < std::min(pm.size(), gp.size()); ++k) ratios.push_back(pm[k] / gp[k]);
    tput = QString("; measured throughput at P = 2: %1x%2").arg(num(median(ratios), 2), roundsRange(ratios, 2, "x"));
  }
  md_ << "| 14.3x (N = 8) and 4.3x (N = 32) the utilization of GPipe | planner " << num(u8, 2) << "x and " << num(u32, 2) << "x"
      << tput << " | ResNet-50, P = 107 (section 3); 2 cores bound P = 2 to (N + P - 1) / N (section 2) | "
      << (ratioVerdict(u8, 14.3) == ratioVerdict(u32, 4.3) ? ratioVerdict(u8, 14.3)
                                                           : "N = 8: " + ratioVerdict(u8, 14.3) + ", N = 32: " + ratioVerdict(u32, 4.3))
      << " |\n";
  // The stability edge: the probe and the analytic bound, model by model.
  if (!stabilityTallies_.empty()) {
    QStringList probe, bound, settings;
    bool allWithin = true, anyWithin = false;
    for (const auto& t : stabilityTallies_) {
      const int within = t.probe.count(FactorVerdict::Within) ? t.probe.at(FactorVerdict::Within) : 0;
      const int bwithin = t.bound.count(FactorVerdict::Within) ? t.bound.at(FactorVerdict::Within) : 0;
      probe << QString("%1 of %2 schedules on %3").arg(within).arg(t.schedules).arg(t.model);
      bound << QString("%1 of %2").arg(bwithin).arg(t.schedules);
      settings << t.setting;
      allWithin = allWithin && within == t.schedules;
      anyWithin = anyWithin || within > 0;
    }
    md_ << "| (this project) the stability edge predicted before training, within 2x of the measured | probe: "
        << probe.join(", ") << "; analytic bound: " << bound.join(" and ") << " | " << settings.join("; ")
        << " (section 4) | " << (allWithin ? QStringLiteral("held") : anyWithin ? QStringLiteral("held in part") : QStringLiteral("not held"))
        << " |\n";
  }
  frontierSummary();
  md_ << "\n";
}

int writeStudyReport(const StudyReportOptions& o) {
  StudyReportWriter r(o);
  return r.write();
}

}  // namespace pm::ui
