// The study report's language-model (2), hardware (3) and planner (4) sections.
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
#include <optional>
#include <stdexcept>

#include "core/analysis/run_data.h"
#include "core/analysis/speedup_breakdown.h"
#include "core/analysis/run_summary.h"
#include "core/analysis/sweep_tags.h"
#include "core/config/choices.h"
#include "core/util/stats.h"
#include "core/pipeline/utilization.h"
#include "core/store/run_store.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/gantt_plot.h"
#include "ui/plots/heat_map.h"

namespace pm::ui {

using namespace study;

// (2) Language model.
void StudyReportWriter::charlm() {
  auto runs = runsTagged(store_, "study:charlm");
  md_ << "### A7. Language model: byte-level Transformer (charlm) on the fortunes corpus\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `study:charlm`._\n\n";
    return;
  }
  md_ << provenance(runs) << "\n\n";
  md_ << "| run | schedule | P | N | final train loss | final eval loss | eval perplexity | status |\n|---|---|---|---|---|---|---|---|\n";
  CurvePlot plot;
  plot.setTitle("charlm: evaluation loss");
  plot.setAxisLabels("step", "eval loss (nats/byte)");
  int i = 0;
  for (const auto& r : runs) {
    RunData d = loadRunData(store_, r.id);
    md_ << "| " << QString::fromStdString(r.name) << " | " << QString::fromStdString(r.schedule) << " | " << r.stages << " | "
        << r.microbatches << " | " << num(lastFinite(d.metric("train/loss"))) << " | " << num(lastFinite(d.metric("eval/loss")))
        << " | " << num(lastFinite(d.metric("eval/perplexity")), 2) << " | " << QString::fromUtf8(toString(r.status)) << " |\n";
    addStepSeries(plot, QString::fromStdString(r.name), kPalette[i++ % 10], d.metric("eval/loss"));
  }
  plot.replot();
  const QString name = figure("charlm-eval-loss.png");
  plot.save(o_.outDir + "/" + name, 900, 500);
  md_ << "\n![charlm eval loss](" << name << ")\n\n";
}

namespace {

// The accounted memory categories (stage metrics mem/<category>), in the figure's order.
const char* const kCats[] = {"weights", "gradients", "optimizer", "stash", "delta", "activations"};

// The samples/s of two P = 1 runs side by side (tag study:hardware-ceiling) while both were
// training; empty unless there are exactly two.
std::vector<double> ceilingRates(const RunStore& store) {
  std::vector<std::vector<std::pair<double, double>>> progress;
  for (const auto& r : runsTagged(store, "study:hardware-ceiling")) {
    if (r.stages != 1) continue;
    const auto pts = loadRunData(store, r.id).metric("train/samples_per_s");
    std::vector<std::pair<double, double>> p;
    for (size_t i = 0; i < pts.size(); ++i)  // from the end of the first window (start-up) on
      p.push_back({pts[i].wall_time, i == 0 ? 0.0 : p.back().second + pts[i].value * (pts[i].wall_time - pts[i - 1].wall_time)});
    progress.push_back(p);
  }
  return progress.size() == 2 ? sideBySideRates(progress) : std::vector<double>{};
}

// What the hardware table shows, and this machine's 2-core ceiling.
void writeHardwareIntro(QTextStream& md, double ceiling, const std::vector<double>& side, double base) {
  md << "Throughput is the median of the logged samples/s; the baseline is the P = 1 run with one thread and the same microbatching (N = 8: 16-sample microbatches, so that the speedup is the pipeline's, not a change of batch shape). "
         "Utilization is compute / wall time per stage (last logging window); memory is the accounted peak per stage. "
         "The breakdown splits each speedup into its bounds: the balance bound (the stages' summed compute per minibatch over the slowest stage's), "
         "the fill N / (N + P - 1) of flushing schedules, the compute inflation (summed stage compute against P = 1's: cores slowing each other, recompute), "
         "their product (expected) and the pipeline efficiency (measured / expected: messages and waits).\n\n";
  if (std::isfinite(ceiling))
    md << "**This machine's 2-core ceiling: " << num(ceiling, 2) << "x.** Two independent P = 1 runs side by side (no pipeline, no messages; counted while both were training) ran at "
       << num(side[0], 0) << " and " << num(side[1], 0) << " samples/s against " << num(base, 0)
       << " alone: the two cores slow each other (shared cache, memory bandwidth, clock boost), so no 2-process speedup here "
          "should be expected to pass this figure; ideal cores give 2x. The column \"of ceiling\" is each speedup over it.\n\n";
  else
    md << "_No two overlapping side-by-side P = 1 runs (tag `study:hardware-ceiling`): the machine's 2-core ceiling is unknown._\n\n";
}

// Each stage's peak of every memory category (MiB), a bar position per stage.
void addStageMemory(const RunStore& store, const RunRecord& r, bool paperTiming, QStringList& labels,
                    std::vector<std::vector<double>>& mem) {
  for (int s = 0; s < r.stages; ++s) {
    labels << QString("%1 s%2").arg(QString::fromStdString(paperTiming ? r.schedule + "/paper" : r.schedule)).arg(s);
    for (int c = 0; c < 6; ++c) {
      const auto pts = store.loadStageMetric(r.id, std::string("mem/") + kCats[c]);
      double mx = 0;
      for (const auto& p : pts)
        if (p.stage == s) mx = std::max(mx, p.value);
      mem[static_cast<size_t>(c)].push_back(mx / 1048576.0);
    }
  }
}

}  // namespace

// (3) Hardware: real P = 2 runs of cnn.
void StudyReportWriter::hardware() {
  auto runs = runsTagged(store_, "study:hardware");
  md_ << "## 2. Hardware: throughput and memory of `real` P = 2 runs of `cnn` (one process per stage, Gloo, one thread each)\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `study:hardware`._\n\n";
    return;
  }
  md_ << provenance(runs) << "\n\n";
  double base = NAN, baseCompute = NAN;
  for (const auto& r : runs)
    if (r.stages == 1) {
      base = median(values(loadRunData(store_, r.id).metric("train/samples_per_s")));
      baseCompute = computePerMinibatch(store_.loadStageMetric(r.id, "compute_s"), 1).at(0);
    }
  // This machine's 2-core ceiling: two independent P = 1 runs side by side against the P = 1 run alone.
  // Only the window in which both were training counts (sideBySideRates): each logged window's
  // samples/s times its length gives the run's progress.
  const std::vector<double> side = ceilingRates(store_);
  const double ceiling = side.size() == 2 && base > 0 ? (side[0] + side[1]) / base : NAN;
  writeHardwareIntro(md_, ceiling, side, base);
  md_ << "| schedule | P | samples/s | vs P = 1 | of ceiling | breakdown: bound x fill / inflation = expected (efficiency) | utilization per stage | peak memory per stage (MiB) |\n"
         "|---|---|---|---|---|---|---|---|\n";
  QStringList labels, slowedBaseline;
  std::vector<std::pair<RunRecord, bool>> timelines;  // (run, paper timing)
  std::vector<std::vector<double>> mem(6);
  for (const auto& r : runs) {
    const bool paperTiming = hardwareRow(r, base, baseCompute, ceiling, slowedBaseline);
    if (r.stages < 2) continue;
    addStageMemory(store_, r, paperTiming, labels, mem);
    const std::optional<ScheduleKind> kind = choiceFromName<ScheduleKind>(r.schedule);
    if (kind == ScheduleKind::GPipe || kind == ScheduleKind::PipeMare) timelines.emplace_back(r, paperTiming);
  }
  md_ << "\n";
  if (!slowedBaseline.isEmpty())
    md_ << "**Noisy measurement:** the compute inflation of " << slowedBaseline.join(", ")
        << " is below 1, i.e. the two stages together computed a minibatch faster than the P = 1 run did alone. "
           "The P = 1 baseline was slowed (by another load on the machine), so these speedups are overstated; "
           "run `scripts/reproduce.sh --only hardware` again on a quiet machine.\n\n";
  for (const auto& [r, paper] : timelines) timeline(r, paper);
  StackedBarsPlot bars;
  bars.setTitle("cnn, P = 2: accounted memory per stage (peak of each category)");
  QStringList cats;
  for (const char* c : kCats) cats << c;
  bars.setData(cats, mem, "schedule, stage", "MiB");
  bars.setPositionLabels(labels);
  const QString name = figure("hardware-memory.png");
  bars.save(o_.outDir + "/" + name, 1000, 450);
  md_ << "\n![memory per stage](" << name << ")\n\n";
}

// One run's row of the hardware table and its hw_ entry (for the claims); returns whether it ran
// with the paper's timing.
bool StudyReportWriter::hardwareRow(const RunRecord& r, double base, double baseCompute, double ceiling,
                                    QStringList& slowedBaseline) {
  RunData d = loadRunData(store_, r.id);
  const double tput = median(values(d.metric("train/samples_per_s")));
  // pipeline.timing = paper (forwards 2(P-1-s) ahead) is its own row.
  const QJsonObject cfg = QJsonDocument::fromJson(QByteArray::fromStdString(r.config_json)).object();
  const bool paperTiming = choiceFromName<PipelineTiming>(cfg.value("pipeline").toObject().value("timing").toString().toStdString()) ==
                           PipelineTiming::Paper;
  const std::string variant = r.schedule + (paperTiming ? " (paper timing)" : "");
  std::map<int, double> util, peak;
  for (const auto& p : d.utilization) util[p.stage] = p.value;
  for (const auto& p : d.memPeak) peak[p.stage] = std::max(peak[p.stage], p.value);
  QStringList u, m;
  for (const auto& [s, v] : util) u << num(v, 3);
  for (const auto& [s, v] : peak) m << num(v / 1048576.0, 2);
  // Weight and optimizer memory as the paper counts it: weights, stashed versions, optimizer
  // state and T2's delta, each stage's peak, summed over the stages.
  double weightMemory = 0;
  for (const char* cat : {"weights", "stash", "optimizer", "delta"}) {
    std::map<int, double> stagePeak;
    for (const auto& p : store_.loadStageMetric(r.id, std::string("mem/") + cat)) stagePeak[p.stage] = std::max(stagePeak[p.stage], p.value);
    for (const auto& [st, v] : stagePeak) weightMemory += v / 1048576.0;
  }
  if (!paperTiming && r.stages > 1) hwMemory_[r.schedule] = weightMemory;
  QString breakdown = "-";
  if (r.stages > 1) {
    const std::optional<ScheduleKind> kind = choiceFromName<ScheduleKind>(r.schedule);
    const bool flushes = kind && !isAsynchronous(*kind);
    const SpeedupBreakdown b = breakdownSpeedup(computePerMinibatch(store_.loadStageMetric(r.id, "compute_s"), r.stages), baseCompute,
                                                flushes, r.microbatches, tput / base);
    if (b.computeInflation < 1.0) slowedBaseline << QString::fromStdString(variant);
    breakdown = QString("%1 x %2 / %3 = %4x (%5)")
                    .arg(num(b.balanceBound, 2), num(b.fill, 3), num(b.computeInflation, 3), num(b.expected, 2), num(b.efficiency, 3));
  }
  md_ << "| " << QString::fromStdString(variant) << " | " << r.stages << " | " << num(tput, 0) << " | " << num(tput / base, 2)
      << "x | " << (std::isfinite(ceiling) && r.stages > 1 ? num(100 * tput / base / ceiling, 0) + " %" : QString("-")) << " | " << breakdown << " | " << u.join(" / ") << " | " << m.join(" / ") << " |\n";
  hw_[variant + "/" + std::to_string(r.stages)] = {tput / base, util.empty() ? NAN : util.begin()->second,
                                                       util.empty() ? NAN : util.rbegin()->second};
  return paperTiming;
}

void StudyReportWriter::timeline(const RunRecord& r, bool paperTiming) {
  const auto trace = store_.loadTrace(r.id);
  if (trace.empty()) return;
  std::vector<GanttBox> boxes;
  const int N = std::max(1, r.microbatches);
  for (const auto& t : trace)
    if (t.action == "S" ? t.microbatch < 3 : t.microbatch / N < 3) boxes.push_back({t.stage, QString::fromStdString(t.action), t.microbatch, t.start, t.end});
  GanttPlot g;
  const QString label = QString::fromStdString(r.schedule) + (paperTiming ? " (paper timing)" : "");
  g.setTitle(QString("measured timeline: %1, P = %2, N = %3 (first minibatches)").arg(label).arg(r.stages).arg(N));
  g.setBoxes(boxes, r.stages);
  const QString name = figure(QString("timeline-%1%2.png").arg(QString::fromStdString(r.schedule), paperTiming ? "-paper" : ""));
  g.save(o_.outDir + "/" + name, 1000, 300);
  md_ << "![timeline " << label << "](" << name << ")\n\n";
}

std::vector<double> StudyReportWriter::values(const std::vector<MetricPoint>& pts) {
  std::vector<double> v;
  for (const auto& p : pts) v.push_back(p.value);
  return v;
}

// (4) Planner on ResNet-50, P = 107.
void StudyReportWriter::planner() {
  md_ << "## 3. Planner at paper scale: ImageNet ResNet-50, one stage per weight layer (P = 107)\n\n"
      << "_No runs: `pipemare plan` (seconds of CPU)._\n\n";
  for (int n : {32, 8}) {
    const QJsonObject j = readJson(QString("%1/plan-resnet50-N%2.json").arg(o_.planDir).arg(n));
    if (j.isEmpty()) {
      md_ << "_plan-resnet50-N" << n << ".json missing._\n\n";
      continue;
    }
    const QJsonObject ratios = j["ratios"].toObject();
    plan_[n] = {ratios["utilization_pipemare_over_gpipe"].toDouble(NAN),
                ratios["weight_optimizer_memory_pipedream_over_pipemare_t2"].toDouble(NAN)};
    md_ << "- N = " << n << ": utilization pipemare / gpipe **" << num(plan_[n].first, 2)
        << "x**; weight+optimizer memory pipedream / pipemare (with T2's delta) **" << num(plan_[n].second, 2) << "x**\n";
  }
  md_ << "\n";
}


}  // namespace pm::ui
