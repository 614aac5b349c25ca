#pragma once
// Internal to ui/report: the study report's writer, one method per section. study_report.cpp has
// the shared helpers, the report's outline and the claims (6); study_report_quality.cpp the
// quality sections (1, 1b-1f); study_report_sections.cpp the language model (2), hardware (3)
// and planner (4) sections; study_report_stability.cpp the stability section (5);
// study_report_frontier.cpp the synchronous frontier (section 5 of the report). GUI thread only.
#include <QColor>
#include <QJsonObject>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QTextStream>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/analysis/frontier.h"
#include "core/analysis/quality_gaps.h"
#include "core/analysis/stability_edges.h"
#include "core/store/run_store.h"
#include "ui/report/study_report.h"

namespace pm::ui {

class CurvePlot;

namespace study {

extern const QColor kPalette[10];

// The PipeMare variants of the quality sections (T1 and T2 both on), each judged against the
// target "within 1.0 point of gpipe", and their titles: (variant, title).
extern const std::vector<std::pair<QString, QString>> kPipeMareVariants;

QString num(double v, int decimals = 4);
// A difference, signed either way: "+0.35", "-1.20"; "-" when not finite.
QString signedNum(double v, int decimals);

// The tag scripts/reproduce.sh gives every run of a variant: "variant:t1t2".
inline constexpr const char* kVariantTagPrefix = "variant:";
// The study variant a run is of, as data: its "variant:NAME" tag; for runs recorded before
// reproduce.sh wrote it, read off the name it gave them ("study-resnet20-t1t2 [optimizer.lr=0.1]"
// -> "t1t2").
QString variantOf(const RunRecord& r);

std::vector<RunRecord> runsTagged(const RunStore& store, const std::string& tag);

// A metric's points against their step as one series of `plot`.
void addStepSeries(CurvePlot& plot, const QString& name, const QColor& color, const std::vector<MetricPoint>& pts,
                   Qt::PenStyle style = Qt::SolidLine);

QJsonObject readJson(const QString& path);

using pm::FinalAccuracy;
using pm::RegimeResults;

// " (1.21-1.28x over 3 rounds)" (" (1.21-1.28x)" without the count): the lowest and highest of
// v's finite values, when there are two or more; else "".
QString roundsRange(const std::vector<double>& v, int decimals, const QString& unit, bool withCount = true);

// The training seed a run used (its experiment's training.seed).
int64_t seedOf(const RunRecord& r);

using pm::Gap;
using pm::kTargetPoints;
using pm::missesTarget;
// core/analysis/quality_gaps.h's, for the report's variant names.
inline Gap gapOf(const RegimeResults& r, const std::string& lr, const QString& variant) {
  return pm::gapOf(r, lr, variant.toStdString());
}
inline Gap gapOf(const RegimeResults& r, const std::string& lr, const char* variant) { return pm::gapOf(r, lr, std::string(variant)); }
inline std::string bestGpipeRate(const RegimeResults& r, const QString& variant) { return pm::bestGpipeRate(r, variant.toStdString()); }
inline std::string bestGpipeRate(const RegimeResults& r, const char* variant) { return pm::bestGpipeRate(r, std::string(variant)); }
// "-0.80 (2 seeds, spread 0.80)"; withUnit: "-0.80 points (2 seeds, spread 0.80)".
QString gapText(const Gap& g, bool withUnit = false);
// reproduced / within noise / not reproduced (core/analysis/quality_gaps.h's judgeGap), in words.
QString gapVerdict(const Gap& g);

// The regime and learning rate the quality claim is judged on; results nullptr when none; prefix
// names its figures ("quality-full" -> figures/quality-full-lr<lr>.png).
struct QualityHeadline {
  const RegimeResults* results = nullptr;
  std::string lr;
  const char* prefix = "";
};

// Where a section's runs came from: "_12 runs, seeds 1, 2; revision abc1234; 0.8 CPU hours (wall
// time x threads)._"
QString provenance(const std::vector<RunRecord>& runs);
// A quality regime's training as its runs set it: "60,000 images, 3 epochs, N = 2" (", plain SGD"
// without momentum); data.train_limit 0 is the whole Fashion-MNIST training set.
QString regimeSetting(const std::vector<RunRecord>& runs);
// The CPU hours of runs: each run's wall time times the threads it used.
double cpuHours(const std::vector<RunRecord>& runs);

}  // namespace study

class StudyReportWriter {
 public:
  explicit StudyReportWriter(const StudyReportOptions& o);
  // Writes study.md and the figures; returns the number of figures.
  int write();

 private:
  // The text written to md_ since the last take(), which starts the next part.
  QString take();
  std::string hostLine() const;
  QString figure(const QString& name);
  // (1) Quality: ResNet-20, one stage per unit. `tag` selects the runs; `into` receives lr ->
  // variant -> final accuracy (for the claims); alsoEpoch > 1 adds a column with the accuracy after
  // that epoch (the study's presets evaluate once per epoch).
  void quality(const std::string& tag, const QString& heading, const QString& figurePrefix,
               study::RegimeResults& into, const QString& variantsNote = QString(),
               int alsoEpoch = 0);
  // statusOf: lr -> variant -> each seed's status.
  // results: the regime's final accuracies over seeds, for each gap's spread.
  void qualityTargets(const std::map<std::string, std::map<QString, std::pair<double, double>>>& byLr,
                      const std::map<std::string, std::map<QString, std::vector<RunStatus>>>& statusOf,
                      const study::RegimeResults& results);
  void warmupCost(const std::vector<RunRecord>& runs);
  // The one-screen summary: the paper's three claims (and the stability edge), each with the
  // measured figure, its setting and a verdict.
  void summary();
  // Section 1's lead: the accuracy gap to gpipe of every quality regime, seeds and spread.
  void qualityOverview();
  // Section 1's lines on what the gap to gpipe depends on: delay, momentum, warm-up, training length.
  void qualityDependencies();
  study::QualityHeadline headline() const;
  void charlm();
  void hardware();
  // Every round's run of one schedule (and timing) at one P, in the order they ran, with each
  // run's median samples/s and its speedup over its round's P = 1 run.
  struct HardwareGroup {
    std::string variant;  // "pipemare", "pipemare (paper timing)"
    int stages = 0;
    bool paperTiming = false;
    std::vector<RunRecord> runs;
    std::vector<double> rates, speedups;
  };
  static HardwareGroup hardwareGroupOf(const RunRecord& r);
  void hardwareRow(const HardwareGroup& g, size_t m, double baseCompute, double ceiling, QStringList& slowedBaseline);
  void timeline(const RunRecord& r, bool paperTiming);
  static std::vector<double> values(const std::vector<MetricPoint>& pts);
  void planner();
  void stability();
  // One model's map in the stability section: its runs (tag), the plan JSON beside the report with
  // both predictions, the figure's file.
  struct StabilityPart {
    QString tag, label, model, planFile, figure, training;
  };
  void stabilityPart(const StabilityPart& part);
  // (5) PipeMare against the synchronous frontier: planner, measured, quality check; its row of
  // the summary.
  void frontier();
  void frontierSummary();

  StudyReportOptions o_;
  RunStore store_;
  QString text_;
  QTextStream md_{&text_};
  int figures_ = 0;
  study::RegimeResults quality_, qualityFull_, qualityN8_, qualityN4_, qualityLong_, qualityM0_;
  std::map<std::string, std::vector<double>> hw_;  // "pipemare/2" -> its speedup over P = 1 in each round
  std::map<std::string, double> hwMemory_;  // schedule -> weights+stash+optimizer+delta summed over stages (peak, MiB)
  QMap<const study::RegimeResults*, QString> settings_;  // each quality regime's training, from its runs
  // Each stability map's verdicts, for the summary (none before the section has runs).
  struct StabilityTally {
    QString model;
    QString setting;  // "ResNet-20, P = 11, N = 2, 6 rates 0.004-0.4"
    int schedules = 0;
    int held = 0, conservative = 0, optimistic = 0;  // the analytic bound against the bracket
    int borderline = 0;                              // its decided verdicts whose measured edge is a near call
    std::map<FactorVerdict, int> bound, probe;            // within 2x of the measured edge
    std::map<FactorVerdict, int> boundRatio, probeRatio;  // the delay's effect within 2x
  };
  std::vector<StabilityTally> stabilityTallies_;
  std::map<int, std::pair<double, double>> plan_;
  // Section 5's judgments, for the summary: N -> pipemare+T2 against the frontier (equal stages,
  // and with the profile's op costs), and each measured setting's ("cnn P = 2").
  std::map<int, FrontierComparison> frontierPlan_, frontierPlanFlops_;
  std::vector<std::pair<QString, FrontierComparison>> frontierMeasured_;
};

}  // namespace pm::ui
