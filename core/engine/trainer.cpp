#include "core/engine/trainer.h"

#include <cmath>

#include "core/data/datasets.h"
#include "core/engine/batch_source.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/memory_accounting.h"
#include "core/models/model_zoo.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

Json configureThreadsAndBlas(int threads, EventSink& sink) {
  torch::set_num_threads(threads);
  bool blasSet = setBlasThreads(threads);
  BlasInfo blas = loadedBlas();
  if (blas.isReference() || blas.library.empty()) {
    Json w = makeEvent(ev::kWarning);
    w["message"] = blas.library.empty()
                       ? "no BLAS library found loaded; matrix work may be slow"
                       : "LibTorch is using the reference BLAS (" + blas.library +
                             "), many times slower: install libopenblas0-pthread (scripts/setup.sh does)";
    sink.emit(w);
  }
  return Json{{"blas", {{"library", blas.library}, {"kind", blas.kind}, {"threads_set", blasSet}}},
              {"threads", torch::get_num_threads()}};
}

namespace {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const OptimizerConfig& o, std::vector<torch::Tensor> params) {
  if (o.name == "sgd")
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(o.lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(o.weight_decay));
  if (o.name == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  if (o.name == "adamw")
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  throw ConfigError("optimizer.name", "unknown optimizer \"" + o.name + "\"");
}

void setLearningRate(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) g.options().set_lr(lr);
}

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
};

EvalResult evaluate(torch::nn::Sequential& model, const BatchSource& src, int batch) {
  torch::NoGradGuard ng;
  model->eval();
  EvalResult r;
  double lossSum = 0;
  int64_t correct = 0, predictions = 0;
  for (int64_t start = 0; start < src.size(); start += batch) {
    std::vector<int64_t> idx;
    for (int64_t i = start; i < std::min<int64_t>(src.size(), start + batch); ++i) idx.push_back(i);
    Batch b = src.get(idx);
    auto out = model->forward(b.x);
    lossSum += computeLoss(out, b.y, src.task()).item<double>() * static_cast<double>(b.size());
    correct += countCorrect(out, b.y, src.task());
    predictions += b.y.numel();
    r.samples += b.size();
  }
  model->train();
  r.loss = r.samples ? lossSum / static_cast<double>(r.samples) : 0;
  r.accuracy = predictions ? static_cast<double>(correct) / static_cast<double>(predictions) : 0;
  return r;
}

}  // namespace

Trainer::Trainer(Experiment e, EventSink& sink, const std::atomic<bool>* stop) : e_(std::move(e)), sink_(sink), stop_(stop) {}

RunOutcome Trainer::run() {
  if (e_.pipeline.stages != 1)
    throw EngineError("pipeline.stages", "the single-stage trainer runs P = 1 only; found " +
                                             std::to_string(e_.pipeline.stages));
  const double t0 = monotonicSeconds();
  Json started = makeEvent(ev::kRunStarted);
  started["config"] = experimentToJson(e_);
  started["host"] = hostName();
  started["revision"] = projectRevision();
  started.update(configureThreadsAndBlas(e_.execution.threads_per_stage, sink_));

  auto train = makeBatchSource(e_, true);
  auto held = makeBatchSource(e_, false);
  auto units = buildModel(e_.model.name, e_.training.seed);
  auto model = makeStage(units, 0, static_cast<int>(units.size()));
  model->train();
  auto optimizer = makeOptimizer(e_.optimizer, model->parameters());

  const int B = e_.data.batch_size;
  const int N = e_.pipeline.microbatches;
  const int64_t stepsPerEpoch = std::max<int64_t>(1, (train->size() + B - 1) / B);
  const int64_t totalSteps = e_.training.steps > 0
                                 ? e_.training.steps
                                 : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(e_.training.epochs * static_cast<double>(stepsPerEpoch))));
  started["partition"] = Json::array({Json{{"stage", 0}, {"units", Json::array({0, static_cast<int>(units.size())})},
                                           {"parameters", parameterCount(units)}}});
  started["data"] = {{"train", train->describe()}, {"eval", held->describe()}};
  started["total_steps"] = totalSteps;
  started["steps_per_epoch"] = stepsPerEpoch;
  sink_.emit(started);

  RunOutcome out{"finished", "", Json::object()};
  std::vector<int64_t> order;
  int64_t samples = 0;
  double computeS = 0, lastLoss = NAN, bestEval = NAN, lastEvalLoss = NAN, lastAcc = NAN;
  StageMemory mem;
  double windowCompute = 0, windowStart = monotonicSeconds();
  int64_t windowSamples = 0;

  auto emitEval = [&](int64_t step, double epoch) {
    EvalResult r = evaluate(model, *held, std::max(B, 256));
    Json ev = makeEvent(ev::kEval);
    ev["step"] = step;
    ev["epoch"] = epoch;
    ev["loss"] = r.loss;
    if (held->task() == Task::LanguageModel) ev["perplexity"] = std::exp(r.loss);
    if (held->task() != Task::Regression) ev["accuracy"] = r.accuracy;
    ev["samples"] = r.samples;
    sink_.emit(ev);
    lastEvalLoss = r.loss;
    lastAcc = r.accuracy;
    if (std::isnan(bestEval) || r.accuracy > bestEval) bestEval = r.accuracy;
  };

  for (int64_t step = 0; step < totalSteps; ++step) {
    if (stop_ && stop_->load()) {
      out.status = "stopped";
      out.message = "stopped at step " + std::to_string(step);
      break;
    }
    const int64_t epoch = step / stepsPerEpoch;
    const int64_t inEpoch = step % stepsPerEpoch;
    if (inEpoch == 0) {
      if (e_.data.shuffle) {
        order = shuffledIndices(train->size(), e_.training.seed, epoch);
      } else {
        order.resize(static_cast<size_t>(train->size()));
        for (int64_t i = 0; i < train->size(); ++i) order[static_cast<size_t>(i)] = i;
      }
    }
    const int64_t begin = inEpoch * B, end = std::min<int64_t>(train->size(), begin + B);
    std::vector<int64_t> idx(order.begin() + begin, order.begin() + end);
    Batch batch = train->get(idx);

    const double c0 = monotonicSeconds();
    const double lr = baseLearningRate(e_.optimizer, step, totalSteps);
    setLearningRate(*optimizer, lr);
    optimizer->zero_grad();
    double lossSum = 0;
    int64_t actBytes = 0;
    for (const auto& mb : splitMicrobatches(batch, N)) {
      auto outT = model->forward(mb.x);
      auto loss = computeLoss(outT, mb.y, train->task());
      actBytes = std::max(actBytes, tensorBytes(mb.x));
      // Scale so that the accumulated gradient is the minibatch mean.
      (loss * (static_cast<double>(mb.size()) / static_cast<double>(batch.size()))).backward();
      lossSum += loss.item<double>() * static_cast<double>(mb.size());
    }
    optimizer->step();
    const double c1 = monotonicSeconds();
    computeS += c1 - c0;
    windowCompute += c1 - c0;
    samples += batch.size();
    windowSamples += batch.size();
    lastLoss = lossSum / static_cast<double>(batch.size());

    const bool guardHit = e_.training.divergence_guard.enabled &&
                          (!std::isfinite(lastLoss) || lastLoss > e_.training.divergence_guard.max_loss);
    const bool logNow = (step + 1) % std::max<int64_t>(1, e_.training.log_interval) == 0 || step + 1 == totalSteps || guardHit;
    const double epochF = static_cast<double>(step + 1) / static_cast<double>(stepsPerEpoch);
    if (logNow) {
      const double now = monotonicSeconds();
      const double wall = std::max(1e-9, now - windowStart);
      Json s = makeEvent(ev::kStep);
      s["step"] = step + 1;
      s["epoch"] = epochF;
      s["samples"] = samples;
      s["loss"] = lastLoss;
      s["lr"] = lr;
      s["samples_per_s"] = static_cast<double>(windowSamples) / wall;
      sink_.emit(s);

      mem.weights = moduleWeightBytes(*model);
      mem.gradients = moduleGradientBytes(*model);
      mem.optimizer = optimizerStateBytes(*optimizer);
      mem.activations = actBytes;
      mem.peak = std::max(mem.peak, mem.total());
      Json st = makeEvent(ev::kStage);
      st["stage"] = 0;
      st["rank"] = 0;
      st["step"] = step + 1;
      st["compute_s"] = windowCompute;
      st["wait_s"] = 0.0;
      st["idle_s"] = std::max(0.0, wall - windowCompute);
      st["utilization"] = windowCompute / wall;
      st["memory"] = mem.toJson();
      st["rss"] = processRssBytes();
      sink_.emit(st);

      Json p = makeEvent(ev::kProgress);
      p["step"] = step + 1;
      p["total_steps"] = totalSteps;
      p["epoch"] = epochF;
      const double elapsed = now - t0;
      p["elapsed_s"] = elapsed;
      p["eta_s"] = elapsed / static_cast<double>(step + 1) * static_cast<double>(totalSteps - step - 1);
      sink_.emit(p);
      windowCompute = 0;
      windowSamples = 0;
      windowStart = now;
    }
    if (guardHit) {
      out.status = "diverged";
      out.message = "loss " + (std::isfinite(lastLoss) ? std::to_string(lastLoss) : std::string("is not finite")) +
                    " at step " + std::to_string(step + 1) + " (guard: training.divergence_guard.max_loss = " +
                    std::to_string(e_.training.divergence_guard.max_loss) + ")";
      break;
    }
    const bool epochEnd = inEpoch + 1 == stepsPerEpoch || step + 1 == totalSteps;
    const bool evalNow = e_.training.eval_interval > 0 ? ((step + 1) % e_.training.eval_interval == 0 || step + 1 == totalSteps)
                                                       : epochEnd;
    if (evalNow) emitEval(step + 1, epochF);
  }

  const double wall = monotonicSeconds() - t0;
  out.summary = Json{{"final_loss", lastLoss},
                     {"final_eval_loss", lastEvalLoss},
                     {"final_accuracy", lastAcc},
                     {"best_accuracy", bestEval},
                     {"samples", samples},
                     {"wall_s", wall},
                     {"compute_s", computeS},
                     {"samples_per_s", wall > 0 ? static_cast<double>(samples) / wall : 0.0},
                     {"peak_memory", mem.peak},
                     {"peak_rss", processPeakRssBytes()}};
  return out;
}

}  // namespace pm
