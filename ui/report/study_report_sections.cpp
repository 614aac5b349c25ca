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

#include "core/analysis/stored_run.h"
#include "core/events/metric_keys.h"
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
        << r.microbatches << " | " << num(lastFinite(d.metric(metric::kTrainLoss))) << " | " << num(lastFinite(d.metric(metric::kEvalLoss)))
        << " | " << num(lastFinite(d.metric(metric::kEvalPerplexity)), 2) << " | " << QString::fromUtf8(toString(r.status)) << " |\n";
    addStepSeries(plot, QString::fromStdString(r.name), kPalette[i++ % 10], d.metric(metric::kEvalLoss));
  }
  plot.replot();
  const QString name = figure("charlm-eval-loss.png");
  plot.save(o_.outDir + "/" + name, 900, 500);
  md_ << "\n![charlm eval loss](" << name << ")\n\n";
}

namespace {

// The accounted memory categories (stage metrics mem/<category>), in the figure's order.
const char* const kCats[] = {"weights", "gradients", "optimizer", "stash", "delta", "activations"};

// The samples/s of each pair of P = 1 runs side by side (tag study:hardware-ceiling, in the order
// they ran: one pair per round) while both were training; NaN for a pair that did not overlap, so
// that the k-th entry stays round k's.
std::vector<std::vector<double>> ceilingRates(const RunStore& store) {
  std::vector<RunRecord> side;
  for (const auto& r : runsTagged(store, "study:hardware-ceiling"))
    if (r.stages == 1) side.push_back(r);
  std::vector<std::vector<double>> pairs;
  for (size_t k = 0; k + 1 < side.size(); k += 2) {
    std::vector<std::vector<std::pair<double, double>>> progress;
    for (const RunRecord* r : {&side[k], &side[k + 1]}) {
      const auto pts = loadRunData(store, r->id).metric(metric::kTrainSamplesPerS);
      std::vector<std::pair<double, double>> p;
      for (size_t i = 0; i < pts.size(); ++i)  // from the end of the first window (start-up) on
        p.push_back({pts[i].wall_time, i == 0 ? 0.0 : p.back().second + pts[i].value * (pts[i].wall_time - pts[i - 1].wall_time)});
      progress.push_back(p);
    }
    const std::vector<double> rates = sideBySideRates(progress);
    pairs.push_back(rates.size() == 2 ? rates : std::vector<double>{NAN, NAN});
  }
  return pairs;
}

// What the hardware table shows, and this machine's 2-core ceiling: `ceilings` one per round (NaN
// where unknown), `mc` the median round's index, `side` and `base` that round's rates.
void writeHardwareIntro(QTextStream& md, const std::vector<double>& ceilings, size_t mc, const std::vector<double>& side, double base,
                        size_t rounds) {
  md << "Throughput is the median of the logged samples/s; the baseline is the P = 1 run with one thread and the same microbatching (N = 8: 16-sample microbatches, so that the speedup is the pipeline's, not a change of batch shape). "
         "Utilization is compute / wall time per stage (last logging window); memory is the accounted peak per stage. "
         "The breakdown splits each speedup into its bounds: the balance bound (the stages' summed compute per minibatch over the slowest stage's), "
         "the fill N / (N + P - 1) of flushing schedules, the compute inflation (summed stage compute against P = 1's: cores slowing each other, recompute), "
         "their product (expected) and the pipeline efficiency (measured / expected: messages and waits).\n\n";
  if (rounds > 1)
    md << "The study measured in " << rounds << " rounds, each running the baseline, the ceiling and every schedule once, so that a slow spell of the machine "
          "falls on one round of all of them. Each figure is the median round's (the lower of the two middle ones for an even count), each round's "
          "speedup taken against that round's baseline; "
          "the brackets give the rounds' lowest and highest (the baseline's own rate on its row). The samples/s column is the median of the rounds' own rates, so where the baseline drifts between rounds "
          "two rows' rates need not divide to their speedups. The breakdown, utilization, memory and timelines are the median round's.\n\n";
  if (mc < ceilings.size() && std::isfinite(ceilings[mc]))
    md << "**This machine's 2-core ceiling: " << num(ceilings[mc], 2) << "x" << roundsRange(ceilings, 2, "x")
       << ".** Two independent P = 1 runs side by side (no pipeline, no messages; counted while both were training) ran at "
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

// (3) Hardware: real P = 2 runs of cnn, in one or more rounds.
void StudyReportWriter::hardware() {
  auto runs = runsTagged(store_, "study:hardware");
  md_ << "## 2. Hardware: throughput and memory of `real` P = 2 runs of `cnn` (one process per stage, Gloo, one thread each)\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `study:hardware`._\n\n";
    return;
  }
  md_ << provenance(runs) << "\n\n";
  // One row per schedule (and timing) and P; its k-th run is round k's, in the order they ran.
  std::vector<HardwareGroup> groups;
  for (const auto& r : runs) {
    const HardwareGroup key = hardwareGroupOf(r);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const HardwareGroup& x) { return x.variant == key.variant && x.stages == key.stages; });
    if (g == groups.end()) g = groups.insert(groups.end(), key);
    g->runs.push_back(r);
  }
  for (auto& g : groups)
    for (const auto& r : g.runs) g.rates.push_back(median(values(loadRunData(store_, r.id).metric(metric::kTrainSamplesPerS))));
  std::vector<double> base;
  std::vector<double> baseCompute;
  for (const auto& g : groups)
    if (g.stages == 1) {
      base = g.rates;
      for (const auto& r : g.runs) baseCompute.push_back(computePerMinibatch(store_.loadStageMetric(r.id, "compute_s"), 1).at(0));
      break;
    }
  // This machine's 2-core ceiling: two independent P = 1 runs side by side against the P = 1 run alone.
  // Only the window in which both were training counts (sideBySideRates): each logged window's
  // samples/s times its length gives the run's progress.
  const std::vector<std::vector<double>> side = ceilingRates(store_);
  std::vector<double> ceilings;
  for (const auto& pair : side) ceilings.push_back(pair[0] + pair[1]);
  ceilings = perRoundRatios(ceilings, base);
  const size_t mc = medianIndex(ceilings);
  const double ceiling = mc < ceilings.size() ? ceilings[mc] : NAN;
  writeHardwareIntro(md_, ceilings, mc, std::isfinite(ceiling) ? side[mc] : std::vector<double>{},
                     std::isfinite(ceiling) ? roundBaseline(base, mc) : NAN, base.size());
  md_ << "| schedule | P | samples/s | vs P = 1 | of ceiling | breakdown: bound x fill / inflation = expected (efficiency) | utilization per stage | peak memory per stage (MiB) |\n"
         "|---|---|---|---|---|---|---|---|\n";
  QStringList labels, slowedBaseline;
  std::vector<std::pair<RunRecord, bool>> timelines;  // (run, paper timing)
  std::vector<std::vector<double>> mem(6);
  for (auto& g : groups) {
    g.speedups = perRoundRatios(g.rates, base);
    // The baseline's speedups are all 1: its median round is that of its rate.
    const size_t m = medianIndex(g.stages == 1 ? g.rates : g.speedups);
    hardwareRow(g, m, roundBaseline(baseCompute, m), ceiling, slowedBaseline);
    if (g.stages < 2) continue;
    const RunRecord& r = g.runs[m];
    addStageMemory(store_, r, g.paperTiming, labels, mem);
    const std::optional<ScheduleKind> kind = choiceFromName<ScheduleKind>(r.schedule);
    if (kind == ScheduleKind::GPipe || kind == ScheduleKind::PipeMare) timelines.emplace_back(r, g.paperTiming);
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

// A hardware run's row key: its schedule, " (paper timing)" for pipeline.timing = paper
// (forwards 2(P-1-s) ahead), and P; no runs or rates yet.
StudyReportWriter::HardwareGroup StudyReportWriter::hardwareGroupOf(const RunRecord& r) {
  const bool paperTiming = readStoredExperiment(r).experiment.pipeline.timing == PipelineTiming::Paper;
  HardwareGroup g;
  g.variant = r.schedule + (paperTiming ? " (paper timing)" : "");
  g.stages = r.stages;
  g.paperTiming = paperTiming;
  return g;
}

// One row of the hardware table and its hw_ entry (for the claims): the median of the rounds'
// throughput, and the median round `m`'s speedup, breakdown, utilization and memory.
void StudyReportWriter::hardwareRow(const HardwareGroup& g, size_t m, double baseCompute, double ceiling,
                                    QStringList& slowedBaseline) {
  const RunRecord& r = g.runs[m];
  RunData d = loadRunData(store_, r.id);
  std::map<int, double> util, peak;
  for (const auto& p : d.utilization) util[p.stage] = p.value;
  for (const auto& p : d.memPeak) peak[p.stage] = std::max(peak[p.stage], p.value);
  QStringList u, mm;
  for (const auto& [s, v] : util) u << num(v, 3);
  for (const auto& [s, v] : peak) mm << num(v / 1048576.0, 2);
  // Weight and optimizer memory as the paper counts it: weights, stashed versions, optimizer
  // state and T2's delta, each stage's peak, summed over the stages.
  double weightMemory = 0;
  for (const char* cat : {"weights", "stash", "optimizer", "delta"}) {
    std::map<int, double> stagePeak;
    for (const auto& p : store_.loadStageMetric(r.id, std::string("mem/") + cat)) stagePeak[p.stage] = std::max(stagePeak[p.stage], p.value);
    for (const auto& [st, v] : stagePeak) weightMemory += v / 1048576.0;
  }
  if (!g.paperTiming && r.stages > 1) hwMemory_[r.schedule] = weightMemory;
  const double speedup = g.speedups[m];
  QString breakdown = "-";
  if (r.stages > 1) {
    const std::optional<ScheduleKind> kind = choiceFromName<ScheduleKind>(r.schedule);
    const bool flushes = kind && !isAsynchronous(*kind);
    const SpeedupBreakdown b = breakdownSpeedup(computePerMinibatch(store_.loadStageMetric(r.id, "compute_s"), r.stages), baseCompute,
                                                flushes, r.microbatches, speedup);
    if (b.computeInflation < 1.0) slowedBaseline << QString::fromStdString(g.variant);
    breakdown = QString("%1 x %2 / %3 = %4x (%5)")
                    .arg(num(b.balanceBound, 2), num(b.fill, 3), num(b.computeInflation, 3), num(b.expected, 2), num(b.efficiency, 3));
  }
  // The baseline's speedup is 1 by definition: its row gives the spread of its own rate instead.
  md_ << "| " << QString::fromStdString(g.variant) << " | " << r.stages << " | " << num(median(g.rates), 0)
      << (r.stages == 1 ? roundsRange(g.rates, 0, "", false) : QString()) << " | " << num(speedup, 2) << "x"
      << (r.stages > 1 ? roundsRange(g.speedups, 2, "x", false) : QString()) << " | "
      << (std::isfinite(ceiling) && r.stages > 1 ? num(100 * speedup / ceiling, 0) + " %" : QString("-")) << " | " << breakdown << " | "
      << u.join(" / ") << " | " << mm.join(" / ") << " |\n";
  hw_[g.variant + "/" + std::to_string(r.stages)] = g.speedups;
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


namespace study {

QString provenance(const std::vector<RunRecord>& runs) {
  if (runs.empty()) return QString();
  std::map<int64_t, int> seeds;
  std::map<std::string, int> revisions;
  for (const auto& r : runs) {
    ++seeds[seedOf(r)];
    ++revisions[r.revision.empty() ? std::string("unknown") : r.revision];
  }
  QStringList s, rev;
  for (const auto& [seed, n] : seeds) s << QString::number(seed);
  for (const auto& [name, n] : revisions)
    rev << (revisions.size() == 1 ? QString::fromStdString(name) : QString("%1 (%2 runs)").arg(QString::fromStdString(name)).arg(n));
  return QString("_%1 run%2, seed%3 %4; revision%5 %6; %7 CPU hours (wall time x threads)._")
      .arg(runs.size())
      .arg(runs.size() == 1 ? "" : "s")
      .arg(seeds.size() == 1 ? "" : "s")
      .arg(s.join(", "))
      .arg(revisions.size() == 1 ? "" : "s")
      .arg(rev.join(", "))
      .arg(num(cpuHours(runs), 2));
}

}  // namespace study

}  // namespace pm::ui
