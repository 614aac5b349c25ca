#pragma once
// The empirical stability probe (docs/planner.md, "Stability probe"): per schedule, short
// trainings of the experiment itself in single mode (its model, data, schedule delays, optimizer
// and learning-rate schedule, stopped after a few dozen steps) at a ladder of base learning
// rates, bisecting the largest rate that still trains. The learning-rate range test researchers
// know from fastai and Lightning, run per schedule so that each trial has the schedule's own
// delays, stashing, T1 and T2. Beside the analytic bound (stability.h), which it does not use.
//
// A trial "trains" when its loss did not blow up (non-finite, the divergence guard, or above
// blowUp x its first loss) and its score, the mean loss over the last third of its steps, is
// within `tolerance` of the best score of its schedule's trials (the study's rule, "within 5
// points of the best rate of its column", in loss: reports/study.md, section 4). The edge lies
// between the largest rate that trains and the smallest larger one that does not.
//
// The synchronous row (gpipe's update) is probed first, and an asynchronous row starts at its edge
// and is capped by it: a delay adds instability to the synchronous dynamics, it does not remove
// any (in the delayed-quadratic model edge(tau) <= edge(0) for every tau), and in a few dozen steps
// from initialization a delayed schedule's loss is often too flat across rates for the tolerance
// to separate them; its own trials then show only where the delay makes training blow up.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/engine/training_plan.h"
#include "core/pipeline/training_method.h"

namespace pm {

struct ProbeProgress {
  std::string phase;          // "probe <method>"
  long long done = 0, total = 0;  // steps trained of the budget's upper bound
  std::string message;
};

// What a trial of S steps trains: the run's first S steps (its schedules as the run has them
// there), or the whole run in miniature (its learning-rate schedule and T1's annealing compressed
// into S steps, so that a trial ends as the run does, at the schedule's last rates).
enum class ProbeHorizon { First, Run };

// How a trial is judged against its schedule's best: by its loss (the mean of the last third of
// its steps within `tolerance` of the best trial's), or, as the study's map judges a run, by its
// accuracy at the end (held-out, `evalSamples` of the run's evaluation split) within
// `accuracyPoints` of the best trial's. The accuracy judge needs the Run horizon: a trial then
// ends as the run does and evaluates there.
enum class ProbeJudge { Loss, Accuracy };

struct ProbeOptions {
  int64_t steps = 50;       // optimizer steps per trial
  ProbeHorizon horizon = ProbeHorizon::First;
  ProbeJudge judge = ProbeJudge::Loss;
  double accuracyPoints = 0.05;  // the accuracy judge: a trial trains within this of the best accuracy
  int64_t evalSamples = 1000;    // the accuracy judge: held-out samples evaluated at a trial's end
  double tolerance = 0.25;  // a trial trains while score <= best * (1 + tolerance) + slack * first loss
  double slack = 0.01;
  double blowUp = 10;       // a loss above this many times the trial's first ends it: broken
  double resolution = 1.5;  // bisect until breaksAt / trainsUpTo is at most this
  int maxTrials = 8;        // per schedule
  double start = 0;         // the first rate tried (0: the experiment's optimizer.lr)
  int threads = 0;          // intra-op threads of the trials (0: this machine's cores)
  bool capBySynchronous = true;  // asynchronous rows start at the synchronous row's edge and are capped by it
  // The schedules probed; empty: probeMethodsFor(e).
  std::vector<TrainingMethod> methods;
  std::function<void(const ProbeProgress&)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set: the trial in progress stops and the probe returns
};

struct ProbeTrial {
  double lr = 0;
  int64_t steps = 0;      // trained (fewer when it blew up)
  double firstLoss = NAN;
  double score = NAN;     // mean loss of the last third of the steps; NaN when it blew up
  double accuracy = NAN;  // held-out accuracy at the trial's end (the Run horizon; NaN when not evaluated)
  bool blewUp = false;
  std::string why;        // blew up: what ("loss 812 at step 14 > 10 x the first 2.31")
  bool trains = false;    // judged against its schedule's best (set once the schedule is done)
  double seconds = 0;
};

struct ProbeRow {
  TrainingMethod method;
  std::vector<ProbeTrial> trials;  // in the order run
  std::vector<int64_t> delays;     // each stage's recorded delay (tau, optimizer steps) in the trials
  double trainsUpTo = NAN;   // the largest rate that trains above the best one
  double breaksAt = NAN;     // the smallest larger rate that does not (NaN: none found up to the ladder's top)
  double bestLr = NAN, bestScore = NAN;
  double bestAccuracy = NAN;  // the best trial's accuracy (the accuracy judge)
  double cap = NAN;          // the synchronous row's edge, for an asynchronous row probed after it
  // The row's own estimate: the geometric mean of the bracket; trainsUpTo when nothing broke; NaN
  // when nothing trained.
  double ownEdge() const;
  // The estimate: ownEdge(), at most the cap.
  double edge() const;
  bool capped() const;  // the cap decides the edge
  double seconds = 0;
};

struct ProbeReport {
  std::vector<ProbeRow> rows;
  int64_t steps = 0;    // per trial: the longest trial (the run's length where it is below ProbeOptions::steps)
  ProbeHorizon horizon = ProbeHorizon::First;
  ProbeJudge judge = ProbeJudge::Loss;
  int64_t runSteps = 0;  // the run's own optimizer steps (what a miniature compresses; 0 with the First horizon)
  int threads = 1;
  double seconds = 0;
  bool cancelled = false;
};

// The default rows: the synchronous update (gpipe's, which 1f1b, zb-h1 and the chunked schedules
// share), pipedream, pipemare, pipemare+T1 and pipemare+T1+T2; and the experiment's own method
// (recompute dropped, chunked as gpipe) when it is none of these.
std::vector<TrainingMethod> probeMethodsFor(const Experiment& e);

// The experiment with `method`'s schedule and variants (T1, T2) set; a chunked schedule keeps
// its chunks. pipemare's synchronous warm-up is dropped: the probe measures the asynchronous update.
Experiment withMethod(const Experiment& e, const TrainingMethod& method);

// The run of `e` (whose plan is `run`) in `steps` optimizer steps: training.steps set, the
// learning-rate schedule's warm-up and step size and T1's annealing scaled by steps / the run's
// steps (at least one step each). A run of at most `steps` steps is returned as it is.
Experiment miniatureRun(const Experiment& e, int64_t steps, const TrainingPlan& run);

// The run's plan (reads the training split's size where it is not known from the configuration).
// Throws DataError / ConfigError as a run would.
TrainingPlan runPlanOf(const Experiment& e);

// Judges a schedule's trials (sets each trial's `trains` and the row's bracket) by the rule above.
void judgeProbeRow(ProbeRow& row, const ProbeOptions& opts);

// Runs the probe. Rows in `methods` order with the synchronous one first, each starting at the
// edge found for the row before (the first at opts.start): down by 2x to the schedule's best rate
// (while the lower rate scores better), up by 2x while a trial trains (not past the cap), then
// bisecting the bracket. Throws ConfigError / DataError as a run of the experiment would.
ProbeReport probeStability(const Experiment& e, const ProbeOptions& opts = {});

}  // namespace pm
