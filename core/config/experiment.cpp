#include "core/config/experiment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/config/field_spec.h"
#include "core/config/model_catalog.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

// One list of fields (visitExperiment) drives parsing, range validation and serialisation, so the
// three cannot drift apart. Each field carries its spec (type, range, allowed values); a spec may
// depend on fields visited before it (pipeline.stages on model.name, pipeline.microbatches on
// data.batch_size), which is why sections are visited in a fixed order. Cross-field rules that are
// not a range of a single field live in checkCrossFieldRules().

namespace pm {

using namespace config_detail;

namespace {

constexpr int kCharLmMaxContext = 128;  // the charlm's positional table (model_catalog: ctx 128)

const std::vector<std::string> kDatasets{"fashion-mnist", "text", "synthetic"};
const std::vector<std::string> kEvalSplits{"test", "train"};
const std::vector<std::string> kSyntheticTasks{"classification", "regression"};
const std::vector<std::string> kPartitionMethods{"parameters", "time", "explicit"};
const std::vector<std::string> kWarmupSchedules{"gpipe", "1f1b"};
const std::vector<std::string> kMomentumModes{"same", "delay-scaled"};
const std::vector<std::string> kTimings{"1f1b", "paper"};
const std::vector<std::string> kOptimizers{"sgd", "adam", "adamw"};
const std::vector<std::string> kLrSchedules{"constant", "step", "cosine", "linear-warmup", "inverse-sqrt"};
const std::vector<std::string> kModes{"single", "real"};
const std::vector<std::string> kBackends{"gloo", "nccl", "local"};

int modelUnits(const std::string& model) {
  const ModelInfo* m = findModel(model);
  return m ? m->units : 0;
}

// --- The field list -------------------------------------------------------------------------

// V provides section(key, body), field(key, ref, spec), flag(key, ref), list(key, ref, spec),
// intList(key, ref, spec) and options(key, ref, modelName). E is Experiment or const Experiment.
template <class V, class E>
void visitExperiment(V& v, E& e) {
  v.field("name", e.name, TextSpec::label(200));
  v.list("tags", e.tags, TextSpec::label(64));
  v.field("notes", e.notes, TextSpec::any());
  v.section("model", [&] {
    v.field("name", e.model.name, TextSpec::oneOf(modelNames()));
    v.options("options", e.model.options, e.model.name);
  });
  v.section("data", [&] {
    auto& d = e.data;
    v.field("dataset", d.dataset, TextSpec::oneOf(kDatasets));
    v.field("path", d.path, TextSpec::any());
    v.field("batch_size", d.batch_size, IntSpec{1, 65536, ""});
    v.field("eval_split", d.eval_split, TextSpec::oneOf(kEvalSplits));
    v.field("eval_fraction", d.eval_fraction, RealSpec{0, 0.5, true, false, ""});
    v.field("train_limit", d.train_limit, IntSpec{0, kNoMax, "(0 = all)"});
    v.field("eval_limit", d.eval_limit, IntSpec{0, kNoMax, "(0 = all)"});
    const bool charlm = e.model.name == "charlm";
    v.field("context", d.context,
            IntSpec{8, charlm ? kCharLmMaxContext : 4096,
                    charlm ? "(model charlm reads at most " + std::to_string(kCharLmMaxContext) + " bytes)" : ""});
    v.field("synthetic_samples", d.synthetic_samples, IntSpec{1, 1000000, ""});
    v.field("synthetic_task", d.synthetic_task, TextSpec::oneOf(kSyntheticTasks));
    v.flag("shuffle", d.shuffle);
  });
  v.section("pipeline", [&] {
    auto& p = e.pipeline;
    const int units = modelUnits(e.model.name);
    v.field("stages", p.stages,
            IntSpec{1, units > 0 ? units : kNoMax,
                    units > 0 ? "(model " + e.model.name + " has " + std::to_string(units) + " partitionable units)"
                              : ""});
    const int batch = std::max(1, e.data.batch_size);
    v.field("microbatches", p.microbatches,
            IntSpec{1, batch, "(at most data.batch_size=" + std::to_string(e.data.batch_size) + ")"});
    v.section("partition", [&] {
      v.field("method", p.partition.method, TextSpec::oneOf(kPartitionMethods));
      v.intList("boundaries", p.partition.boundaries,
                IntSpec{1, units > 1 ? units - 1 : kNoMax,
                        "(the first unit of a stage; model " + e.model.name + " has " + std::to_string(units) +
                            " units)"});
    });
    v.field("schedule", p.schedule, TextSpec::oneOf(scheduleNames()));
    v.flag("recompute", p.recompute);
    v.field("update_interval", p.update_interval, IntSpec{1, 65536, ""});
    v.field("timing", p.timing, TextSpec::oneOf(kTimings));
  });
  v.section("pipemare", [&] {
    auto& m = e.pipemare;
    v.flag("t1", m.t1);
    v.field("anneal_steps", m.anneal_steps, IntSpec{0, kMaxSteps, "(0 = anneal_epochs, or one epoch of updates)"});
    v.field("anneal_epochs", m.anneal_epochs, RealSpec{0, 1000, false, false, "(0 = anneal_steps)"});
    v.flag("t2", m.t2);
    v.field("decay", m.decay, RealSpec{0, 1, true, true, ""});
    v.field("warmup_epochs", m.warmup_epochs, RealSpec{0, 1000, false, false, ""});
    v.field("warmup_schedule", m.warmup_schedule, TextSpec::oneOf(kWarmupSchedules));
    v.field("momentum_mode", m.momentum_mode, TextSpec::oneOf(kMomentumModes));
  });
  v.section("optimizer", [&] {
    auto& o = e.optimizer;
    v.field("name", o.name, TextSpec::oneOf(kOptimizers));
    v.field("lr", o.lr, RealSpec{0, 10, true, false, ""});
    v.field("momentum", o.momentum, RealSpec{0, 1, false, true, ""});
    v.flag("nesterov", o.nesterov);
    v.field("weight_decay", o.weight_decay, RealSpec{0, 1, false, false, ""});
    v.field("beta1", o.beta1, RealSpec{0, 1, false, true, ""});
    v.field("beta2", o.beta2, RealSpec{0, 1, false, true, ""});
    v.field("eps", o.eps, RealSpec{0, 1, true, false, ""});
    v.section("schedule", [&] {
      auto& s = o.schedule;
      v.field("name", s.name, TextSpec::oneOf(kLrSchedules));
      v.field("warmup_steps", s.warmup_steps, IntSpec{0, kMaxSteps, ""});
      v.field("step_size", s.step_size, IntSpec{1, kMaxSteps, ""});
      v.field("gamma", s.gamma, RealSpec{0, 1, true, false, ""});
      v.field("min_lr", s.min_lr, RealSpec{0, std::isfinite(o.lr) ? o.lr : 0, false, false, "(at most optimizer.lr)"});
    });
  });
  v.section("training", [&] {
    auto& t = e.training;
    v.field("epochs", t.epochs, RealSpec{0, 1000, false, false, ""});
    v.field("steps", t.steps, IntSpec{0, kMaxSteps, "(0 = derived from epochs)"});
    v.field("eval_interval", t.eval_interval, IntSpec{0, kMaxSteps, "(0 = at the end of each epoch)"});
    v.field("log_interval", t.log_interval, IntSpec{1, kMaxSteps, ""});
    v.field("trace_steps", t.trace_steps, IntSpec{-1, kMaxSteps, "(-1 = every step, 0 = none)"});
    v.field("checkpoint_every", t.checkpoint_every, IntSpec{0, kMaxSteps, "(0 = only when a single-mode run is stopped)"});
    v.field("seed", t.seed, IntSpec{0, kNoMax, ""});
    v.section("divergence_guard", [&] {
      v.flag("enabled", t.divergence_guard.enabled);
      v.field("max_loss", t.divergence_guard.max_loss, RealSpec{0, kInf, true, false, ""});
    });
  });
  v.section("execution", [&] {
    auto& x = e.execution;
    v.field("mode", x.mode, TextSpec::oneOf(kModes));
    v.field("backend", x.backend, TextSpec::oneOf(kBackends));
    v.field("threads_per_stage", x.threads_per_stage, IntSpec{1, 256, ""});
    v.field("timeout_s", x.timeout_s, RealSpec{1, 3600, false, false, ""});
    v.list("devices", x.devices, TextSpec::deviceName());
  });
}

// Tracks the dotted path of the section being visited.
class PathTracker {
 protected:
  std::vector<std::string> path_;
  std::string at(const std::string& key) const {
    std::string s;
    for (const auto& p : path_) s += p + ".";
    return s + key;
  }
};

template <class T>
bool fits(int64_t x) {
  if constexpr (std::is_unsigned_v<T>)
    return x >= 0 && static_cast<uint64_t>(x) <= std::numeric_limits<T>::max();
  else
    return x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max();
}

template <class T>
bool toInt64(T v, int64_t& out) {
  if constexpr (std::is_unsigned_v<T>) {
    if (v > static_cast<std::make_unsigned_t<int64_t>>(kNoMax)) return false;
  }
  out = static_cast<int64_t>(v);
  return true;
}

// JSON -> Experiment: type and range of every field, unknown keys.
class Parser : PathTracker {
 public:
  Parser(const Json& root, std::string source) : source_(std::move(source)) {
    if (!root.is_object())
      throw FieldError(source_, "", "expected a JSON object at the top level, found " + shown(root));
    objects_.push_back(&root);
    seen_.emplace_back();
  }
  void finish() { checkUnknownKeys(""); }

  template <class F>
  void section(const char* key, F&& body) {
    static const Json kEmpty = Json::object();
    const Json* v = lookup(key);
    if (v && !v->is_object()) fail(at(key), "expected an object (a section), found " + shown(*v));
    const std::string place = at(key);
    objects_.push_back(v ? v : &kEmpty);
    seen_.emplace_back();
    path_.push_back(key);
    body();
    checkUnknownKeys(place);
    path_.pop_back();
    seen_.pop_back();
    objects_.pop_back();
  }

  template <class T>
  void field(const char* key, T& ref, const IntSpec& spec) {
    const Json* v = lookup(key);
    if (!v) return;
    int64_t x = 0;
    if (!integerOf(*v, x) || !spec.contains(x) || !fits<T>(x))
      fail(at(key), "expected " + spec.describe() + ", found " + shown(*v));
    ref = static_cast<T>(x);
  }
  void field(const char* key, double& ref, const RealSpec& spec) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_number() || !spec.contains(v->get<double>()))
      fail(at(key), "expected " + spec.describe() + ", found " + shown(*v));
    ref = v->get<double>();
  }
  void field(const char* key, std::string& ref, const TextSpec& spec) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_string()) fail(at(key), "expected " + spec.describe() + ", found " + shown(*v));
    std::string problem = spec.check(v->get<std::string>());
    if (!problem.empty()) fail(at(key), problem);
    ref = v->get<std::string>();
  }
  void flag(const char* key, bool& ref) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_boolean()) fail(at(key), "expected true or false, found " + shown(*v));
    ref = v->get<bool>();
  }
  void list(const char* key, std::vector<std::string>& ref, const TextSpec& spec) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_array()) fail(at(key), "expected an array of strings (" + spec.describe() + "), found " + shown(*v));
    std::vector<std::string> out;
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& item = (*v)[i];
      const std::string place = at(key) + "[" + std::to_string(i) + "]";
      if (!item.is_string()) fail(place, "expected " + spec.describe() + ", found " + shown(item));
      std::string problem = spec.check(item.get<std::string>());
      if (!problem.empty()) fail(place, problem);
      out.push_back(item.get<std::string>());
    }
    ref = std::move(out);
  }
  void intList(const char* key, std::vector<int>& ref, const IntSpec& spec) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_array()) fail(at(key), "expected an array of integers, found " + shown(*v));
    std::vector<int> out;
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t x = 0;
      if (!integerOf((*v)[i], x) || !spec.contains(x) || !fits<int>(x))
        fail(at(key) + "[" + std::to_string(i) + "]", "expected " + spec.describe() + ", found " + shown((*v)[i]));
      out.push_back(static_cast<int>(x));
    }
    ref = std::move(out);
  }
  void options(const char* key, Json& ref, const std::string& model) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_object()) fail(at(key), "expected an object, found " + shown(*v));
    if (!v->empty())
      fail(at(key) + "." + v->begin().key(), "unknown key " + inQuotes(v->begin().key()) + "; model " + model +
                                                 " takes no options");
    ref = *v;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw FieldError(source_, field, problem);
  }

  const Json* lookup(const char* key) {
    seen_.back().push_back(key);
    const Json& obj = *objects_.back();
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  static bool integerOf(const Json& v, int64_t& out) {
    if (v.is_number_unsigned()) return toInt64(v.get<uint64_t>(), out);
    if (v.is_number_integer()) {
      out = v.get<int64_t>();
      return true;
    }
    if (v.is_number_float()) {
      double d = v.get<double>();
      // Whole numbers written as 4.0 are accepted; 4.5 is not.
      if (!std::isfinite(d) || std::floor(d) != d || d < -9.2e18 || d > 9.2e18) return false;
      out = static_cast<int64_t>(d);
      return true;
    }
    return false;
  }

  void checkUnknownKeys(const std::string& place) const {
    const auto& known = seen_.back();
    for (auto it = objects_.back()->begin(); it != objects_.back()->end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
      std::string problem = "unknown key " + inQuotes(it.key());
      std::string guess = didYouMean(it.key(), known);
      if (!guess.empty())
        problem += "; did you mean " + inQuotes(guess) + "?";
      else
        problem += " (" + (place.empty() ? std::string("the top level") : place) + " has: " + join(known, ", ") + ")";
      fail(place.empty() ? it.key() : place + "." + it.key(), problem);
    }
  }

  std::string source_;
  std::vector<const Json*> objects_;
  std::vector<std::vector<std::string>> seen_;  // keys the format knows, per open section
};

// Experiment -> range errors (for experiments built in code; parsed ones already passed these).
class RangeChecker : PathTracker {
 public:
  explicit RangeChecker(std::string source) : source_(std::move(source)) {}

  template <class F>
  void section(const char* key, F&& body) {
    path_.push_back(key);
    body();
    path_.pop_back();
  }
  template <class T>
  void field(const char* key, const T& ref, const IntSpec& spec) {
    int64_t x = 0;
    if (!toInt64(ref, x) || !spec.contains(x)) fail(at(key), "expected " + spec.describe() + ", found " + shown(Json(ref)));
  }
  void field(const char* key, const double& ref, const RealSpec& spec) {
    if (!spec.contains(ref))
      fail(at(key), "expected " + spec.describe() + ", found " + (std::isfinite(ref) ? shown(Json(ref)) : number(ref)));
  }
  void field(const char* key, const std::string& ref, const TextSpec& spec) {
    std::string problem = spec.check(ref);
    if (!problem.empty()) fail(at(key), problem);
  }
  void flag(const char*, const bool&) {}
  void list(const char* key, const std::vector<std::string>& ref, const TextSpec& spec) {
    for (size_t i = 0; i < ref.size(); ++i) {
      std::string problem = spec.check(ref[i]);
      if (!problem.empty()) fail(at(key) + "[" + std::to_string(i) + "]", problem);
    }
  }
  void intList(const char* key, const std::vector<int>& ref, const IntSpec& spec) {
    for (size_t i = 0; i < ref.size(); ++i)
      if (!spec.contains(ref[i]))
        fail(at(key) + "[" + std::to_string(i) + "]", "expected " + spec.describe() + ", found " + std::to_string(ref[i]));
  }
  void options(const char* key, const Json& ref, const std::string& model) {
    if (!ref.is_object()) fail(at(key), "expected an object, found " + shown(ref));
    if (!ref.empty())
      fail(at(key) + "." + ref.begin().key(), "unknown key " + inQuotes(ref.begin().key()) + "; model " + model +
                                                  " takes no options");
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw FieldError(source_, field, problem);
  }
  std::string source_;
};

// Experiment -> JSON, every field present.
class Writer : PathTracker {
 public:
  Json result = Json::object();

  template <class F>
  void section(const char* key, F&& body) {
    Json* parent = current_;
    current_ = &(*parent)[key];
    *current_ = Json::object();
    body();
    current_ = parent;
  }
  template <class T, class Spec>
  void field(const char* key, const T& ref, const Spec&) {
    (*current_)[key] = ref;
  }
  void flag(const char* key, const bool& ref) { (*current_)[key] = ref; }
  void list(const char* key, const std::vector<std::string>& ref, const TextSpec&) { (*current_)[key] = ref; }
  void intList(const char* key, const std::vector<int>& ref, const IntSpec&) { (*current_)[key] = ref; }
  void options(const char* key, const Json& ref, const std::string&) { (*current_)[key] = ref; }

 private:
  Json* current_ = &result;
};

// --- Cross-field rules ------------------------------------------------------------------------

void checkCrossFieldRules(const Experiment& e, const std::string& source) {
  auto fail = [&](const std::string& field, const std::string& problem) { throw FieldError(source, field, problem); };
  const auto& p = e.pipeline;
  const int units = modelUnits(e.model.name);

  // Model and dataset.
  const ModelInfo* model = findModel(e.model.name);
  if (model) {
    std::vector<std::string> ok;
    if (model->input == "tokens")
      ok = {"text"};
    else if (model->input == "image224")
      ok = {"synthetic"};
    else
      ok = {"fashion-mnist", "synthetic"};
    if (std::find(ok.begin(), ok.end(), e.data.dataset) == ok.end())
      fail("data.dataset", "model " + e.model.name + " (model.name) needs data.dataset " + join(ok, " or ") +
                               ", found data.dataset=" + e.data.dataset);
  }

  // Partition.
  const auto& b = p.partition.boundaries;
  if (p.partition.method == "explicit") {
    if (static_cast<int>(b.size()) != p.stages - 1)
      fail("pipeline.partition.boundaries",
           "the explicit partition needs pipeline.stages-1 = " + std::to_string(p.stages - 1) +
               " boundaries (the first unit of stages 2.." + std::to_string(p.stages) + "), found " +
               std::to_string(b.size()) + ": " + shown(Json(b)));
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i] < 1 || b[i] > units - 1)
        fail("pipeline.partition.boundaries[" + std::to_string(i) + "]",
             "expected an integer 1.." + std::to_string(units - 1) + " (model " + e.model.name + " has " +
                 std::to_string(units) + " units), found " + std::to_string(b[i]));
      if (i > 0 && b[i] <= b[i - 1])
        fail("pipeline.partition.boundaries[" + std::to_string(i) + "]",
             "boundaries must be strictly increasing, found " + std::to_string(b[i]) + " after " +
                 std::to_string(b[i - 1]));
    }
  } else if (!b.empty()) {
    fail("pipeline.partition.boundaries", "boundaries apply only to pipeline.partition.method=explicit, found "
                                          "pipeline.partition.method=" + p.partition.method);
  }

  // Schedule-specific settings.
  if (p.schedule == "pipedream-2bw") {
    if (p.update_interval < p.stages)
      fail("pipeline.update_interval",
           "pipedream-2bw accumulates gradients over m >= P microbatches: expected an integer >= " +
               std::to_string(p.stages) + " (pipeline.stages), found " + std::to_string(p.update_interval) +
               "; set pipeline.update_interval to at least " + std::to_string(p.stages));
  } else if (p.schedule != "pipedream" && p.update_interval != 1) {
    fail("pipeline.update_interval", "update_interval applies only to the pipedream and pipedream-2bw schedules "
                                     "(expected 1), found pipeline.schedule=" + p.schedule);
  }
  if (p.timing == "paper" && p.schedule != "pipedream" && p.schedule != "pipemare")
    fail("pipeline.timing", "the paper's timing (forwards 2(P-1-s) ahead) applies only to the pipedream and pipemare "
                            "schedules, found pipeline.schedule=" + p.schedule);
  if (e.pipemare.anneal_steps > 0 && e.pipemare.anneal_epochs > 0)
    fail("pipemare.anneal_epochs", "T1's anneal length K is set twice: give pipemare.anneal_steps or "
                                   "pipemare.anneal_epochs, not both; found anneal_steps=" +
                                       std::to_string(e.pipemare.anneal_steps) +
                                       ", anneal_epochs=" + number(e.pipemare.anneal_epochs));
  if (p.schedule != "pipemare") {
    const std::string found = ", found pipeline.schedule=" + p.schedule;
    if (e.pipemare.t1) fail("pipemare.t1", "T1 (pipemare.t1) applies only to the pipemare schedule" + found);
    if (e.pipemare.t2) fail("pipemare.t2", "T2 (pipemare.t2) applies only to the pipemare schedule" + found);
    if (e.pipemare.warmup_epochs > 0)
      fail("pipemare.warmup_epochs", "warm-up (pipemare.warmup_epochs) applies only to the pipemare schedule" + found);
  }

  // Optimizer.
  const auto& o = e.optimizer;
  if (o.name != "sgd" && o.momentum > 0)
    fail("optimizer.momentum", "momentum applies only to sgd (adam and adamw use beta1), found optimizer.name=" + o.name);
  if (o.nesterov && o.name != "sgd")
    fail("optimizer.nesterov", "nesterov applies only to sgd, found optimizer.name=" + o.name);
  if (o.nesterov && o.momentum <= 0)
    fail("optimizer.nesterov", "nesterov requires optimizer.momentum > 0, found optimizer.momentum=" + number(o.momentum));
  if (o.schedule.name == "linear-warmup" && o.schedule.warmup_steps < 1)
    fail("optimizer.schedule.warmup_steps", "the linear-warmup schedule needs warmup_steps >= 1, found " +
                                                std::to_string(o.schedule.warmup_steps));

  // Training length. The fields are in range here (microbatches and stages at least 1, their
  // product at most 65536 x 2^31): the division needs no overflow check.
  if (e.training.steps == 0 && !(e.training.epochs > 0))
    fail("training.epochs", "expected a number in (0, 1000] when training.steps is 0, found " + number(e.training.epochs));
  const int64_t perStep = static_cast<int64_t>(p.microbatches) * p.stages;
  if (e.training.steps > kMaxRunMicrobatches / perStep)
    fail("training.steps", "a run has at most " + std::to_string(kMaxRunMicrobatches) +
                               " microbatches over all its stages (training.steps x pipeline.microbatches x pipeline.stages: "
                               "the engine lays out each stage's schedule for the whole run before the first step), found " +
                               std::to_string(e.training.steps) + " x " + std::to_string(p.microbatches) + " x " +
                               std::to_string(p.stages));

  // Execution.
  const auto& x = e.execution;
  if (x.mode == "real" && x.backend == "local")
    fail("execution.backend", "backend local (in-process channels) needs execution.mode=single, found "
                              "execution.mode=real; use gloo or nccl");
  if (x.devices.size() != 1 && static_cast<int>(x.devices.size()) != p.stages)
    fail("execution.devices", "expected 1 entry or one per stage (pipeline.stages=" + std::to_string(p.stages) +
                                  "), found " + std::to_string(x.devices.size()) + " entries");
  if (x.backend == "nccl")
    for (size_t i = 0; i < x.devices.size(); ++i)
      if (x.devices[i].compare(0, 5, "cuda:") != 0)
        fail("execution.devices[" + std::to_string(i) + "]",
             "backend nccl (execution.backend) needs cuda devices, found " + inQuotes(x.devices[i]));
}

}  // namespace

// --- Public interface ---------------------------------------------------------------------------

Experiment experimentFromJson(const Json& j, const std::string& source) {
  Experiment e;
  Parser parser(j, source);
  visitExperiment(parser, e);
  parser.finish();
  validateExperiment(e, source);
  return e;
}

void validateExperiment(const Experiment& e, const std::string& source) {
  RangeChecker checker(source);
  visitExperiment(checker, e);
  checkCrossFieldRules(e, source);
}

Json experimentToJson(const Experiment& e) {
  Writer w;
  visitExperiment(w, e);
  return w.result;
}

bool isAsynchronousSchedule(const std::string& schedule) {
  return schedule == "pipedream" || schedule == "pipedream-2bw" || schedule == "pipemare";
}

const std::vector<std::string>& scheduleNames() {
  static const std::vector<std::string> kNames{"gpipe", "1f1b", "pipedream", "pipedream-2bw", "pipemare"};
  return kNames;
}

const std::vector<std::string>& modelNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& m : modelCatalog()) names.push_back(m.name);
    return names;
  }();
  return kNames;
}

}  // namespace pm
