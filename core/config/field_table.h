#pragma once
// Internal to core/config: the field table. One list of fields (visitExperiment) drives parsing
// (experiment.cpp), range validation, serialisation and the field descriptions of
// experiment_fields.h, so they cannot drift apart. Each field carries its spec (type, range,
// allowed values) and a one-line help text. A spec may depend on fields visited before it
// (pipeline.stages on model.name, pipeline.microbatches on data.batch_size), which is why sections
// are visited in a fixed order. Cross-field rules that are not a range of a single field live in
// checkCrossFieldRules() (experiment_rules.cpp).
//
// V provides section(key, body), field(key, ref, spec, help), choice(key, ref, help) for the enums
// of choices.h, flag(key, ref, help), list(key, ref, spec, help), intList(key, ref, spec, help)
// and options(key, ref, modelName, help). E is Experiment or const Experiment.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/config/experiment.h"
#include "core/config/field_spec.h"
#include "core/config/model_catalog.h"

namespace pm::config_detail {

constexpr int kCharLmMaxContext = 128;  // the charlm's positional table (model_catalog: ctx 128)

// The partitionable units of a model; 0 when the catalog has none by that name.
inline int modelUnits(const std::string& model) {
  const ModelInfo* m = findModel(model);
  return m ? m->units : 0;
}

template <class V, class E>
void visitTopLevel(V& v, E& e) {
  v.field("name", e.name, TextSpec::label(200), "the run's name in the store");
  v.list("tags", e.tags, TextSpec::label(64), "labels for filtering runs");
  v.field("notes", e.notes, TextSpec::any(), "free text kept with the run");
  v.section("model", [&] {
    v.field("name", e.model.name, TextSpec::oneOf(modelNames()),
            "a model of the zoo, or torchscript: a scripted nn.Sequential read from model.path");
    v.field("path", e.model.path, TextSpec::any(),
            "torchscript: the model file (torch.jit.save), relative to the experiment file; \"\" for zoo models");
    v.choice("task", e.model.task, "the loss: classification (cross-entropy), language-model (next-token cross-entropy) or regression (MSE); "
            "auto = the dataset's");
    v.options("options", e.model.options, e.model.name, "reserved for model-specific options; no model takes any yet");
  });
}

template <class V, class E>
void visitData(V& v, E& e) {
  auto& d = e.data;
  v.choice("dataset", d.dataset,
           "where samples come from: Fashion-MNIST, a text corpus, generated samples, or tensor files written by torch.save");
  v.field("path", d.path, TextSpec::any(),
          "the dataset's file or directory; \"\" = its default location (unused by synthetic); tensors: the training "
          "file (torch.save({\"x\": x, \"y\": y}), relative to the experiment file)");
  v.field("eval_path", d.eval_path, TextSpec::any(),
          "tensors: the held-out file; \"\" = the last eval_fraction of the training file's samples");
  v.field("batch_size", d.batch_size, IntSpec{1, 65536, ""}, "B, samples per minibatch (one optimizer step of gpipe and 1f1b)");
  v.choice("eval_split", d.eval_split, "fashion-mnist: the split evaluated");
  v.field("eval_fraction", d.eval_fraction, RealSpec{0, 0.5, true, false, ""},
          "text (and tensors without eval_path): the last share of the samples held out for validation");
  v.field("train_limit", d.train_limit, IntSpec{0, kNoMax, "(0 = all)"}, "use only the first K training samples; 0 = all");
  v.field("eval_limit", d.eval_limit, IntSpec{0, kNoMax, "(0 = all)"}, "evaluate on only the first K held-out samples; 0 = all");
  const bool charlm = e.model.name == "charlm";
  v.field("context", d.context,
          IntSpec{8, charlm ? kCharLmMaxContext : 4096,
                  charlm ? "(model charlm reads at most " + std::to_string(kCharLmMaxContext) + " bytes)" : ""},
          "text: sequence length in bytes");
  v.field("synthetic_samples", d.synthetic_samples, IntSpec{1, 1000000, ""},
          "synthetic: training samples (generated from the seed)");
  v.choice("synthetic_task", d.synthetic_task, "synthetic: 10 classes, or a linear target");
  v.flag("shuffle", d.shuffle, "reshuffle the training samples every epoch (the order depends on the seed and the epoch)");
}

template <class V, class E>
void visitPipeline(V& v, E& e) {
  auto& p = e.pipeline;
  const int units = modelUnits(e.model.name);
  v.field("stages", p.stages,
          IntSpec{1, units > 0 ? units : kNoMax,
                  units > 0 ? "(model " + e.model.name + " has " + std::to_string(units) + " partitionable units)" : ""},
          "P, pipeline stages (at most the model's partitionable units)");
  const int batch = std::max(1, e.data.batch_size);
  v.field("microbatches", p.microbatches,
          IntSpec{1, batch, "(at most data.batch_size=" + std::to_string(e.data.batch_size) + ")"},
          "N, microbatches per minibatch (B/N samples each)");
  v.section("partition", [&] {
    v.choice("method", p.partition.method,
             "how units are split into stages: balance parameters, balance measured time, or explicit boundaries");
    v.intList("boundaries", p.partition.boundaries,
              IntSpec{1, units > 1 ? units - 1 : kNoMax,
                      units > 0 ? "(the first unit of a stage; model " + e.model.name + " has " + std::to_string(units) + " units)"
                                : "(the first unit of a stage)"},
              "explicit: the first unit of stages 2..P (units are numbered from 0)");
  });
  v.choice("schedule", p.schedule, "the pipeline schedule; gpipe and 1f1b flush every minibatch, the others are asynchronous");
  v.flag("recompute", p.recompute, "keep only each microbatch's stage input and recompute the stage forward in the backward (less memory, one more "
         "forward)");
  v.field("update_interval", p.update_interval, IntSpec{1, 65536, ""},
          "pipedream: microbatches per optimizer step; pipedream-2bw: m, the microbatches gradients are accumulated over "
          "(m >= P); 1 with the other schedules");
  v.field("chunks", p.chunks, IntSpec{2, 64, ""},
          "interleaved-1f1b: v, the model chunks per rank (the model is cut into v x pipeline.stages stages, placed in a "
          "loop); zb-v always holds 2");
  v.choice("timing", p.timing, "how far forwards run ahead of backwards in the asynchronous 1F1B: 1f1b P-1-s warm-up forwards at stage s, "
           "paper 2(P-1-s), the PipeMare paper's fine-grained pipeline (pipedream and pipemare only)");
}

template <class V, class E>
void visitPipeMare(V& v, E& e) {
  auto& m = e.pipemare;
  v.flag("t1", m.t1, "T1, learning-rate rescheduling: stage i starts at lr/tau_i and anneals back to lr over anneal_steps");
  v.field("anneal_steps", m.anneal_steps, IntSpec{0, kMaxSteps, "(0 = anneal_epochs, or one epoch of updates)"},
          "K, T1's annealing length in optimizer steps; 0 = anneal_epochs, or one epoch of updates");
  v.field("anneal_epochs", m.anneal_epochs, RealSpec{0, 1000, false, false, "(0 = anneal_steps)"},
          "K in epochs of updates; 0 = anneal_steps (not both)");
  v.flag("t2", m.t2, "T2, discrepancy correction: the backward uses weights extrapolated back by the delay");
  v.field("decay", m.decay, RealSpec{0, 1, true, true, ""}, "D, T2's decay: gamma_i = D^(1/Delta_i)");
  v.field("warmup_epochs", m.warmup_epochs, RealSpec{0, 1000, false, false, ""},
          "run the first epochs synchronously, then switch to pipemare");
  v.choice("warmup_schedule", m.warmup_schedule, "the synchronous schedule of the warm-up");
  v.choice("momentum_mode", m.momentum_mode, "SGD momentum the same on every stage, or reduced with the stage's delay");
}

template <class V, class E>
void visitOptimizer(V& v, E& e) {
  auto& o = e.optimizer;
  v.choice("name", o.name, "the optimizer of every stage");
  v.field("lr", o.lr, RealSpec{0, 10, true, false, ""}, "base learning rate");
  v.field("momentum", o.momentum, RealSpec{0, 1, false, true, ""}, "SGD momentum (sgd only)");
  v.flag("nesterov", o.nesterov, "Nesterov momentum (sgd with momentum > 0)");
  v.field("weight_decay", o.weight_decay, RealSpec{0, 1, false, false, ""}, "L2 penalty (adamw: decoupled)");
  v.field("beta1", o.beta1, RealSpec{0, 1, false, true, ""}, "adam, adamw: first-moment decay");
  v.field("beta2", o.beta2, RealSpec{0, 1, false, true, ""}, "adam, adamw: second-moment decay");
  v.field("eps", o.eps, RealSpec{0, 1, true, false, ""}, "adam, adamw: denominator term");
  v.section("schedule", [&] {
    auto& s = o.schedule;
    v.choice("name", s.name, "base learning-rate schedule over optimizer steps");
    v.field("warmup_steps", s.warmup_steps, IntSpec{0, kMaxSteps, ""},
            "steps of linear ramp from 0 (linear-warmup, cosine, inverse-sqrt)");
    v.field("step_size", s.step_size, IntSpec{1, kMaxSteps, ""}, "step: multiply by gamma every step_size steps");
    v.field("gamma", s.gamma, RealSpec{0, 1, true, false, ""}, "step: the factor");
    v.field("min_lr", s.min_lr, RealSpec{0, std::isfinite(o.lr) ? o.lr : 0, false, false, "(at most optimizer.lr)"},
            "cosine: the floor reached at the last step");
  });
}

template <class V, class E>
void visitTraining(V& v, E& e) {
  auto& t = e.training;
  v.field("epochs", t.epochs, RealSpec{0, 1000, false, false, ""},
          "training length in passes over the training set (fractions allowed)");
  v.field("steps", t.steps, IntSpec{0, kMaxSteps, "(0 = derived from epochs)"},
          "training length in minibatches; 0 = derived from epochs");
  v.field("eval_interval", t.eval_interval, IntSpec{0, kMaxSteps, "(0 = at the end of each epoch)"},
          "evaluate every K steps; 0 = at the end of each epoch only");
  v.field("log_interval", t.log_interval, IntSpec{1, kMaxSteps, ""}, "emit a step event every K steps");
  v.field("trace_steps", t.trace_steps, IntSpec{-1, kMaxSteps, "(-1 = every step, 0 = none)"},
          "record the schedule trace (start and end of every action) for the first K minibatches; -1 = all, 0 = none");
  v.field("checkpoint_every", t.checkpoint_every, IntSpec{0, kMaxSteps, "(0 = only when a single-mode run is stopped)"},
          "per-stage checkpoints every K steps; 0 = only when a single-mode run is stopped");
  v.field("seed", t.seed, IntSpec{0, kNoMax, ""}, "seeds weights (not a torchscript model's: the file's are the initial weights), shuffling and synthetic data");
  v.section("divergence_guard", [&] {
    v.flag("enabled", t.divergence_guard.enabled, "end the run as \"diverged\" on a bad loss");
    v.field("max_loss", t.divergence_guard.max_loss, RealSpec{0, kInf, true, false, ""},
            "a loss above this, or not finite, is bad");
  });
}

template <class V, class E>
void visitExecution(V& v, E& e) {
  auto& x = e.execution;
  v.choice("mode", x.mode, "single: all stages in one process; real: one process per stage");
  v.choice("backend", x.backend, "how the stages of a real run talk: c10d gloo, or nccl (needs CUDA devices); single mode always uses "
           "in-process channels (local names them)");
  v.field("threads_per_stage", x.threads_per_stage, IntSpec{1, 256, ""}, "LibTorch intra-op and BLAS threads of each stage");
  v.field("timeout_s", x.timeout_s, RealSpec{1, 3600, false, false, ""},
          "seconds every blocking communication call waits before the run ends with an error");
  v.list("devices", x.devices, TextSpec::deviceName(), "one device for all stages, or one per stage (\"cpu\" or \"cuda:K\")");
}

// Every field, in the order of the file and of validation.
template <class V, class E>
void visitExperiment(V& v, E& e) {
  visitTopLevel(v, e);
  v.section("data", [&] { visitData(v, e); });
  v.section("pipeline", [&] { visitPipeline(v, e); });
  v.section("pipemare", [&] { visitPipeMare(v, e); });
  v.section("optimizer", [&] { visitOptimizer(v, e); });
  v.section("training", [&] { visitTraining(v, e); });
  v.section("execution", [&] { visitExecution(v, e); });
}

// Tracks the dotted path of the section being visited.
class PathTracker {
 public:
  // A visitor's section: its fields are named under `key`.
  template <class F>
  void section(const char* key, F&& body) {
    path_.push_back(key);
    body();
    path_.pop_back();
  }

 protected:
  std::vector<std::string> path_;
  std::string at(const std::string& key) const {
    std::string s;
    for (const auto& p : path_) s += p + ".";
    return s + key;
  }
};

// The rules between fields, after every field passed its own range (experiment_rules.cpp).
void checkCrossFieldRules(const Experiment& e, const std::string& source);

}  // namespace pm::config_detail
