// The study report's section 5: PipeMare against the synchronous frontier (interleaved 1F1B,
// ZB-H1, ZB-V) in the planner at paper scale, measured on this machine, and the quality check of
// the chunked schedules beside gpipe and 1f1b. The judgments are core's (core/analysis/frontier.h).
#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/analysis/frontier.h"
#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"
#include "core/events/metric_keys.h"
#include "core/pipeline/training_method.h"
#include "core/util/stats.h"
#include "ui/plots/curve_plot.h"
#include "ui/report/study_report_writer.h"

namespace pm::ui {

using namespace study;

namespace {

constexpr double kMiB = 1048576.0;
// The planner's settings: the paper's two (N = 8, 32) and N = P, the smallest N at which
// interleaved 1F1B (N a multiple of P) applies.
constexpr int kFrontierN[] = {8, 32, 107};

// A planner row's or a run's method ("pipemare+T2", "zb-v"): its schedule's declaration says.
bool isSynchronous(const std::string& method) { return trainingMethodFromName(method).decl().synchronous; }

// A planner JSON's rows as frontier points: utilization, and the largest device's memory.
std::vector<FrontierPoint> planPoints(const QJsonObject& plan) {
  std::vector<FrontierPoint> pts;
  for (const auto& v : plan["schedules"].toArray()) {
    const QJsonObject row = v.toObject();
    FrontierPoint p;
    p.method = row["schedule"].toString().toStdString();
    p.synchronous = isSynchronous(p.method);
    p.value = row["utilization"].toDouble(NAN);
    p.memoryBytes = row["memory"].toObject()["per_stage_max"].toObject()["stage_total"].toDouble(NAN);
    pts.push_back(p);
  }
  return pts;
}

QString ratioWith(double r, const std::string& over) {
  return std::isfinite(r) ? QString("%1x over %2").arg(num(r, 2), QString::fromStdString(over)) : QStringLiteral("-");
}

}  // namespace

// The summary's row for section 5: the planner's ratios and the measured settings' verdicts.
void StudyReportWriter::frontierSummary() {
  if (frontierPlan_.empty() && frontierMeasured_.empty()) return;
  QStringList planned, measured;
  std::map<Advantage, int> verdicts;
  for (const auto& [n, c] : frontierPlan_) {
    planned << QString("N = %1: %2x over %3").arg(n).arg(num(c.ratioAtMemory, 2), QString::fromStdString(c.bestAtMemory));
    ++verdicts[c.advantage];
  }
  int survives = 0, even = 0, lost = 0;
  for (const auto& [setting, c] : frontierMeasured_) {
    measured << QString("%1: %2x over %3").arg(setting, num(median(c.ratioRounds), 2), QString::fromStdString(c.bestAtMemory));
    survives += c.advantage == Advantage::Survives;
    even += c.advantage == Advantage::Even;
    lost += c.advantage == Advantage::Lost;
  }
  const bool planSurvives = !frontierPlan_.empty() && verdicts[Advantage::Survives] == static_cast<int>(frontierPlan_.size());
  md_ << "| (this project) PipeMare's utilization against the best synchronous schedule within its memory (interleaved "
         "1F1B, ZB-H1, ZB-V beside GPipe and 1F1B) | planner "
      << planned.join(", ") << (measured.isEmpty() ? QString() : "; measured throughput " + measured.join(", "))
      << " | ResNet-50, P = 107 (section 5a); cnn and resnet20 at P = 2 and 4 on this machine (section 5b) | "
      << (planSurvives ? QStringLiteral("survives in the planner") : QStringLiteral("not in every planner setting"))
      << (measured.isEmpty() ? QString()
                             : QString("; measured: survives in %1, even in %2, lost in %3 of %4 settings")
                                   .arg(survives)
                                   .arg(even)
                                   .arg(lost)
                                   .arg(frontierMeasured_.size()))
      << " |\n";
}

void StudyReportWriter::frontier() {
  md_ << "## 5. The synchronous frontier: what PipeMare buys against interleaved 1F1B, ZB-H1 and ZB-V\n\n"
      << "The paper measured PipeMare's utilization against GPipe (2019). Since then the synchronous schedules "
         "researchers compare against split the backward (ZB-H1) and hold several model chunks per rank "
         "(interleaved 1F1B, ZB-V; `../shared/docs/schedules.md`). They all compute gpipe's update, so PipeMare's "
         "question is what is left of its advantage. The figure that replaces the paper's \"4.3x / 14.3x the "
         "utilization of GPipe\" is PipeMare's utilization over the **best synchronous schedule that fits in "
         "PipeMare's memory** (its largest device: weights, gradients, optimizer state, T2's delta, stash and "
         "activations), judged by `compareWithFrontier` (core/analysis/frontier.h): in the planner the advantage "
         "survives above 1.05x, is lost below 0.95x, even between; measured, it survives only when every round's "
         "ratio is above 1 and is lost when every one is below.\n\n";

  // (a) The planner at paper scale.
  md_ << "### 5a. Planner at paper scale: ResNet-50, one stage per weight layer, P = 107\n\n"
      << "_No runs: `pipemare plan --model resnet50 --stages 107 --microbatches N --optimizer sgd-momentum` (seconds of "
         "CPU), as the paper's model counts (equal stages), and with `--stage-costs flops` (each layer's T_F, T_B, "
         "T_W from its FLOPs in the model's profile)._\n\n"
      << "Utilization is the planner's: gpipe and 1f1b (N / (N + P - 1) with equal stages), zb-h1, interleaved-1f1b "
         "(v = 2) and zb-v (v = 2) simulated on their own action lists, the asynchronous schedules their steady "
         "state. Memory is the largest device's (a rank's two chunks together for the chunked schedules), MiB.\n\n";
  std::map<int, std::vector<FrontierPoint>> equal, flops;
  std::map<int, QJsonObject> notPlanned;
  std::vector<std::string> order;
  for (int n : kFrontierN) {
    const QJsonObject e = readJson(QString("%1/frontier-resnet50-N%2.json").arg(o_.planDir).arg(n));
    const QJsonObject f = readJson(QString("%1/frontier-resnet50-N%2-flops.json").arg(o_.planDir).arg(n));
    if (e.isEmpty()) continue;
    equal[n] = planPoints(e);
    if (!f.isEmpty()) flops[n] = planPoints(f);
    for (const auto& p : equal[n])
      if (std::find(order.begin(), order.end(), p.method) == order.end()) order.push_back(p.method);
    QJsonObject why;
    for (const auto& v : e["not_planned"].toArray()) why[v.toObject()["schedule"].toString()] = v.toObject()["why"].toString();
    notPlanned[n] = why;
    for (const QString& name : why.keys())
      if (std::find(order.begin(), order.end(), name.toStdString()) == order.end()) order.push_back(name.toStdString());
  }
  // The planner's own order of its rows.
  std::vector<std::string> known;
  for (const auto& m : planMethods()) known.push_back(m.name());
  auto rank = [&](const std::string& m) { return std::find(known.begin(), known.end(), m) - known.begin(); };
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  if (equal.empty()) {
    md_ << "_frontier-resnet50-N*.json missing: `scripts/reproduce.sh --only frontier` writes them._\n\n";
  } else {
    md_ << "| schedule |";
    for (const auto& [n, _] : equal) md_ << " N = " << n << ": utilization (profile costs) | memory (MiB) |";
    md_ << "\n|---|";
    for (size_t k = 0; k < equal.size(); ++k) md_ << "---|---|";
    md_ << "\n";
    for (const auto& m : order) {
      md_ << "| " << QString::fromStdString(m) << " |";
      for (const auto& [n, pts] : equal) {
        const auto p = std::find_if(pts.begin(), pts.end(), [&](const FrontierPoint& x) { return x.method == m; });
        if (p == pts.end()) {
          md_ << " not applicable | - |";
          continue;
        }
        double fv = NAN;
        if (flops.count(n))
          for (const auto& q : flops[n])
            if (q.method == m) fv = q.value;
        md_ << " " << num(p->value, 3) << " (" << num(fv, 3) << ") | " << num(p->memoryBytes / kMiB, 1) << " |";
      }
      md_ << "\n";
    }
    md_ << "\n";
    for (const auto& [n, why] : notPlanned)
      for (auto it = why.begin(); it != why.end(); ++it) md_ << "- N = " << n << ", " << it.key() << " not applicable: " << it.value().toString() << "\n";
    for (const auto& [n, pts] : equal) {
      const FrontierComparison c = compareWithFrontier(pts, "pipemare+T2");
      frontierPlan_[n] = c;
      const auto sub = std::find_if(pts.begin(), pts.end(), [](const FrontierPoint& x) { return x.method == "pipemare+T2"; });
      const auto fit = std::find_if(pts.begin(), pts.end(), [&](const FrontierPoint& x) { return x.method == c.bestAtMemory; });
      double gp = NAN;
      for (const auto& p : pts)
        if (p.method == "gpipe") gp = sub->value / p.value;
      md_ << "- N = " << n << ": pipemare (T1+T2) **" << ratioWith(c.ratioAtMemory, c.bestAtMemory) << "** within its memory ("
          << advantageName(c.advantage) << "; against gpipe " << num(gp, 2) << "x)";
      if (fit != pts.end() && fit->memoryBytes > 0)
        md_ << "; it needs " << num(sub->memoryBytes / fit->memoryBytes, 1) << "x " << QString::fromStdString(c.bestAtMemory)
            << "'s memory on its largest device";
      if (flops.count(n)) {
        const FrontierComparison cf = compareWithFrontier(flops[n], "pipemare+T2");
        frontierPlanFlops_[n] = cf;
        md_ << "; with the profile's costs " << ratioWith(cf.ratioAtMemory, cf.bestAtMemory) << " (" << advantageName(cf.advantage) << ")";
      }
      md_ << ".\n";
    }
    md_ << "\nAt N < P every synchronous schedule keeps most of its bubble: ZB-H1 and ZB-V fill part of it with "
           "weight-gradient work, which raises utilization by 1.5x over 1F1B at most with equal op costs, while "
           "PipeMare never flushes. Its price is memory: the paper's timing keeps 2(P - i) + 1 stage inputs in "
           "flight at stage i, so the advantage within its memory is an advantage bought with that memory.\n\n";
  }

  // (b) Measured on this machine.
  const auto runs = runsTagged(store_, "study:frontier");
  md_ << "### 5b. Measured: every schedule on the same ranks, `real` mode, cnn and resnet20\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `study:frontier`._\n\n";
  } else {
    md_ << provenance(runs) << "\n\n"
        << "N = 8, stages balanced by measured time, one thread per rank, 30 steps; the chunked schedules cut the model "
           "into 2P stages (two chunks per rank). Each round ran every schedule of every setting once; samples/s is "
           "the median of a run's logged rates, the ratio against 1f1b is taken round by round (median, and the "
           "rounds' range). Utilization is the mean over ranks of each rank's compute over its wall time, memory the "
           "largest rank's accounted peak (its chunks' summed). P = 4 on 2 cores runs 4 processes on 2 cores: "
           "oversubscribed, reported anyway. The chunked schedules lose to 1f1b here (docs/engine.md): cutting 6 (cnn) or "
           "11 (resnet20) units into 2P stages balances worse than into P, every microbatch crosses twice the links "
           "(a Gloo message of a few hundred microseconds against stage computes of about a millisecond), and the "
           "bubble they remove is small at N = 8, P = 2 (1f1b's (P-1)/(N+P-1) = 11 %). Their case, and so the frontier "
           "PipeMare meets, is the planner's: many ranks, large balanced stages, fast links.\n\n";
    struct Group {
      std::string model, schedule;
      int stages = 0;
      std::vector<double> rates, util, peak;
    };
    std::vector<Group> groups;
    for (const auto& r : runs) {
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const Group& x) { return x.model == r.model && x.stages == r.stages && x.schedule == r.schedule; });
      if (g == groups.end()) g = groups.insert(groups.end(), Group{r.model, r.schedule, r.stages, {}, {}, {}});
      const RunData d = loadRunData(store_, r.id);
      const RunSummary s = summarizeRun(d, NAN);
      std::vector<double> rates;
      for (const auto& p : d.metric(metric::kTrainSamplesPerS)) rates.push_back(p.value);
      g->rates.push_back(r.status == RunStatus::Finished ? median(rates) : NAN);
      g->util.push_back(s.value(SummaryField::Utilization));
      g->peak.push_back(s.value(SummaryField::PeakMemory));
    }
    std::vector<std::pair<std::string, int>> settings;
    for (const auto& g : groups)
      if (std::find(settings.begin(), settings.end(), std::pair{g.model, g.stages}) == settings.end()) settings.push_back({g.model, g.stages});
    for (const auto& [model, P] : settings) {
      md_ << "**" << QString::fromStdString(model) << ", P = " << P << (P > 2 ? " (oversubscribed: 4 processes on 2 cores)" : "")
          << "**\n\n| schedule | samples/s | vs 1f1b | utilization | peak memory, largest rank (MiB) |\n|---|---|---|---|---|\n";
      const Group* base = nullptr;
      for (const auto& g : groups)
        if (g.model == model && g.stages == P && g.schedule == "1f1b") base = &g;
      std::vector<FrontierPoint> pts;
      for (const auto& g : groups) {
        if (g.model != model || g.stages != P) continue;
        std::vector<double> ratios;
        for (size_t k = 0; base && k < std::min(g.rates.size(), base->rates.size()); ++k) ratios.push_back(g.rates[k] / base->rates[k]);
        md_ << "| " << QString::fromStdString(g.schedule) << " | " << num(median(g.rates), 0) << roundsRange(g.rates, 0, "", false)
            << " | " << num(median(ratios), 2) << "x" << roundsRange(ratios, 2, "x", false) << " | " << num(median(g.util), 3)
            << " | " << num(median(g.peak) / kMiB, 1) << " |\n";
        FrontierPoint p;
        p.method = g.schedule;
        p.synchronous = isSynchronous(g.schedule);
        p.value = median(g.rates);
        p.memoryBytes = median(g.peak);
        p.rounds = g.rates;
        pts.push_back(p);
      }
      if (std::none_of(pts.begin(), pts.end(), [](const FrontierPoint& p) { return p.method == "pipemare"; })) {
        md_ << "\n";
        continue;
      }
      const FrontierComparison c = compareWithFrontier(pts, "pipemare");
      frontierMeasured_.push_back({QString("%1 P = %2").arg(QString::fromStdString(model)).arg(P), c});
      md_ << "\npipemare (T1+T2) against the best synchronous schedule within its memory: "
          << (c.bestAtMemory.empty() ? QStringLiteral("none fits")
                                     : QString("**%1x** over %2%3")
                                           .arg(num(median(c.ratioRounds), 2), QString::fromStdString(c.bestAtMemory),
                                                roundsRange(c.ratioRounds, 2, "x")))
          << ": **" << advantageName(c.advantage) << "**; against the best at any memory " << ratioWith(c.ratioOverall, c.bestOverall)
          << ".\n\n";
    }
  }

  // (c) Quality: one check run of each chunked schedule beside gpipe and 1f1b.
  const auto check = runsTagged(store_, "study:frontier-check");
  md_ << "### 5c. Quality: the chunked schedules compute gpipe's update\n\n";
  if (check.empty()) {
    md_ << "_No runs tagged `study:frontier-check`._\n\n";
    return;
  }
  md_ << provenance(check) << "\n\n"
      << "Every synchronous schedule computes the mean gradient of the minibatch's microbatches, so no quality study of "
         "the new ones is needed: they are checked instead, one short training each (resnet20 with BatchNorm, P = 2, "
         "N = 8, 100 steps, the loss logged at every step) beside 1f1b, which they match bit for bit, and gpipe, which "
         "sums the microbatches' gradients in reverse order: the same sum, rounded differently from the second of its "
         "8 terms on (with N = 2, as in section 1's A1, a + b = b + a and gpipe equals 1f1b to the bit). The first "
         "step's rounding difference then grows through training (momentum 0.9, BatchNorm over 8-sample "
         "microbatches), so gpipe's curve leaves 1f1b's after step 1 and the two end apart after 100 steps: two "
         "equivalent trainings, not two algorithms; this early, with BatchNorm's running statistics still moving, the "
         "test accuracy after 100 steps is a noisy figure.\n\n"
      << "| schedule | loss at step 1 | steps equal to 1f1b's | largest \\|loss - 1f1b's\\| | final train loss | test accuracy |\n"
         "|---|---|---|---|---|---|\n";
  std::vector<MetricPoint> ref;
  for (const auto& r : check)
    if (r.schedule == "1f1b") ref = loadRunData(store_, r.id).metric(metric::kTrainLoss);
  CurvePlot plot;
  plot.setTitle("resnet20, P = 2: training loss of the synchronous schedules");
  plot.setAxisLabels("step", "train loss");
  int i = 0;
  for (const auto& r : check) {
    const RunData d = loadRunData(store_, r.id);
    const auto& loss = d.metric(metric::kTrainLoss);
    size_t same = 0;
    double worst = 0;
    bool diverged = false;
    for (size_t k = 0; k < std::min(loss.size(), ref.size()); ++k) {
      const double diff = std::fabs(loss[k].value - ref[k].value);
      if (diff == 0 && !diverged) ++same;
      if (diff != 0) diverged = true;
      worst = std::max(worst, diff);
    }
    md_ << "| " << QString::fromStdString(r.schedule) << " | " << num(loss.empty() ? NAN : loss.front().value, 7) << " | " << same
        << " of " << loss.size() << " | " << QString::number(worst, 'g', 3) << " | " << num(lastFinite(loss)) << " | "
        << num(lastFinite(d.metric(metric::kEvalAccuracy))) << " |\n";
    // The chunked schedules dashed over 1f1b's line, which they cover.
    addStepSeries(plot, QString::fromStdString(r.schedule), kPalette[i % 10], loss, i >= 2 ? Qt::DashLine : Qt::SolidLine);
    ++i;
  }
  plot.replot();
  const QString name = figure("frontier-check-loss.png");
  plot.save(o_.outDir + "/" + name, 900, 450);
  md_ << "\n![training loss of the synchronous schedules](" << name << ")\n\n";
}

}  // namespace pm::ui
