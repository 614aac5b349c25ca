#include "core/cli/plan_stability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/experiment.h"
#include "core/planner/analytic_planner.h"
#include "core/planner/curvature.h"
#include "core/planner/plan_design.h"
#include "core/planner/stability.h"
#include "core/planner/stability_probe.h"
#include "core/util/errors.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm::cli {

namespace {

using Json = nlohmann::json;

using Usage = PlanUsage;

std::string num(double v, const char* fmt = "%.4g") { return formatNumber(v, fmt); }

// The predictions of one curvature snapshot: with each stage's mean, and with its largest and
// smallest sample (the range of the prediction over the microbatches).
struct SnapshotPrediction {
  const CurvatureSnapshot* snapshot = nullptr;
  std::vector<RowStability> mean, sharpest, flattest;
};

struct Study {
  std::string file;
  Experiment e;
  PlanDesign design;
  PlanSpec spec;
  bool sgd = true;
  double lr = 0, momentum = 0, weightDecay = 0;
  bool delayScaled = false, nesterov = false;
  CurvatureReport curvature;
  std::vector<SnapshotPrediction> predictions;
  TrainingMethod designMethod;  // the design's own method (pipemare+T1+T2)
  TrainingMethod designRow;     // the row that predicts it (pipemare+T1: T2 does not move the edge)
  int designSnapshot = 0;  // the snapshot the design's asynchronous phase starts from
  int iterations = 0, microbatches = 0;
  bool probed = false;
  ProbeOptions probeOptions;
  ProbeReport probe;
  double curvatureSeconds = 0;
};

std::vector<RowStability> predictWith(const Study& s, const CurvatureSnapshot& snap, double StageCurvature::*field) {
  StabilityInputs in;
  in.spec = s.spec;
  for (const auto& st : snap.stages) in.curvature.push_back(st.*field);
  in.momentum = s.momentum;
  in.delayScaledMomentum = s.delayScaled;
  in.weightDecay = s.weightDecay;
  return predictStability(in);
}

Study study(const PlanOptions& o, std::ostream& err) {
  if (!o.experiment.empty()) throw Usage("--stability", "takes the experiment itself; not with --experiment");
  if (o.stabilityMicrobatches < 1)
    throw Usage("--stability-microbatches", "expected >= 1, found " + std::to_string(o.stabilityMicrobatches));
  if (o.stabilityIterations < 1)
    throw Usage("--stability-iterations", "expected >= 1, found " + std::to_string(o.stabilityIterations));
  Study s;
  s.file = o.stability;
  s.e = loadExperimentFile(o.stability, o.overrides);  // ConfigError names the file and field: exit 2
  s.design = planDesign(s.e, knownTrainSamples(s.e));
  if (!o.timing.empty()) {
    try {
      s.design.timing = timingFromName(o.timing);
    } catch (const std::invalid_argument& ex) {
      throw Usage("--timing", ex.what());
    }
  }
  s.spec = s.design.spec();
  const OptimizerConfig& opt = s.e.optimizer;
  s.sgd = opt.name == OptimizerType::Sgd;
  s.lr = opt.lr;
  s.momentum = s.sgd ? opt.momentum : 0.0;
  s.weightDecay = s.sgd ? opt.weight_decay : 0.0;
  s.nesterov = s.sgd && opt.nesterov;
  s.delayScaled = s.sgd && s.e.pipemare.momentum_mode == MomentumMode::DelayScaled;

  s.iterations = o.stabilityIterations;
  s.microbatches = o.stabilityMicrobatches;
  CurvatureOptions co;
  co.microbatches = o.stabilityMicrobatches;
  co.power.iterations = o.stabilityIterations;
  co.power.tolerance = 1e-3;  // the spread over microbatches is far wider
  co.power.seed = s.e.training.seed;
  co.progress = [&o, &err](const CurvatureProgress& p) {
    if (o.progress) o.progress({p.phase, p.done, p.total, p.message});
    else err << "stability: " << p.message << "\n" << std::flush;
  };
  const double c0 = monotonicSeconds();
  s.curvature = estimateStageCurvature(s.e, co);
  s.curvatureSeconds = monotonicSeconds() - c0;

  std::vector<const CurvatureSnapshot*> snaps{&s.curvature.init};
  if (s.curvature.hasWarmup) snaps.push_back(&s.curvature.afterWarmup);
  for (const CurvatureSnapshot* snap : snaps) {
    SnapshotPrediction p;
    p.snapshot = snap;
    p.mean = predictWith(s, *snap, &StageCurvature::mean);
    p.sharpest = predictWith(s, *snap, &StageCurvature::max);
    p.flattest = predictWith(s, *snap, &StageCurvature::min);
    s.predictions.push_back(std::move(p));
  }
  s.designMethod = s.design.method;
  s.designMethod.t1 = s.e.pipemare.t1 && s.designMethod.decl().takesPipeMare;
  s.designRow = stabilityMethodOf(s.designMethod);
  // Only pipemare has a warm-up; its asynchronous phase starts from the warmed-up weights.
  s.designSnapshot = s.curvature.hasWarmup ? 1 : 0;
  if (o.probe) {
    if (o.probeSteps < 3) throw Usage("--probe-steps", "expected >= 3, found " + std::to_string(o.probeSteps));
    ProbeOptions& po = s.probeOptions;
    po.steps = o.probeSteps;
    if (o.probeHorizon == "run") po.horizon = ProbeHorizon::Run;
    else if (o.probeHorizon != "first") throw Usage("--probe-horizon", "expected first or run, found \"" + o.probeHorizon + "\"");
    if (o.probeJudge == "accuracy") po.judge = ProbeJudge::Accuracy;
    else if (o.probeJudge != "loss") throw Usage("--probe-judge", "expected loss or accuracy, found \"" + o.probeJudge + "\"");
    if (po.judge == ProbeJudge::Accuracy && po.horizon != ProbeHorizon::Run)
      throw Usage("--probe-judge", "accuracy needs --probe-horizon run (a trial that ends as the run does, and evaluates there)");
    if (!o.probeSchedules.empty()) {
      std::string list = o.probeSchedules;
      size_t at = 0;
      while (at <= list.size()) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const std::string name = list.substr(at, comma - at);
        try {
          po.methods.push_back(trainingMethodFromName(name));
        } catch (const std::invalid_argument& ex) {
          throw Usage("--probe-schedules", ex.what());
        }
        at = comma + 1;
      }
    }
    po.progress = [&o, &err](const ProbeProgress& p) {
      if (o.progress) o.progress({p.phase, p.done, p.total, p.message});
      else if (p.done % 10 == 0) err << "stability: " << p.message << "\n" << std::flush;
    };
    s.probe = probeStability(s.e, po);
    s.probed = true;
  }
  return s;
}

const RowStability& rowOf(const std::vector<RowStability>& rows, const TrainingMethod& r) {
  for (const auto& x : rows)
    if (x.method == r) return x;
  return rows.front();
}

// Why every row has one edge, when it has ("" otherwise): no stage of any schedule has a delay,
// so the delayed-quadratic model cannot tell them apart.
std::string oneEdgeReason(const Study& s) {
  for (const auto& p : s.predictions)
    for (const auto& row : p.mean)
      for (const auto& st : row.stages)
        if (st.tau > 0) return "";
  const int P = s.curvature.partition.stages();
  return P == 1 ? "one stage (P = 1): no schedule delays a gradient, so every schedule has the synchronous edge"
                : "no stage of any schedule is delayed here (tau = 0 everywhere), so every schedule has the synchronous edge";
}

std::vector<std::string> notes(const Study& s) {
  std::vector<std::string> n{
      "gpipe+recompute steps as gpipe; pipemare+T2 has pipemare's row (T2 makes the stale gradient consistent, the delay "
      "stays tau)",
      "pipemare+T1: the rate at T1's first step, lr/tau per stage; as T1 anneals back to lr the edge becomes pipemare's",
      "the model: delayed heavy-ball descent on each stage's top curvature, w_{t+1} = w_t + beta (w_t - w_{t-1}) - lr "
      "lambda w_{t-tau}; stable while lr lambda < edge(tau, beta)"};
  if (!s.sgd)
    n.push_back(choiceName(s.e.optimizer.name) +
                ": the edges are plain SGD's (no momentum); Adam's per-coordinate scaling is not modelled, so no verdict");
  if (s.nesterov) n.push_back("nesterov momentum is taken as heavy-ball momentum");
  if (s.delayScaled) n.push_back("delay-scaled momentum: asynchronous stages step with max(0, beta - tau/(1+tau))");
  if (const std::string why = oneEdgeReason(s); !why.empty()) n.push_back(why);
  if (s.designMethod != s.designRow)
    n.push_back("the design, " + s.designMethod.name() + ", takes the " + s.designRow.name() + " row");
  if (s.curvature.warmupCapped)
    n.push_back("the warm-up has " + std::to_string(s.curvature.warmupSteps) + " steps; the estimate trained the first " +
                std::to_string(s.curvature.afterWarmup.steps));
  return n;
}

// --- the probe

const ProbeRow* probeRow(const Study& s, const TrainingMethod& m) {
  const TrainingMethod r = probeMethodOf(m);
  for (const auto& row : s.probe.rows)
    if (row.method == r) return &row;
  return nullptr;
}

// The probe's edge of the synchronous row, which the delayed ones are compared with.
double synchronousProbeEdge(const Study& s) {
  const ProbeRow* g = probeRow(s, TrainingMethod{ScheduleKind::GPipe});
  return g ? g->edge() : NAN;
}

std::string probeAssumes(const Study& s) {
  const ProbeOptions& o = s.probeOptions;
  const std::string horizon =
      s.probe.horizon == ProbeHorizon::Run && s.probe.steps < s.probe.runSteps
          ? "the whole run in miniature (its " + std::to_string(s.probe.runSteps) + " steps' learning-rate schedule and T1's annealing compressed into " +
                std::to_string(s.probe.steps) + " steps; its data order and delays; one seed)"
          : "the run's first " + std::to_string(s.probe.steps) + " steps (its data order, delays and learning-rate schedule; one seed)";
  const std::string judged =
      s.probe.judge == ProbeJudge::Accuracy
          ? "its held-out accuracy at the end (" + std::to_string(o.evalSamples) + " samples of the run's evaluation split) is within " +
                num(100 * o.accuracyPoints, "%.3g") + " points of the schedule's best rate's"
          : "the mean loss of the last third of the steps is within " + num(100 * o.tolerance, "%.3g") + "% of the schedule's best rate's";
  return "trainings of each schedule from initialization, " + horizon + ", at rates doubled or halved from the last "
         "schedule's edge and then bisected to " + num(o.resolution, "%.3g") + "x; a rate trains when no loss passes " +
         num(o.blowUp, "%.3g") + "x the first and " + judged + "; the edge is the geometric mean of the largest "
         "rate that trains and the smallest that does not" +
         (o.capBySynchronous ? "; the delayed schedules start at gpipe's edge and are capped by it (a delay adds "
                               "instability, it does not remove any)"
                             : "");
}

void printProbe(const Study& s, std::ostream& out) {
  const ProbeReport& p = s.probe;
  out << "\nprobe (" << (p.cancelled ? "cancelled, " : "") << num(p.seconds, "%.0f") << " s, " << p.threads
      << " thread" << (p.threads == 1 ? "" : "s") << "): " << probeAssumes(s) << "\n";
  char line[256];
  const bool byAccuracy = p.judge == ProbeJudge::Accuracy;
  std::snprintf(line, sizeof line, "%-16s %-9s %-9s %-9s %-9s %-16s %-8s %s\n", "schedule", "edge", "x sync", "trains", "breaks",
                byAccuracy ? "best lr (acc)" : "best lr (loss)", "tau0",
                byAccuracy ? "trials: lr accuracy (x = breaks, ! = blew up); edge= : gpipe's edge caps it"
                           : "trials: lr score (x = breaks, ! = blew up); edge= : gpipe's edge caps it");
  out << line;
  const double sync = synchronousProbeEdge(s);
  for (const auto& r : p.rows) {
    std::string trials;
    for (const auto& t : r.trials)
      trials += " " + num(t.lr, "%.3g") +
                (t.blewUp ? "!" : " " + (byAccuracy ? num(t.accuracy, "%.3f") : num(t.score, "%.3g")) + (t.trains ? "" : "x"));
    const std::string best =
        std::isnan(r.bestLr) ? "-" : num(r.bestLr, "%.3g") + " (" + (byAccuracy ? num(r.bestAccuracy, "%.3f") : num(r.bestScore, "%.3g")) + ")";
    const std::string edge = num(r.edge(), "%.3g") + (r.capped() ? "=" : "");
    std::snprintf(line, sizeof line, "%-16s %-9s %-9s %-9s %-9s %-16s %-8s", r.method.name().c_str(), edge.c_str(),
                  std::isfinite(r.edge() / sync) ? num(r.edge() / sync, "%.2f").c_str() : "-", num(r.trainsUpTo, "%.3g").c_str(),
                  num(r.breaksAt, "%.3g").c_str(), best.c_str(), r.delays.empty() ? "-" : std::to_string(r.delays.front()).c_str());
    out << line << trials << "\n";
  }
  const ProbeRow* d = probeRow(s, s.designMethod);
  out << "design, probed: ";
  if (!d || !std::isfinite(d->edge()))
    out << "no edge for " << s.designMethod.name() << (d ? " (no rate trained)" : " (not probed)") << "\n";
  else
    out << s.designMethod.name() << " lr " << num(s.lr) << (s.lr > d->edge() ? " ABOVE" : " below") << " the probed edge "
        << num(d->edge()) << " (trains up to " << num(d->trainsUpTo) << ", breaks at " << num(d->breaksAt) << ")\n";
}

// --- text

void printText(const Study& s, std::ostream& out) {
  const CurvatureReport& c = s.curvature;
  const int P = c.partition.stages();
  const OptimizerConfig& opt = s.e.optimizer;
  out << "stability of " << s.file << ": " << s.e.model.name << ", P = " << P << ", N = " << s.design.microbatches
      << ", timing " << timingName(s.design.timing) << ", partition " << c.partition.describe() << "\n";
  out << "optimizer: " << choiceName(opt.name) << ", lr " << num(opt.lr);
  if (s.sgd) out << ", momentum " << num(s.momentum) << (s.delayScaled ? " (delay-scaled)" : "") << ", weight decay " << num(s.weightDecay);
  out << "\n";
  out << "curvature: top Hessian eigenvalue of each stage's parameters, power iteration on Hessian-vector products (at most "
      << s.iterations << " per stage) on " << s.microbatches
      << " microbatches of the training data; lambda = the mean over them, spread = std [min, max]\n\n";

  char line[256];
  std::snprintf(line, sizeof line, "%-5s  %-22s  %-36s", "stage", "units", "lambda at init: mean  std  [min, max]");
  out << line;
  if (c.hasWarmup) {
    std::snprintf(line, sizeof line, "  %-36s", "after warm-up: mean  std  [min, max]");
    out << line;
  }
  out << "  | tau:";
  const auto& rows0 = s.predictions.front().mean;
  for (const auto& r : rows0)
    if (!r.method.t1) out << " " << r.method.name();
  out << "\n";
  auto stat = [&](const StageCurvature& st) {
    return num(st.mean) + "  " + num(st.stddev, "%.2g") + "  [" + num(st.min) + ", " + num(st.max) + "]";
  };
  for (int i = 0; i < P; ++i) {
    std::snprintf(line, sizeof line, "%5d  %-22s  %-36s", i, c.stageUnits[static_cast<size_t>(i)].c_str(),
                  stat(c.init.stages[static_cast<size_t>(i)]).c_str());
    out << line;
    if (c.hasWarmup) {
      std::snprintf(line, sizeof line, "  %-36s", stat(c.afterWarmup.stages[static_cast<size_t>(i)]).c_str());
      out << line;
    }
    out << "  |     ";
    for (const auto& r : rows0) {
      if (r.method.t1) continue;
      const std::string name = r.method.name();
      std::snprintf(line, sizeof line, " %*lld", static_cast<int>(name.size()),
                    static_cast<long long>(r.stages[static_cast<size_t>(i)].tau));
      out << line;
    }
    out << "\n";
  }

  for (const auto& p : s.predictions) {
    out << "\nlargest stable base learning rate, curvature " << p.snapshot->when;
    if (p.snapshot->steps > 0) out << " (" << p.snapshot->steps << " synchronous steps)";
    out << ":\n";
    std::snprintf(line, sizeof line, "%-14s %-10s %-26s %-8s %5s %6s %10s\n", "schedule", "max_lr", "[range over microbatches]",
                  "breaks", "tau", "beta", "edge");
    out << line;
    for (size_t k = 0; k < p.mean.size(); ++k) {
      const RowStability& r = p.mean[k];
      const std::string range = "[" + num(p.sharpest[k].maxLr) + ", " + num(p.flattest[k].maxLr) + "]";
      if (r.breakingStage < 0) {
        std::snprintf(line, sizeof line, "%-14s %-10s %-26s %-8s\n", r.method.name().c_str(), "inf", range.c_str(), "-");
      } else {
        const StageStability& st = r.stages[static_cast<size_t>(r.breakingStage)];
        std::snprintf(line, sizeof line, "%-14s %-10s %-26s stage %-2d %5lld %6.3f %10.4g\n", r.method.name().c_str(),
                      num(r.maxLr).c_str(), range.c_str(), r.breakingStage, static_cast<long long>(st.tau), st.momentum,
                      st.edge);
      }
      out << line;
    }
  }

  const SnapshotPrediction& dp = s.predictions[static_cast<size_t>(s.designSnapshot)];
  const RowStability& d = rowOf(dp.mean, s.designRow);
  out << "\ndesign: " << s.designMethod.name() << (s.designMethod != s.designRow ? " (the " + s.designRow.name() + " row)" : "")
      << ", lr " << num(s.lr) << ": ";
  if (!s.sgd)
    out << "no verdict (" << choiceName(opt.name) << ")";
  else if (d.breakingStage < 0)
    out << "no stage has positive curvature";
  else
    out << (s.lr > d.maxLr ? "ABOVE the edge " : "below the edge ") << num(d.maxLr) << " (curvature " << dp.snapshot->when
        << ", stage " << d.breakingStage << " breaks first)";
  out << "\n";
  if (s.designRow.t1 && s.sgd) {
    const RowStability& annealed = rowOf(dp.mean, TrainingMethod{s.designRow.schedule});
    out << "  after T1's anneal the rate is lr again: edge " << num(annealed.maxLr)
        << (s.lr > annealed.maxLr ? " (above it at this curvature)" : "") << "\n";
  }
  if (s.probed) printProbe(s, out);
  out << "notes:\n";
  for (const auto& n : notes(s)) out << "  - " << n << "\n";
}

// --- JSON

Json finite(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json snapshotJson(const CurvatureSnapshot& snap, const CurvatureReport& c) {
  Json stages = Json::array();
  for (size_t i = 0; i < snap.stages.size(); ++i) {
    const StageCurvature& st = snap.stages[i];
    stages.push_back({{"stage", i}, {"units", c.stageUnits[i]}, {"lambda", st.mean}, {"std", st.stddev}, {"min", st.min},
                      {"max", st.max}, {"samples", st.samples}});
  }
  return {{"when", snap.when}, {"steps", snap.steps}, {"stages", stages}};
}

Json rowsJson(const SnapshotPrediction& p) {
  Json rows = Json::array();
  for (size_t k = 0; k < p.mean.size(); ++k) {
    const RowStability& r = p.mean[k];
    Json stages = Json::array();
    for (const auto& st : r.stages)
      stages.push_back({{"tau", st.tau}, {"momentum", st.momentum}, {"lr_factor", st.lrFactor}, {"curvature", st.curvature},
                        {"edge", st.edge}, {"max_lr", finite(st.maxLr)}});
    rows.push_back({{"schedule", r.method.name()},
                    {"max_lr", finite(r.maxLr)},
                    {"max_lr_range", {finite(p.sharpest[k].maxLr), finite(p.flattest[k].maxLr)}},
                    {"breaking_stage", r.breakingStage < 0 ? Json(nullptr) : Json(r.breakingStage)},
                    {"stages", stages}});
  }
  return {{"curvature", p.snapshot->when}, {"schedules", rows}};
}

Json probeJson(const Study& s) {
  const ProbeReport& p = s.probe;
  const double sync = synchronousProbeEdge(s);
  Json rows = Json::array();
  for (const auto& r : p.rows) {
    Json trials = Json::array();
    for (const auto& t : r.trials)
      trials.push_back({{"lr", t.lr}, {"steps", t.steps}, {"first_loss", finite(t.firstLoss)}, {"score", finite(t.score)},
                        {"accuracy", finite(t.accuracy)}, {"blew_up", t.blewUp}, {"why", t.why}, {"trains", t.trains},
                        {"seconds", t.seconds}});
    rows.push_back({{"schedule", r.method.name()},
                    {"edge", finite(r.edge())},
                    {"trains_up_to", finite(r.trainsUpTo)},
                    {"breaks_at", finite(r.breaksAt)},
                    {"best_lr", finite(r.bestLr)},
                    {"best_score", finite(r.bestScore)},
                    {"best_accuracy", finite(r.bestAccuracy)},
                    {"ratio_to_synchronous", finite(r.edge() / sync)},
                    {"own_edge", finite(r.ownEdge())},
                    {"cap", finite(r.cap)},
                    {"capped", r.capped()},
                    {"delays", r.delays},
                    {"seconds", r.seconds},
                    {"trials", trials}});
  }
  const ProbeRow* d = probeRow(s, s.designMethod);
  Json design = {{"schedule", d ? d->method.name() : probeMethodOf(s.designMethod).name()}, {"lr", s.lr}};
  design["edge"] = d ? finite(d->edge()) : Json(nullptr);
  design["above_edge"] = d && std::isfinite(d->edge()) ? Json(s.lr > d->edge()) : Json(nullptr);
  const ProbeOptions& o = s.probeOptions;
  return {{"steps", p.steps},        {"horizon", p.horizon == ProbeHorizon::Run ? "run" : "first"}, {"run_steps", p.runSteps},
          {"judge", p.judge == ProbeJudge::Accuracy ? "accuracy" : "loss"}, {"accuracy_points", o.accuracyPoints},
          {"tolerance", o.tolerance}, {"blow_up", o.blowUp}, {"resolution", o.resolution},
          {"threads", p.threads},    {"seconds", p.seconds},     {"cancelled", p.cancelled}, {"assumes", probeAssumes(s)},
          {"schedules", rows},       {"design", design}};
}

Json toJson(const Study& s) {
  const CurvatureReport& c = s.curvature;
  Json snaps = Json::array({snapshotJson(c.init, c)});
  if (c.hasWarmup) snaps.push_back(snapshotJson(c.afterWarmup, c));
  Json preds = Json::array();
  for (const auto& p : s.predictions) preds.push_back(rowsJson(p));
  const SnapshotPrediction& dp = s.predictions[static_cast<size_t>(s.designSnapshot)];
  const RowStability& d = rowOf(dp.mean, s.designRow);
  Json design = {{"schedule", s.designRow.name()}, {"method", s.designMethod.name()}, {"lr", s.lr}, {"curvature", dp.snapshot->when},
                 {"max_lr", finite(d.maxLr)}, {"breaking_stage", d.breakingStage < 0 ? Json(nullptr) : Json(d.breakingStage)}};
  design["above_edge"] = s.sgd && d.breakingStage >= 0 ? Json(s.lr > d.maxLr) : Json(nullptr);
  Json j = {{"experiment", s.file},
          {"model", s.e.model.name},
          {"stages", c.partition.stages()},
          {"microbatches", s.design.microbatches},
          {"timing", timingName(s.design.timing)},
          {"partition", c.partition.describe()},
          {"optimizer",
           {{"name", choiceName(s.e.optimizer.name)},
            {"lr", s.lr},
            {"momentum", s.momentum},
            {"weight_decay", s.weightDecay},
            {"delay_scaled_momentum", s.delayScaled}}},
          {"warmup", {{"has_warmup", c.hasWarmup}, {"steps", c.warmupSteps}, {"trained", c.afterWarmup.steps}}},
          {"curvature", snaps},
          {"predictions", preds},
          {"design", design},
          {"one_edge", oneEdgeReason(s)},
          {"notes", notes(s)},
          {"curvature_seconds", s.curvatureSeconds}};
  if (s.probed) j["probe"] = probeJson(s);
  return j;
}

}  // namespace

int planStabilityCommand(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  return planGuard("--stability " + o.stability, err, [&] {
    const Study s = study(o, err);
    if (o.json)
      out << toJson(s).dump(2) << "\n";
    else
      printText(s, out);
    return 0;
  }, o.failed);
}

}  // namespace pm::cli
