#include "core/planner/stability_probe.h"

#include <algorithm>
#include <limits>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "core/engine/batch_source.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/training_plan.h"
#include "core/planner/plan_design.h"
#include "core/events/event.h"
#include "core/events/event_sink.h"
#include "core/pipeline/schedule_decl.h"
#include "core/util/errors.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm {

double ProbeRow::ownEdge() const {
  if (std::isnan(trainsUpTo)) return NAN;
  if (std::isnan(breaksAt)) return trainsUpTo;
  return std::sqrt(trainsUpTo * breaksAt);
}

double ProbeRow::edge() const {
  const double own = ownEdge();
  return std::isnan(cap) || std::isnan(own) ? own : std::min(own, cap);
}

bool ProbeRow::capped() const { return std::isfinite(cap) && std::isfinite(ownEdge()) && ownEdge() >= cap; }

namespace {

std::string num(double v) { return formatNumber(v); }

// Collects a trial's losses and each stage's delay, and stops it after `steps` or when it blows up.
class TrialSink : public EventSink {
 public:
  // `steps`: where the trial is stopped (a trial that ends by itself passes INT64_MAX, so that its
  // last evaluation runs). `reference`: the loss a blow-up is measured against (NaN: the trial's
  // own first loss).
  TrialSink(int64_t steps, double blowUp, double reference, const std::atomic<bool>* cancel, std::function<void(int64_t)> onStep)
      : steps_(steps), blowUp_(blowUp), reference_(reference), cancel_(cancel), onStep_(std::move(onStep)) {}

  void emit(const Json& ev) override {
    const std::string type = ev.value("type", std::string());
    if (type == ev::kStep) {
      const double loss = ev.contains("loss") && ev["loss"].is_number() ? ev["loss"].get<double>() : NAN;
      const int64_t step = ev.value("step", int64_t{0});
      losses.push_back(loss);
      if (!std::isfinite(loss)) {
        blew = true;
        why = "loss is not finite at step " + std::to_string(step);
      } else {
        const double ref = std::isfinite(reference_) ? reference_ : losses.front();
        if (std::isfinite(ref) && (losses.size() > 1 || std::isfinite(reference_)) && loss > blowUp_ * ref) {
          blew = true;
          why = "loss " + num(loss) + " at step " + std::to_string(step) + " > " + num(blowUp_) + " x the first " + num(ref);
        }
      }
      if (blew || step >= steps_) stop.store(true);
      if (onStep_) onStep_(step);
    } else if (type == ev::kEval) {
      if (ev.contains("accuracy") && ev["accuracy"].is_number()) accuracy = ev["accuracy"].get<double>();
    } else if (type == ev::kStage) {
      const int s = ev.value("stage", 0);
      stages = std::max(stages, s + 1);
      const int64_t t = ev.contains("tau") && ev["tau"].is_number() ? ev["tau"].get<int64_t>() : 0;
      tau[s] = std::max(tau[s], t);
    }
    if (cancel_ && cancel_->load()) stop.store(true);
  }

  std::atomic<bool> stop{false};
  std::vector<double> losses;
  double accuracy = NAN;  // the last evaluation's
  std::map<int, int64_t> tau;
  int stages = 0;
  bool blew = false;
  std::string why;

 private:
  int64_t steps_;
  double blowUp_, reference_;
  const std::atomic<bool>* cancel_;
  std::function<void(int64_t)> onStep_;
};

}  // namespace

std::vector<TrainingMethod> probeMethodsFor(const Experiment& e) {
  std::vector<TrainingMethod> rows{{ScheduleKind::GPipe},
                                   {ScheduleKind::PipeDream},
                                   {ScheduleKind::PipeMare},
                                   {ScheduleKind::PipeMare, false, true},
                                   {ScheduleKind::PipeMare, false, true, true}};
  const TrainingMethod own = probeMethodOf({e.pipeline.schedule, false, e.pipemare.t1, e.pipemare.t2});
  if (std::find(rows.begin(), rows.end(), own) == rows.end()) rows.push_back(own);
  return rows;
}

Experiment withMethod(const Experiment& e, const TrainingMethod& method) {
  Experiment t = e;
  const ScheduleDecl& d = method.decl();
  const PipelineConfig defaults;
  t.pipeline.schedule = method.schedule;
  t.pipeline.recompute = method.recompute;
  // The fields the schedule does not take keep their defaults (validation requires it).
  if (!d.takesTiming) t.pipeline.timing = defaults.timing;
  if (!d.takesUpdateInterval) t.pipeline.update_interval = defaults.update_interval;
  if (d.chunks != 0) t.pipeline.chunks = defaults.chunks;
  if (!d.takesPipeMare) t.pipemare = PipeMareConfig{};
  // Boundaries counted over another number of chunks do not fit: the default partition then.
  if (pipelineChunks(t) != pipelineChunks(e)) t.pipeline.partition = PartitionConfig{};
  t.pipemare.t1 = method.t1;
  t.pipemare.t2 = method.t2;
  t.pipemare.warmup_epochs = 0;
  return t;
}

Experiment miniatureRun(const Experiment& e, int64_t steps, const TrainingPlan& run) {
  if (steps >= run.totalSteps()) return e;
  Experiment t = e;
  const double f = static_cast<double>(steps) / static_cast<double>(run.totalSteps());
  auto scaled = [f](int64_t n) { return std::max<int64_t>(1, std::llround(static_cast<double>(n) * f)); };
  auto& s = t.optimizer.schedule;
  if (s.warmup_steps > 0) s.warmup_steps = scaled(s.warmup_steps);
  s.step_size = scaled(s.step_size);
  if (t.pipemare.t1) {
    t.pipemare.anneal_steps = scaled(t1AnnealSteps(e.pipemare, run.stepsPerEpoch()));
    t.pipemare.anneal_epochs = 0;
  }
  t.training.steps = steps;
  t.training.epochs = TrainingConfig{}.epochs;
  return t;
}

TrainingPlan runPlanOf(const Experiment& e) {
  std::optional<int64_t> samples = knownTrainSamples(e);
  if (!samples) samples = makeBatchSource(e, true)->size();
  return TrainingPlan(e, *samples);
}

namespace {

// A trial the judge can rank: it did not blow up and has its judge's figure.
bool probeTrialScored(const ProbeTrial& t, ProbeJudge judge) {
  return !t.blewUp && std::isfinite(t.score) && (judge == ProbeJudge::Loss || std::isfinite(t.accuracy));
}

bool probeTrialBetter(const ProbeTrial& a, const ProbeTrial& b, ProbeJudge judge) {
  return judge == ProbeJudge::Accuracy ? a.accuracy > b.accuracy : a.score < b.score;
}

}  // namespace

void judgeProbeRow(ProbeRow& row, const ProbeOptions& o) {
  row.trainsUpTo = row.breaksAt = row.bestLr = row.bestScore = row.bestAccuracy = NAN;
  std::vector<ProbeTrial*> byLr;
  for (auto& t : row.trials) byLr.push_back(&t);
  std::sort(byLr.begin(), byLr.end(), [](const ProbeTrial* a, const ProbeTrial* b) { return a->lr < b->lr; });
  int best = -1;
  for (int i = 0; i < static_cast<int>(byLr.size()); ++i) {
    const ProbeTrial& t = *byLr[static_cast<size_t>(i)];
    if (probeTrialScored(t, o.judge) && (best < 0 || probeTrialBetter(t, *byLr[static_cast<size_t>(best)], o.judge))) best = i;
  }
  for (auto* t : byLr) t->trains = false;
  if (best < 0) return;
  const ProbeTrial& b = *byLr[static_cast<size_t>(best)];
  // A schedule whose best trial learned nothing has no rate that trains.
  if (!(b.score < b.firstLoss)) return;
  row.bestLr = b.lr;
  row.bestScore = b.score;
  row.bestAccuracy = b.accuracy;
  for (auto* t : byLr)
    t->trains = probeTrialScored(*t, o.judge) &&
                (o.judge == ProbeJudge::Accuracy ? t->accuracy >= b.accuracy - o.accuracyPoints
                                                 : t->score <= b.score * (1 + o.tolerance) + o.slack * t->firstLoss);
  // The edge lies above the best rate: walk up from it while the trials train.
  size_t i = static_cast<size_t>(best);
  while (i + 1 < byLr.size() && byLr[i + 1]->trains) ++i;
  row.trainsUpTo = byLr[i]->lr;
  if (i + 1 < byLr.size()) row.breaksAt = byLr[i + 1]->lr;
}

ProbeReport probeStability(const Experiment& e, const ProbeOptions& o) {
  if (o.steps < 3) throw ConfigError("probe", "steps per trial must be at least 3, found " + std::to_string(o.steps));
  if (!(o.resolution > 1)) throw ConfigError("probe", "resolution must be above 1, found " + num(o.resolution));
  if (o.judge == ProbeJudge::Accuracy && o.horizon != ProbeHorizon::Run)
    throw ConfigError("probe", "the accuracy judge needs the run horizon (a trial that ends as the run does, and evaluates there)");
  if (o.judge == ProbeJudge::Accuracy && o.evalSamples < 1)
    throw ConfigError("probe", "held-out samples per trial must be at least 1, found " + std::to_string(o.evalSamples));
  ProbeReport rep;
  rep.steps = o.steps;
  rep.horizon = o.horizon;
  rep.judge = o.judge;
  // The run's plan only where a trial compresses it (it may read the training split's size).
  std::optional<TrainingPlan> runPlan;
  if (o.horizon == ProbeHorizon::Run) {
    runPlan = runPlanOf(e);
    rep.runSteps = runPlan->totalSteps();
  }
  rep.threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<TrainingMethod> methods = o.methods.empty() ? probeMethodsFor(e) : o.methods;
  // The synchronous row first: the asynchronous ones start at its edge and are capped by it.
  const TrainingMethod sync{ScheduleKind::GPipe};
  const auto syncAt = std::find(methods.begin(), methods.end(), sync);
  if (syncAt != methods.end()) std::rotate(methods.begin(), syncAt, syncAt + 1);
  const double t0 = monotonicSeconds();
  const double first = o.start > 0 ? o.start : e.optimizer.lr;
  if (!(first > 0)) throw ConfigError("optimizer.lr", "the probe starts at the experiment's rate, which must be positive");
  // A trial's length as far as known before it runs: the run's own where that is shorter.
  int64_t trialSteps = o.steps;
  if (runPlan) trialSteps = std::min<int64_t>(trialSteps, runPlan->totalSteps());
  else if (e.training.steps > 0) trialSteps = std::min<int64_t>(trialSteps, e.training.steps);
  // The budget's upper bound, lowered as rows finish with trials unused.
  long long total = static_cast<long long>(methods.size()) * o.maxTrials * trialSteps, done = 0;
  auto cancelled = [&] { return o.cancel && o.cancel->load(); };
  double start = first;
  double syncEdge = NAN;
  // The first loss of the model as built (every trial starts from it; the smallest seen): a later
  // trial's first logged loss may already include a large step.
  double firstLoss = NAN;
  for (const TrainingMethod& method : methods) {
    if (cancelled()) break;
    ProbeRow row;
    row.method = method;
    const bool capped = o.capBySynchronous && std::isfinite(syncEdge) && !method.decl().synchronous;
    if (capped) {
      row.cap = syncEdge;
      start = syncEdge;
    }
    const double r0 = monotonicSeconds();
    Experiment base = withMethod(e, method);
    validateExperiment(base, "probe " + method.name());
    base.training.log_interval = 1;
    base.training.trace_steps = 0;
    base.training.checkpoint_every = 0;
    base.execution.mode = ExecutionMode::Single;
    base.execution.threads_per_stage = rep.threads;
    // A trial that passes an epoch's end evaluates a batch only; one judged by accuracy evaluates
    // `evalSamples` of the run's held-out split at its end.
    base.data.eval_limit = o.judge == ProbeJudge::Accuracy
                               ? (e.data.eval_limit > 0 ? std::min(e.data.eval_limit, o.evalSamples) : o.evalSamples)
                               : base.data.batch_size;
    if (runPlan) base = miniatureRun(base, o.steps, *runPlan);
    const std::string phase = "probe " + method.name();

    auto trial = [&](double lr) -> const ProbeTrial& {
      Experiment t = base;
      t.optimizer.lr = lr;
      const long long before = done;
      auto say = [&](int64_t step) {
        done = before + step;
        if (o.progress)
          o.progress({phase, done, total,
                      phase + " at lr " + num(lr) + ": step " + std::to_string(step) + " of " + std::to_string(trialSteps) +
                          " (trial " + std::to_string(row.trials.size() + 1) + ")"});
      };
      say(0);
      // A miniature run ends by itself (and evaluates at its end); the run's first steps are cut.
      TrialSink sink(o.horizon == ProbeHorizon::Run ? std::numeric_limits<int64_t>::max() : o.steps, o.blowUp, firstLoss,
                     o.cancel, say);
      const double s0 = monotonicSeconds();
      const RunOutcome out = runSingleProcess(t, sink, &sink.stop);
      ProbeTrial p;
      p.lr = lr;
      p.seconds = monotonicSeconds() - s0;
      p.steps = static_cast<int64_t>(sink.losses.size());
      p.firstLoss = sink.losses.empty() ? NAN : sink.losses.front();
      p.blewUp = sink.blew || out.status == RunStatus::Diverged;
      p.accuracy = sink.accuracy;
      p.why = sink.blew ? sink.why : out.status == RunStatus::Diverged ? out.message : std::string();
      if (out.status == RunStatus::Failed) throw EngineError(phase, out.message);
      if (!p.blewUp && !sink.losses.empty()) {
        const size_t n = sink.losses.size(), tail = std::max<size_t>(1, (n + 2) / 3);
        double sum = 0;
        for (size_t k = n - tail; k < n; ++k) sum += sink.losses[k];
        p.score = sum / static_cast<double>(tail);
        if (o.judge == ProbeJudge::Accuracy && std::isnan(p.accuracy) && !cancelled())
          throw ConfigError("probe", "the accuracy judge needs a model that reports accuracy; " + t.model.name +
                                         "'s evaluation reports none (judge by loss)");
      }
      if (!sink.losses.empty() && std::isfinite(sink.losses.front()))
        firstLoss = std::isfinite(firstLoss) ? std::min(firstLoss, sink.losses.front()) : sink.losses.front();
      // Each stage's delay: the largest any trial recorded (one that blew up early ends before its delays do).
      if (sink.stages > static_cast<int>(row.delays.size())) row.delays.resize(static_cast<size_t>(sink.stages), 0);
      for (const auto& [s, tau] : sink.tau)
        if (s >= 0 && s < static_cast<int>(row.delays.size()))
          row.delays[static_cast<size_t>(s)] = std::max(row.delays[static_cast<size_t>(s)], tau);
      done = before + trialSteps;  // a trial that stopped early leaves its steps to nothing
      row.trials.push_back(p);
      judgeProbeRow(row, o);
      return row.trials.back();
    };
    auto trainsAt = [&](double lr) {
      for (const auto& t : row.trials)
        if (t.lr == lr) return t.trains;
      return false;
    };
    auto full = [&] { return static_cast<int>(row.trials.size()) >= o.maxTrials || cancelled(); };

    // The schedule's best rate first (the rule judges every rate against it): the start and half
    // of it, then down by halves while the newest rate scores better than the one above it (or
    // that one blew up). Then, when the start still trains, up by doubling while trials train (not
    // past the cap: a capped row that trains at the synchronous edge ends there).
    auto scored = [&](double lr) -> const ProbeTrial* {
      for (const auto& t : row.trials)
        if (t.lr == lr && probeTrialScored(t, o.judge)) return &t;
      return nullptr;
    };
    auto lowerIsBetter = [&](double lo) {
      const ProbeTrial* a = scored(lo);
      const ProbeTrial* b = scored(2 * lo);
      return !a || !b || probeTrialBetter(*a, *b, o.judge);
    };
    trial(start);
    double lo = start / 2;
    if (!full()) trial(lo);
    while (!full() && lowerIsBetter(lo) && lo > first / 4096) {
      lo /= 2;
      trial(lo);
    }
    if (trainsAt(start) && !capped) {
      double hi = start;
      while (!full() && trainsAt(hi) && hi < first * 4096) {
        hi *= 2;
        trial(hi);
      }
    }
    // Bisect the bracket (geometrically) to the resolution.
    while (!full() && !std::isnan(row.trainsUpTo) && !std::isnan(row.breaksAt) &&
           row.breaksAt / row.trainsUpTo > o.resolution * (1 + 1e-9))
      trial(std::sqrt(row.trainsUpTo * row.breaksAt));
    row.seconds = monotonicSeconds() - r0;
    total -= static_cast<long long>(o.maxTrials - static_cast<int>(row.trials.size())) * trialSteps;
    if (std::isfinite(row.edge())) start = row.edge();
    if (method == sync) syncEdge = row.edge();
    rep.rows.push_back(std::move(row));
  }
  // The trials' length: the run's own when it has fewer steps than asked.
  int64_t longest = 0;
  for (const auto& r : rep.rows)
    for (const auto& t : r.trials) longest = std::max(longest, t.steps);
  if (longest > 0) rep.steps = longest;
  rep.cancelled = cancelled();
  rep.seconds = monotonicSeconds() - t0;
  return rep;
}

}  // namespace pm
