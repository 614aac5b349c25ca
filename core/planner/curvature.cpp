#include "core/planner/curvature.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/engine/batch_source.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/training_plan.h"
#include "core/models/model_zoo.h"
#include "core/util/system_info.h"

namespace pm {

namespace {

using Vec = std::vector<torch::Tensor>;

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] * b[i]).sum().item<double>();
  return s;
}

void scaleTo(Vec& v, double norm) {
  const double n = std::sqrt(dot(v, v));
  for (auto& t : v) t.mul_(norm / n);
}

// Power iteration on one block: H v through the gradient's graph. Returns the last Rayleigh quotient
// (the eigenvalue of largest modulus).
double powerIterate(const Vec& grads, const Vec& params, const PowerIterationOptions& o,
                    at::Generator& gen, const std::function<void(int)>& onIteration) {
  Vec v;
  for (const auto& p : params) v.push_back(torch::randn(p.sizes(), gen, p.options().requires_grad(false)));
  scaleTo(v, 1.0);
  double mu = 0;
  for (int it = 0; it < o.iterations; ++it) {
    torch::Tensor gv = torch::zeros({}, grads[0].options());
    for (size_t i = 0; i < grads.size(); ++i) gv = gv + (grads[i] * v[i]).sum();
    const Vec hv0 = torch::autograd::grad({gv}, params, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                          /*allow_unused=*/true);
    Vec hv;
    for (size_t i = 0; i < params.size(); ++i) {
      hv.push_back(hv0[i].defined() ? hv0[i].detach() : torch::zeros_like(v[i]));
    }
    const double next = dot(v, hv);  // v has norm 1
    const double norm = std::sqrt(dot(hv, hv));
    if (onIteration) onIteration(it);
    const bool settled = it > 0 && std::abs(next - mu) <= o.tolerance * std::abs(next);
    mu = next;
    if (!(norm > 0) || settled) break;
    for (auto& t : hv) t.div_(norm);
    v = std::move(hv);
  }
  return mu;
}

// Lanczos on one block (three vectors kept, no reorthogonalization): the largest eigenvalue of the
// tridiagonal matrix after `iterations` products approximates the largest (algebraic) eigenvalue
// of H from below, and converges at both ends of the spectrum much faster than power iteration
// on a shifted H.
double lanczosTop(const Vec& grads, const Vec& params, const PowerIterationOptions& o, at::Generator& gen,
                  const std::function<void(int)>& onIteration) {
  Vec v, prev;
  for (const auto& p : params) {
    v.push_back(torch::randn(p.sizes(), gen, p.options().requires_grad(false)));
    prev.push_back(torch::zeros_like(v.back()));
  }
  scaleTo(v, 1.0);
  std::vector<double> alpha, beta;
  double previousTop = 0;
  for (int it = 0; it < o.iterations; ++it) {
    torch::Tensor gv = torch::zeros({}, grads[0].options());
    for (size_t i = 0; i < grads.size(); ++i) gv = gv + (grads[i] * v[i]).sum();
    const Vec hv = torch::autograd::grad({gv}, params, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                         /*allow_unused=*/true);
    Vec w;
    for (size_t i = 0; i < params.size(); ++i) w.push_back(hv[i].defined() ? hv[i].detach() : torch::zeros_like(v[i]));
    if (onIteration) onIteration(it);
    const double a = dot(w, v);
    alpha.push_back(a);
    const double lastBeta = beta.empty() ? 0.0 : beta.back();
    for (size_t i = 0; i < w.size(); ++i) w[i] = w[i] - a * v[i] - lastBeta * prev[i];
    const double b = std::sqrt(dot(w, w));
    // The tridiagonal matrix's largest eigenvalue so far.
    const int64_t k = static_cast<int64_t>(alpha.size());
    auto t = torch::diag(torch::tensor(alpha, torch::kDouble));
    if (k > 1) {
      const auto off = torch::tensor(beta, torch::kDouble);
      t = t + torch::diag(off, 1) + torch::diag(off, -1);
    }
    const double top = at::linalg_eigvalsh(t, "L").max().item<double>();
    const bool settled = it > 0 && std::abs(top - previousTop) <= o.tolerance * std::abs(top);
    previousTop = top;
    if (!(b > 1e-12 * std::max(1.0, std::abs(top))) || settled) break;
    beta.push_back(b);
    prev = std::move(v);
    v = std::move(w);
    for (auto& x : v) x.div_(b);
  }
  return previousTop;
}

}  // namespace

std::vector<double> blockTopHessianEigenvalues(const torch::Tensor& loss, const std::vector<std::vector<torch::Tensor>>& blocks,
                                               const PowerIterationOptions& opts,
                                               const std::function<void(int, int)>& onIteration) {
  Vec all;
  for (const auto& b : blocks) all.insert(all.end(), b.begin(), b.end());
  std::vector<double> out(blocks.size(), 0.0);
  if (all.empty()) return out;
  const Vec grads = torch::autograd::grad({loss}, all, {}, /*retain_graph=*/true, /*create_graph=*/true,
                                          /*allow_unused=*/true);
  auto gen = at::detail::createCPUGenerator(opts.seed);
  size_t k = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    Vec params, g;
    for (size_t i = 0; i < blocks[b].size(); ++i, ++k) {
      // A gradient without a graph (a parameter the loss does not reach) has no second derivative.
      if (!grads[k].defined() || !grads[k].requires_grad()) continue;
      params.push_back(blocks[b][i]);
      g.push_back(grads[k]);
    }
    if (params.empty()) continue;
    const auto report = [&](int it) {
      if (onIteration) onIteration(static_cast<int>(b), it);
    };
    const double mu = powerIterate(g, params, opts, gen, report);
    // A dominant negative eigenvalue: the largest (algebraic) one by Lanczos. Power iteration on
    // H - mu I would find it too, but at the rate (lambda_2 - mu)/(lambda_1 - mu), close to 1.
    out[b] = mu >= 0 ? mu : lanczosTop(g, params, opts, gen, report);
  }
  return out;
}

namespace {

StageCurvature summarize(std::vector<double> samples) {
  StageCurvature c;
  c.samples = std::move(samples);
  double sum = 0;
  for (double x : c.samples) sum += x;
  const double n = static_cast<double>(c.samples.size());
  c.mean = sum / n;
  double ss = 0;
  for (double x : c.samples) ss += (x - c.mean) * (x - c.mean);
  c.stddev = std::sqrt(ss / n);
  c.min = *std::min_element(c.samples.begin(), c.samples.end());
  c.max = *std::max_element(c.samples.begin(), c.samples.end());
  return c;
}

struct Setup {
  const Experiment& e;
  const CurvatureOptions& opts;
  const BatchSource& train;
  const TrainingPlan& plan;
  torch::nn::Sequential model;
  std::vector<std::vector<torch::Tensor>> blocks;
};

void say(const CurvatureOptions& o, const std::string& phase, long long done, long long total, const std::string& line) {
  if (o.progress) o.progress({phase, done, total, line});
}

// The curvature of every stage on `count` microbatches starting at minibatch `firstMinibatch`.
CurvatureSnapshot snapshot(Setup& s, const std::string& when, int64_t firstMinibatch, int64_t steps) {
  CurvatureSnapshot snap;
  snap.when = when;
  snap.steps = steps;
  const int P = static_cast<int>(s.blocks.size());
  std::vector<std::vector<double>> samples(static_cast<size_t>(P));
  int done = 0;
  for (int64_t k = firstMinibatch % s.plan.totalSteps(); done < s.opts.microbatches; k = (k + 1) % s.plan.totalSteps()) {
    const Batch b = s.train.get(s.plan.minibatchIndices(k));
    for (const Batch& mb : splitMicrobatches(b, s.plan.microbatches())) {
      if (done == s.opts.microbatches) break;
      const double t0 = monotonicSeconds();
      const torch::Tensor loss = computeLoss(s.model->forward(mb.x), mb.y, s.train.task());
      PowerIterationOptions po = s.opts.power;
      po.seed += static_cast<uint64_t>(done);
      int iterations = 0;
      double lastSaid = t0;
      const std::string phase = "curvature " + when;
      const auto vals = blockTopHessianEigenvalues(loss, s.blocks, po, [&](int block, int) {
        ++iterations;
        // A microbatch of a large model takes seconds: say that it goes on.
        if (monotonicSeconds() - lastSaid < 0.5) return;
        lastSaid = monotonicSeconds();
        char line[160];
        std::snprintf(line, sizeof line, "curvature %s: microbatch %d/%d, stage %d of %d, %d Hessian-vector products, %.1f s",
                      when.c_str(), done + 1, s.opts.microbatches, block + 1, P, iterations, lastSaid - t0);
        say(s.opts, phase, done, s.opts.microbatches, line);
      });
      for (int st = 0; st < P; ++st) samples[static_cast<size_t>(st)].push_back(vals[static_cast<size_t>(st)]);
      ++done;
      char line[160];
      std::snprintf(line, sizeof line, "curvature %s: microbatch %d/%d, %d Hessian-vector products over %d stages, %.1f s",
                    when.c_str(), done, s.opts.microbatches, iterations, P, monotonicSeconds() - t0);
      say(s.opts, phase, done, s.opts.microbatches, line);
    }
  }
  for (auto& v : samples) snap.stages.push_back(summarize(std::move(v)));
  return snap;
}

// The synchronous warm-up as gpipe computes it: gradients accumulated over the N microbatches
// (each weighted by its share of the minibatch), one step per minibatch at the base schedule's rate.
void trainWarmup(Setup& s, int64_t steps) {
  auto opt = makeOptimizer(s.e.optimizer, s.model->parameters());
  const double t0 = monotonicSeconds();
  for (int64_t k = 0; k < steps; ++k) {
    setLearningRate(*opt, baseLearningRate(s.e.optimizer, k, s.plan.totalSteps()));
    const Batch b = s.train.get(s.plan.minibatchIndices(k));
    opt->zero_grad();
    for (const Batch& mb : splitMicrobatches(b, s.plan.microbatches()))
      (computeLoss(s.model->forward(mb.x), mb.y, s.train.task()) *
       (static_cast<double>(mb.size()) / static_cast<double>(b.size())))
          .backward();
    opt->step();
    if ((k + 1) % 20 == 0 || k + 1 == steps) {
      char line[120];
      std::snprintf(line, sizeof line, "warm-up: step %lld/%lld, %.1f s", static_cast<long long>(k + 1),
                    static_cast<long long>(steps), monotonicSeconds() - t0);
      say(s.opts, "warm-up", k + 1, steps, line);
    }
  }
  opt->zero_grad();
}

}  // namespace

CurvatureReport estimateStageCurvature(const Experiment& e, const CurvatureOptions& opts) {
  if (opts.microbatches < 1) throw std::invalid_argument("expected at least 1 microbatch to estimate on");
  if (opts.power.iterations < 1) throw std::invalid_argument("expected at least 1 power iteration");
  CurvatureReport r;
  say(opts, "data", 0, 0, "reading the training data");
  auto train = makeBatchSource(e, true);
  const TrainingPlan plan(e, train->size());
  say(opts, "model", 0, 0, "building the model");
  auto units = buildModel(e.model, e.training.seed);
  r.partition = resolvePartition(e, units);
  Setup s{e, opts, *train, plan, makeStage(units, 0, static_cast<int>(units.size())), {}};
  s.model->train();
  for (int st = 0; st < r.partition.stages(); ++st) {
    std::vector<torch::Tensor> params;
    const int b = r.partition.begin[static_cast<size_t>(st)], end = r.partition.end[static_cast<size_t>(st)];
    for (int u = b; u < end; ++u)
      for (const auto& p : units[static_cast<size_t>(u)].module.ptr()->parameters())
        if (p.requires_grad()) params.push_back(p);
    s.blocks.push_back(std::move(params));
    r.stageUnits.push_back(units[static_cast<size_t>(b)].name +
                           (end - b > 1 ? ".." + units[static_cast<size_t>(end - 1)].name : std::string()));
  }
  r.init = snapshot(s, "at init", 0, 0);
  if (scheduleDecl(e.pipeline.schedule).takesPipeMare && e.pipemare.warmup_epochs > 0) {
    r.hasWarmup = true;
    r.warmupSteps = plan.warmupMinibatches(e.pipemare.warmup_epochs);
    const int64_t steps = std::min(r.warmupSteps, std::max<int64_t>(0, opts.maxWarmupSteps));
    r.warmupCapped = steps < r.warmupSteps;
    trainWarmup(s, steps);
    r.afterWarmup = snapshot(s, "after warm-up", steps, steps);
  }
  return r;
}

}  // namespace pm
