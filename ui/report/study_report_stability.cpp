// The study report's stability section (4): the measured map of final accuracy over learning rate x
// schedule (ResNet-20, P = 11), with the edge `pipemare plan --stability` predicts marked on each
// schedule's column, and per schedule where the prediction held and by how much it missed.
#include "ui/report/study_report_writer.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "core/analysis/stability_edges.h"
#include "core/analysis/stored_run.h"
#include "core/analysis/sweep_tags.h"
#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/pipeline/training_method.h"
#include "core/store/run_store.h"
#include "core/util/stats.h"
#include "ui/plots/heat_map.h"

namespace pm::ui {

using namespace study;

namespace {

// The study's schedules in the order of the map's columns: synchronous first, then by how much
// they change (weight stashing, naive asynchrony, PipeMare's T1, T1+T2).
const std::vector<QString> kColumnOrder = {"gpipe", "1f1b", "pipedream", "2bw", "naive", "t1", "t1t2"};

// The row of `plan --stability` that predicts a run: the training method its stored experiment is
// (core/pipeline/training_method.h: its schedule, with T1; T2 and recompute leave the delays, so
// T1+T2 gets T1's edge). Empty where the experiment cannot be read.
QString predictedRow(const RunRecord& r) {
  const StoredExperiment stored = readStoredExperiment(r);
  if (!stored.readable) return {};
  const Experiment& e = stored.experiment;
  return QString::fromStdString(stabilityMethodOf({e.pipeline.schedule, e.pipeline.recompute, e.pipemare.t1, e.pipemare.t2}).name());
}

struct Prediction {
  double maxLr = NAN, sharpest = NAN, flattest = NAN;  // the edge at the mean curvature, and its range
  int stage = -1;                                      // the stage that breaks first
};

// schedule name -> prediction, from the curvature at initialization.
std::map<QString, Prediction> readPredictions(const QJsonObject& j) {
  std::map<QString, Prediction> out;
  const QJsonArray preds = j["predictions"].toArray();
  if (preds.isEmpty()) return out;
  for (const QJsonValue& v : preds.first().toObject()["schedules"].toArray()) {
    const QJsonObject s = v.toObject();
    const QJsonArray range = s["max_lr_range"].toArray();
    Prediction p;
    p.maxLr = s["max_lr"].toDouble(NAN);
    p.sharpest = range.size() == 2 ? range[0].toDouble(NAN) : NAN;
    p.flattest = range.size() == 2 ? range[1].toDouble(NAN) : NAN;
    p.stage = s["breaking_stage"].isNull() ? -1 : s["breaking_stage"].toInt(-1);
    out[s["schedule"].toString()] = p;
  }
  return out;
}

// The probe's rows (`plan --stability --probe --json`): schedule -> its edge and bracket.
struct Probed {
  double edge = NAN, trainsUpTo = NAN, breaksAt = NAN;
};
std::map<QString, Probed> readProbe(const QJsonObject& j) {
  std::map<QString, Probed> out;
  for (const QJsonValue& v : j["probe"].toObject()["schedules"].toArray()) {
    const QJsonObject s = v.toObject();
    out[s["schedule"].toString()] = {s["edge"].toDouble(NAN), s["trains_up_to"].toDouble(NAN), s["breaks_at"].toDouble(NAN)};
  }
  return out;
}

// The probe's row of a run (core/pipeline/training_method.h: probeMethodOf).
QString probedRow(const RunRecord& r) {
  const StoredExperiment stored = readStoredExperiment(r);
  if (!stored.readable) return {};
  const Experiment& e = stored.experiment;
  return QString::fromStdString(probeMethodOf({e.pipeline.schedule, e.pipeline.recompute, e.pipemare.t1, e.pipemare.t2}).name());
}

QString lrText(double lr) { return std::isfinite(lr) ? QString::number(lr, 'g', 3) : QStringLiteral("-"); }

// How far a prediction is from the measured edge, against the 2x.
constexpr double kTrustFactor = 2.0;

QString factorText(FactorVerdict v) {
  switch (v) {
    case FactorVerdict::Within: return QString("**within %1x**").arg(kTrustFactor, 0, 'g');
    case FactorVerdict::Undecided: return QString("undecided at %1x (the grid is too coarse there)").arg(kTrustFactor, 0, 'g');
    case FactorVerdict::Outside: return QString("**outside %1x**").arg(kTrustFactor, 0, 'g');
    case FactorVerdict::NoVerdict: return "no verdict";
  }
  return {};
}

// "; borderline: lr 0.16 misses the rule by 0.03 points" where a rate that bounds the measured
// edge is a near call; "" otherwise.
QString nearCall(const MeasuredEdge& m) {
  QStringList calls;
  if (m.nearTrainCall()) calls << QString("lr %1 passes the rule by %2 points").arg(lrText(m.trainsUpTo), num(m.trainMargin, 2));
  if (m.nearBreakCall()) calls << QString("lr %1 misses the rule by %2 points").arg(lrText(m.breaksAt), num(m.breakMargin, 2));
  return calls.isEmpty() ? QString() : "; borderline: " + calls.join(", ");
}

// "one seed", "two seeds per point", "1 to 2 seeds per point".
QString seedsPerPoint(int least, int most) {
  auto count = [](int n) { return n == 1 ? QStringLiteral("one") : n == 2 ? QStringLiteral("two") : QString::number(n); };
  if (most <= 1) return "one seed";
  if (least == most) return count(most) + " seeds per point";
  return QString("%1 to %2 seeds per point").arg(least).arg(most);
}

// The judgment (core/analysis/stability_edges) in words. columnMax: the column's largest rate.
QString verdictText(const EdgeJudgment& j, const MeasuredEdge& m, double columnMax) {
  auto factor = [](double x) { return QString::number(x, 'f', 1) + "x"; };
  switch (j.verdict) {
    case EdgeVerdict::NoPrediction: return "no prediction";
    case EdgeVerdict::NothingTrains: return "nothing in the grid trains";
    case EdgeVerdict::Conservative:
      return std::isfinite(j.highFactor)
                 ? QString("**conservative** by %1 to %2: trains at %3, breaks at %4")
                       .arg(factor(j.lowFactor), factor(j.highFactor), lrText(m.trainsUpTo), lrText(m.breaksAt))
                 : QString("**conservative** by at least %1: trains at %2, no break up to %3")
                       .arg(factor(j.lowFactor), lrText(m.trainsUpTo), lrText(columnMax));
    case EdgeVerdict::Optimistic:
      return QString("**optimistic** by %1 to %2: breaks at %3, trains at %4")
          .arg(factor(j.lowFactor), factor(j.highFactor), lrText(m.breaksAt), lrText(m.trainsUpTo));
    case EdgeVerdict::Untested: return QString("untested: no rate above %1 ran").arg(lrText(columnMax));
    case EdgeVerdict::Held: return QString("**held**: the edge lies between %1 and %2").arg(lrText(m.trainsUpTo), lrText(m.breaksAt));
  }
  return {};
}

// The fractional row of `lr` on a map whose rows hold `lrs` (largest first), on a log scale
// between neighbouring rows and half a row beyond the ends.
double rowOf(double lr, const std::vector<double>& lrs) {
  const int n = static_cast<int>(lrs.size());
  if (n == 1) return lr > lrs[0] ? -0.5 : 0.5;
  for (int i = 0; i + 1 < n; ++i)
    if (lr <= lrs[static_cast<size_t>(i)] && lr >= lrs[static_cast<size_t>(i + 1)])
      return i + std::log(lrs[static_cast<size_t>(i)] / lr) / std::log(lrs[static_cast<size_t>(i)] / lrs[static_cast<size_t>(i + 1)]);
  return lr > lrs.front() ? -0.5 : n - 0.5;
}

}  // namespace

// (4) Stability: the section's frame, then each model's map (4a ResNet-20, 4b cnn).
void StudyReportWriter::stability() {
  md_ << "## 4. Stability: where asynchrony breaks, predicted and measured\n\n";
  md_ << "Two predictions of each schedule's largest stable learning rate, made before a run, against a measured map. "
         "The **analytic bound** (`pipemare plan --stability`): the top Hessian eigenvalue of each stage at "
         "initialization, each stage's delay, the delayed heavy-ball bound (docs/planner.md, \"Stability\"); seconds to "
         "a minute. The **probe** (`pipemare plan --stability --probe`): short trainings of the experiment itself under "
         "each schedule (its first steps, from initialization), at rates halved or doubled and then bisected, judged by "
         "the map's own rule in loss (docs/planner.md, \"Stability probe\"); minutes. A prediction is trusted within "
         << num(kTrustFactor, 0) << "x: *within* when every edge the measured bracket allows is within " << num(kTrustFactor, 0)
         << "x of it, *outside* when none is, *undecided* where the grid is too coarse to tell.\n\n";
  stabilityTallies_.clear();
  stabilityPart({"study:stability", "4a", "ResNet-20", "stability-resnet20.json", "stability-map.png",
                 "SGD with momentum 0.9 and cosine decay, the quality part's training (section 1)"});
  stabilityPart({"study:stability-cnn", "4b", "cnn", "stability-cnn.json", "stability-map-cnn.png",
                 "the zoo's cnn (four conv layers with BatchNorm, two fully connected), one stage per unit, SGD with "
                 "momentum 0.9 and cosine decay over one epoch of the first 12,000 training images (94 steps)"});
  md_ << "**Where the probe misses, and why.** It watches a schedule's first 50 steps; the map judges accuracy at the "
         "end of a cosine schedule. (a) A deeply delayed schedule's early loss falls fastest at rates well below where its "
         "final accuracy stops being good, so its best early rate sits low and the 25 % tolerance cuts below the edge "
         "(conservative where the delay is large). (b) T1 starts every stage at lr/tau, so its first steps learn slowly at "
         "every rate and the rate at gpipe's edge scores no worse than half of it: the cap decides, and T1 breaks by "
         "accuracy below gpipe's edge (optimistic). (c) Delayed schedules lose accuracy gradually as the rate grows "
         "without blowing up, which a few dozen steps do not show; the cap by gpipe's edge then stands in for it and is "
         "optimistic where the delay costs accuracy early. Each seed of the map also differs by up to the rule's 5 points "
         "(the *Seeds* lines), about the probe's 1.5x resolution in rate near an edge.\n\n";
  md_ << "**What the quadratic model misses.** It takes each stage as an independent quadratic with the curvature at "
         "initialization. (i) Curvature is not constant: with BatchNorm the loss is scale-invariant in most weights, "
         "whose norm grows under a large rate, so the effective step shrinks as training goes (a rate that is "
         "unstable at the start can settle); (ii) the cosine schedule lowers the rate over the run, so a run is "
         "judged by its end, not by the step where the bound first fails; (iii) a broken run often does not diverge: "
         "it oscillates and ends with poor accuracy, which is why *trains* is judged by accuracy, not by the loss "
         "guard, and an edge so judged is gradual, not sharp; (iv) stages are coupled (a stage's gradient depends on "
         "the others' weights), which the per-stage bound ignores; (v) the bound is for full-batch descent, while SGD's noise adds to the instability near "
         "the edge. Where the verdict is conservative these effects favour training; where it is optimistic they "
         "work against it. The probe assumes none of this: it trains the model, so (i), (iv) and (v) are in its "
         "trials; it sees only the first steps, so (ii) and a slow break after them are not.\n\n";
}

void StudyReportWriter::stabilityPart(const StabilityPart& part) {
  auto runs = runsTagged(store_, part.tag.toStdString());
  md_ << "### " << part.label << ". " << part.model << "\n\n";
  if (runs.empty()) {
    md_ << "_No runs tagged `" << part.tag << "`._\n\n";
    return;
  }
  md_ << provenance(runs) << "\n\n";
  const QJsonObject planJson = readJson(o_.planDir + "/" + part.planFile);
  const std::map<QString, Prediction> predicted = readPredictions(planJson);
  const std::map<QString, Probed> probed = readProbe(planJson);
  const QJsonObject probeJson = planJson["probe"].toObject();

  // variant -> lr -> the point's seeds.
  std::map<QString, MapColumn> grid;
  std::vector<double> lrs;
  for (const auto& r : runs) {
    const double lr = QString::fromStdString(sweepTagValue(r, "optimizer.lr", "")).toDouble();
    if (!(lr > 0) || r.status == RunStatus::Created || r.status == RunStatus::Running) continue;  // not a result yet
    grid[variantOf(r)][lr].bySeed[seedOf(r)] = &r;
    if (std::find(lrs.begin(), lrs.end(), lr) == lrs.end()) lrs.push_back(lr);
  }
  // Seeds per point, and the spread of those with two or more (largest: where, and how much).
  int leastSeeds = INT_MAX, mostSeeds = 0;
  std::vector<double> spreads;
  double largestSpread = NAN;
  QString largestAt;
  for (const auto& [v, byLr] : grid)
    for (const auto& [lr, p] : byLr) {
      leastSeeds = std::min(leastSeeds, static_cast<int>(p.bySeed.size()));
      mostSeeds = std::max(mostSeeds, static_cast<int>(p.bySeed.size()));
      const double s = p.spread();
      if (!std::isfinite(s)) continue;
      spreads.push_back(s);
      if (!(s <= largestSpread)) {
        largestSpread = s;
        largestAt = QString("%1 at lr %2").arg(v, lrText(lr));
      }
    }
  std::sort(lrs.begin(), lrs.end(), std::greater<>());
  std::vector<QString> cols;
  for (const QString& v : kColumnOrder)
    if (grid.count(v)) cols.push_back(v);
  for (const auto& [v, byLr] : grid)
    if (std::find(cols.begin(), cols.end(), v) == cols.end()) cols.push_back(v);
  // Each column's measured edge and predicted ones (NaN edge where the prediction has no row).
  std::map<QString, MeasuredEdge> measured;
  std::map<QString, Prediction> prediction;
  std::map<QString, Probed> probe;
  for (const QString& v : cols) {
    measured[v] = measureEdge(grid.at(v));
    const auto& byLr = grid.at(v);
    const RunRecord* any = byLr.empty() || byLr.begin()->second.bySeed.empty() ? nullptr : byLr.begin()->second.bySeed.begin()->second;
    auto p = any ? predicted.find(predictedRow(*any)) : predicted.end();
    prediction[v] = p == predicted.end() ? Prediction{} : p->second;
    auto q = any ? probed.find(probedRow(*any)) : probed.end();
    probe[v] = q == probed.end() ? Probed{} : q->second;
  }

  const RunRecord& any = runs.front();
  md_ << part.model << ", P = " << any.stages << ", N = " << any.microbatches << ", " << part.training << ", "
      << seedsPerPoint(leastSeeds, mostSeeds) << "; the rate on a geometric grid"
      << (lrs.size() > 1 ? QString(" (x%1)").arg(QString::number(lrs[0] / lrs[1], 'f', 1)) : QString())
      << ". A cell is the final test accuracy" << (mostSeeds > 1 ? " (the mean of the seeds that finished)" : "")
      << "; **D** = diverged (the loss guard stopped it"
      << (mostSeeds > 1 ? "; \"1 D\" beside a figure: one seed of the point diverged" : "")
      << "). A run *trains* when it finished with accuracy at least " << num(kTrainsAccuracy, 1) << " and within "
      << num(kWithinBest * 100, 0) << " points of the best rate of its schedule"
      << (mostSeeds > 1 ? "; a rate trains when every seed does (how far seeds differ is measured below the table)" : "")
      << ". On each column the solid line is the analytic bound, the dashed one the probe's edge.\n\n";

  // The figure first.
  QStringList rowLabels, colLabels;
  for (double lr : lrs) rowLabels << lrText(lr);
  for (const QString& v : cols) colLabels << v;
  std::vector<HeatCell> cells;
  std::vector<HeatMark> marks;
  for (int col = 0; col < static_cast<int>(cols.size()); ++col) {
    const auto& byLr = grid.at(cols[static_cast<size_t>(col)]);
    for (int row = 0; row < static_cast<int>(lrs.size()); ++row) {
      auto it = byLr.find(lrs[static_cast<size_t>(row)]);
      if (it == byLr.end()) continue;
      const MapPoint& p = it->second;
      HeatCell c;
      c.row = row;
      c.col = col;
      const int diverged = p.diverged();
      if (diverged == static_cast<int>(p.bySeed.size())) {
        c.text = "D";
        c.color = QColor(200, 60, 60);
      } else {
        c.value = p.mean();
        c.text = std::isfinite(c.value) ? num(c.value, 3) : QStringLiteral("-");
        if (diverged > 0) c.text += QString(", %1 D").arg(diverged);
      }
      cells.push_back(c);
    }
    const double edge = prediction.at(cols[static_cast<size_t>(col)]).maxLr;
    if (std::isfinite(edge)) marks.push_back({col, rowOf(edge, lrs), "bound " + lrText(edge)});
    const double pe = probe.at(cols[static_cast<size_t>(col)]).edge;
    if (std::isfinite(pe)) marks.push_back({col, rowOf(pe, lrs), "probe " + lrText(pe), true});
  }
  HeatMap map;
  map.setTitle(part.model + ": final test accuracy; solid: analytic bound, dashed: probe (D = diverged)");
  map.setGrid(rowLabels, colLabels, "learning rate", "schedule");
  map.setCells(cells, 0.0, 1.0, "accuracy");
  map.setMarks(marks);
  const QString name = figure(part.figure);
  map.save(o_.outDir + "/" + name, 760, lrs.size() > 8 ? 620 : 480);
  md_ << "![stability map of " << part.model << ": accuracy over learning rate x schedule, predicted edges marked](" << name << ")\n\n";

  // The table: both predictions against the measured edge, per schedule.
  StabilityTally tally;
  tally.model = part.model;
  md_ << "| schedule | trains up to | breaks at | best lr (accuracy) | analytic bound [range over microbatches] | bound: verdict | "
         "probe edge [bracket] | probe: verdict |\n|---|---|---|---|---|---|---|---|\n";
  for (const QString& v : cols) {
    const MeasuredEdge& m = measured.at(v);
    const Prediction& pr = prediction.at(v);
    const Probed& pb = probe.at(v);
    const EdgeJudgment j = judgeEdge(pr.maxLr, m);
    tally.held += j.verdict == EdgeVerdict::Held;
    tally.conservative += j.verdict == EdgeVerdict::Conservative;
    tally.optimistic += j.verdict == EdgeVerdict::Optimistic;
    const FactorVerdict bf = judgeFactor(pr.maxLr, m, kTrustFactor), pf = judgeFactor(pb.edge, m, kTrustFactor);
    tally.bound[bf] += 1;
    tally.probe[pf] += 1;
    const QString near = nearCall(m);
    if (!near.isEmpty() && j.decided()) ++tally.borderline;
    const EdgeJudgment pj = judgeEdge(pb.edge, m);
    md_ << "| " << v << " | " << lrText(m.trainsUpTo) << " | "
        << (std::isfinite(m.breaksAt) ? lrText(m.breaksAt) : QStringLiteral("none in the grid")) << " | " << lrText(m.bestLr)
        << " (" << num(m.bestAccuracy, 3) << (std::isfinite(m.bestSpread) ? ", spread " + num(m.bestSpread, 3) : QString()) << ") | "
        << lrText(pr.maxLr) << " [" << lrText(pr.sharpest) << ", " << lrText(pr.flattest) << "]"
        << (pr.stage >= 0 ? ", stage " + QString::number(pr.stage) + " breaks first" : QString()) << " | "
        << verdictText(j, m, grid.at(v).rbegin()->first) << "; " << factorText(bf) << " | " << lrText(pb.edge) << " ["
        << lrText(pb.trainsUpTo) << ", " << lrText(pb.breaksAt) << "] | " << verdictText(pj, m, grid.at(v).rbegin()->first)
        << "; " << factorText(pf) << near << " |\n";
  }
  md_ << "\n";
  if (!spreads.empty()) {
    md_ << "**Seeds.** The seeds of a point differ by a median of " << num(median(spreads) * 100, 2) << " points over the "
        << spreads.size()
        << " points where two or more finished, and by at most " << num(largestSpread * 100, 2) << " (" << largestAt << ")"
        << (largestSpread >= kWithinBest
                ? QString("; as large as the %1-point rule, so a rate near the edge can train with one seed and not the "
                          "other (the map then counts it as broken)")
                      .arg(num(kWithinBest * 100, 0))
                : QString("; below the rule's %1 points").arg(num(kWithinBest * 100, 0)))
        << ".\n\n";
  }
  // Does the delay move the edge as far as each prediction says? Each delayed schedule's edge
  // against gpipe's: predicted, and measured as the range its bracket and gpipe's allow.
  if (grid.count("gpipe")) {
    const MeasuredEdge& g = measured.at("gpipe");
    md_ << "**The delay's effect on the edge**, each schedule's edge over gpipe's:\n\n"
        << "| schedule | measured | analytic bound | probe |\n|---|---|---|---|\n";
    for (const QString& v : cols) {
      if (v == "gpipe") continue;
      const auto [lo, hi] = measuredRatio(measured.at(v), g);
      const double br = prediction.at(v).maxLr / prediction.at("gpipe").maxLr, pr = probe.at(v).edge / probe.at("gpipe").edge;
      const FactorVerdict bv = judgeRatio(br, measured.at(v), g, kTrustFactor), pv = judgeRatio(pr, measured.at(v), g, kTrustFactor);
      tally.boundRatio[bv] += 1;
      tally.probeRatio[pv] += 1;
      auto ratio = [](double x) { return std::isfinite(x) ? QString::number(x, 'g', 2) + "x" : QStringLiteral("-"); };
      md_ << "| " << v << " | " << (std::isfinite(lo) ? ratio(lo) : QStringLiteral("?")) << " to "
          << (std::isfinite(hi) ? ratio(hi) : QStringLiteral("?")) << " | " << ratio(br) << ": " << factorText(bv) << " | "
          << ratio(pr) << ": " << factorText(pv) << " |\n";
    }
    md_ << "\n";
  }
  if (predicted.empty())
    md_ << "_" << part.planFile << " (from `pipemare plan --stability --probe --json`) missing: no predicted edges._\n\n";
  else if (probed.empty())
    md_ << "_" << part.planFile << " has no probe (`--probe`): the analytic bound only._\n\n";
  if (!probeJson.isEmpty())
    md_ << "**The probe** took " << num(probeJson["seconds"].toDouble(), 0) << " s on " << probeJson["threads"].toInt()
        << " thread(s) (the analytic bound " << num(planJson["curvature_seconds"].toDouble(), 0) << " s): "
        << probeJson["assumes"].toString() << ".\n\n";

  const int decided = tally.held + tally.conservative + tally.optimistic;
  md_ << "**" << part.model << ", in short.** The probe's edge is within " << num(kTrustFactor, 0) << "x of the measured one for "
      << tally.probe[FactorVerdict::Within] << " of " << cols.size() << " schedules (outside for "
      << tally.probe[FactorVerdict::Outside] << ", undecided for " << tally.probe[FactorVerdict::Undecided]
      << "); the analytic bound for " << tally.bound[FactorVerdict::Within] << " (held for " << tally.held << " of " << decided
      << " the grid decides; conservative for " << tally.conservative << ", optimistic for " << tally.optimistic
      << (tally.borderline > 0 ? QString("; %1 of them a near call, a seed within %2 points of the rule that judges a rate")
                                     .arg(tally.borderline)
                                     .arg(num(kBorderlinePoints, 1))
                               : QString())
      << ").\n\n";
  tally.setting = QString("%1, P = %2, N = %3, %4 rates %5-%6")
                      .arg(part.model)
                      .arg(any.stages)
                      .arg(any.microbatches)
                      .arg(lrs.size())
                      .arg(lrText(lrs.back()), lrText(lrs.front()));
  tally.schedules = static_cast<int>(cols.size());
  stabilityTallies_.push_back(tally);
}

}  // namespace pm::ui
