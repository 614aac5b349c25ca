#include "core/config/experiment_fields.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/config/field_spec.h"
#include "core/config/field_table.h"

// experimentFields(): the field table's fourth visitor, which reads each field's spec and help
// instead of its value.

namespace pm {

using namespace config_detail;

namespace {

class FieldCollector : PathTracker {
 public:
  using PathTracker::section;
  std::vector<FieldInfo> fields;

  template <class T>
  void field(const char* key, const T&, const IntSpec& spec, const char* help) {
    FieldInfo& f = add(key, FieldType::Integer, spec.describe(), help);
    setRange(f, spec);
  }
  void field(const char* key, const double&, const RealSpec& spec, const char* help) {
    FieldInfo& f = add(key, FieldType::Real, spec.describe(), help);
    f.realMin = spec.lo;
    f.realMax = spec.hi;
    f.realMinOpen = spec.loOpen;
    f.realMaxOpen = spec.hiOpen;
  }
  void field(const char* key, const std::string&, const TextSpec& spec, const char* help) {
    FieldInfo& f = add(key, spec.choices.empty() ? FieldType::Text : FieldType::Choice, spec.describe(), help);
    f.choices = spec.choices;
  }
  template <class C>
  void choice(const char* key, const C&, const char* help) {
    const TextSpec spec = choiceSpec<C>();
    add(key, FieldType::Choice, spec.describe(), help).choices = spec.choices;
  }
  void flag(const char* key, const bool&, const char* help) { add(key, FieldType::Flag, "true or false", help); }
  void list(const char* key, const std::vector<std::string>&, const TextSpec& spec, const char* help) {
    add(key, FieldType::TextList, "an array of strings (" + spec.describe() + ")", help);
  }
  void intList(const char* key, const std::vector<int>&, const IntSpec& spec, const char* help) {
    setRange(add(key, FieldType::IntegerList, "an array of integers, each " + spec.describe(), help), spec);
  }
  void options(const char* key, const Json&, const std::string&, const char* help) {
    add(key, FieldType::Object, "an empty object", help);
  }

 private:
  FieldInfo& add(const char* key, FieldType type, std::string accepts, const char* help) {
    FieldInfo f;
    f.path = at(key);
    f.type = type;
    f.accepts = std::move(accepts);
    f.help = help;
    fields.push_back(std::move(f));
    return fields.back();
  }
  static void setRange(FieldInfo& f, const IntSpec& spec) {
    f.intMin = spec.lo;
    f.intMax = spec.hi;
  }
};

// Reads every field of a design that can be read on its own into an experiment of defaults
// (experimentAsFarAsReadable): the field table's fifth visitor.
class LenientReader : PathTracker {
 public:
  using PathTracker::section;
  explicit LenientReader(const Json& root) : root_(root) {}

  template <class T>
  void field(const char* key, T& ref, const IntSpec& spec, const char*) {
    int64_t x = 0;
    if (const Json* v = lookup(key); v && integerOf(*v, x) && spec.contains(x) && fits<T>(x)) ref = static_cast<T>(x);
  }
  void field(const char* key, double& ref, const RealSpec& spec, const char*) {
    if (const Json* v = lookup(key); v && v->is_number() && spec.contains(v->get<double>())) ref = v->get<double>();
  }
  void field(const char* key, std::string& ref, const TextSpec& spec, const char*) {
    if (const Json* v = lookup(key); v && v->is_string() && spec.check(v->get<std::string>()).empty())
      ref = v->get<std::string>();
  }
  template <class C>
  void choice(const char* key, C& ref, const char*) {
    const Json* v = lookup(key);
    if (!v || !v->is_string()) return;
    if (auto c = choiceFromName<C>(v->get<std::string>())) ref = *c;
  }
  void flag(const char* key, bool& ref, const char*) {
    if (const Json* v = lookup(key); v && v->is_boolean()) ref = v->get<bool>();
  }
  void list(const char* key, std::vector<std::string>& ref, const TextSpec& spec, const char*) {
    const Json* v = lookup(key);
    if (!v || !v->is_array()) return;
    std::vector<std::string> out;
    for (const Json& item : *v) {
      if (!item.is_string() || !spec.check(item.get<std::string>()).empty()) return;
      out.push_back(item.get<std::string>());
    }
    ref = std::move(out);
  }
  void intList(const char* key, std::vector<int>& ref, const IntSpec& spec, const char*) {
    const Json* v = lookup(key);
    if (!v || !v->is_array()) return;
    std::vector<int> out;
    for (const Json& item : *v) {
      int64_t x = 0;
      if (!integerOf(item, x) || !spec.contains(x) || !fits<int>(x)) return;
      out.push_back(static_cast<int>(x));
    }
    ref = std::move(out);
  }
  void options(const char*, Json&, const std::string&, const char*) {}  // reserved: always {}

 private:
  const Json& root_;

  const Json* lookup(const char* key) const {
    const Json* o = &root_;
    for (const auto& p : path_) {
      if (!o->is_object()) return nullptr;
      auto it = o->find(p);
      if (it == o->end()) return nullptr;
      o = &*it;
    }
    if (!o->is_object()) return nullptr;
    auto it = o->find(key);
    return it == o->end() ? nullptr : &*it;
  }
  // An integer, or a number written with a zero fraction (4.0), as the parser takes them.
  static bool integerOf(const Json& v, int64_t& out) {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      out = static_cast<int64_t>(v.get<uint64_t>());
      return true;
    }
    if (v.is_number_integer()) {
      out = v.get<int64_t>();
      return true;
    }
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || d < -9.2e18 || d > 9.2e18) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  template <class T>
  static bool fits(int64_t x) {
    if constexpr (std::is_unsigned_v<T>)
      return x >= 0;
    else
      return x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max();
  }
};

// "only with <what>, found <found>": the reason a field does not apply.
std::string onlyWith(const std::string& what, const std::string& found) { return "only with " + what + ", found " + found; }

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

std::string fieldSection(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

// The rules follow the meaning column of docs/experiment-format.md: a field whose meaning names
// the datasets, schedules, optimizers or modes it serves ("adam/adamw: first-moment decay") does
// not apply to the others.
std::string whyFieldDoesNotApply(const Experiment& e, const std::string& path) {
  const auto& d = e.data;
  const auto& p = e.pipeline;
  const auto& o = e.optimizer;
  const std::string dataset = "data.dataset=" + choiceName(d.dataset);
  const std::string schedule = "pipeline.schedule=" + choiceName(p.schedule);
  if (path == "model.path" && !e.model.fromFile()) return onlyWith("model.name=torchscript", "model.name=" + e.model.name);
  if (path == "model.options") return "reserved: no model takes options yet";
  // The other datasets decide the loss themselves (a model.task that contradicts them is an error).
  if (path == "model.task" && d.dataset != DatasetKind::Tensors)
    return onlyWith("data.dataset=tensors (the other datasets decide the loss)", dataset);
  if (path == "data.path" && d.dataset == DatasetKind::Synthetic)
    return onlyWith("data.dataset fashion-mnist, text or tensors (synthetic samples are generated)", dataset);
  if (path == "data.eval_path" && d.dataset != DatasetKind::Tensors) return onlyWith("data.dataset=tensors", dataset);
  if (path == "data.eval_split" && d.dataset != DatasetKind::FashionMnist) return onlyWith("data.dataset=fashion-mnist", dataset);
  if (path == "data.eval_fraction") {
    if (d.dataset == DatasetKind::Tensors && !d.eval_path.empty())
      return "only without data.eval_path (the held-out samples are data.eval_path's)";
    if (d.dataset != DatasetKind::Text && d.dataset != DatasetKind::Tensors) return onlyWith("data.dataset text or tensors", dataset);
  }
  if (path == "data.context" && d.dataset != DatasetKind::Text) return onlyWith("data.dataset=text", dataset);
  if ((path == "data.synthetic_samples" || path == "data.synthetic_task") && d.dataset != DatasetKind::Synthetic)
    return onlyWith("data.dataset=synthetic", dataset);
  if (path == "pipeline.partition.method" && p.stages < 2) return onlyWith("pipeline.stages > 1 (one stage holds every unit)", "pipeline.stages=1");
  if (path == "pipeline.partition.boundaries" && p.partition.method != PartitionMethod::Explicit)
    return onlyWith("pipeline.partition.method=explicit", "pipeline.partition.method=" + choiceName(p.partition.method));
  const ScheduleDecl& sd = scheduleDecl(p.schedule);
  // "pipeline.schedule=pipemare", or "pipeline.schedule pipedream or pipemare": the schedules with the trait.
  auto schedulesWith = [](bool (*has)(const ScheduleDecl&)) {
    int n = 0;
    for (const auto& d : scheduleDecls()) n += has(d) ? 1 : 0;
    return std::string("pipeline.schedule") + (n == 1 ? "=" : " ") + scheduleNamesWhere(has);
  };
  if (path == "pipeline.update_interval" && !sd.takesUpdateInterval)
    return onlyWith(schedulesWith([](const ScheduleDecl& d) { return d.takesUpdateInterval; }), schedule);
  if (path == "pipeline.chunks" && !takesChunks(p.schedule))
    return onlyWith(schedulesWith([](const ScheduleDecl& d) { return d.chunks == 0; }), schedule);
  if (path == "pipeline.timing" && !sd.takesTiming)
    return onlyWith(schedulesWith([](const ScheduleDecl& d) { return d.takesTiming; }), schedule);
  if (startsWith(path, "pipemare.")) {
    if (!sd.takesPipeMare) return onlyWith(schedulesWith([](const ScheduleDecl& d) { return d.takesPipeMare; }), schedule);
    if ((path == "pipemare.anneal_steps" || path == "pipemare.anneal_epochs") && !e.pipemare.t1)
      return onlyWith("pipemare.t1 (T1 anneals)", "pipemare.t1=false");
    if (path == "pipemare.decay" && !e.pipemare.t2) return onlyWith("pipemare.t2 (T2's decay)", "pipemare.t2=false");
    if (path == "pipemare.warmup_schedule" && !(e.pipemare.warmup_epochs > 0))
      return onlyWith("pipemare.warmup_epochs > 0", "pipemare.warmup_epochs=" + number(e.pipemare.warmup_epochs));
    if (path == "pipemare.momentum_mode" && (o.name != OptimizerType::Sgd || !(o.momentum > 0)))
      return o.name != OptimizerType::Sgd ? onlyWith("optimizer.name=sgd with momentum", "optimizer.name=" + choiceName(o.name))
                                          : onlyWith("optimizer.momentum > 0", "optimizer.momentum=" + number(o.momentum));
  }
  const std::string optimizer = "optimizer.name=" + choiceName(o.name);
  if ((path == "optimizer.momentum" || path == "optimizer.nesterov") && o.name != OptimizerType::Sgd)
    return onlyWith("optimizer.name=sgd", optimizer);
  if (path == "optimizer.nesterov" && !(o.momentum > 0))
    return onlyWith("optimizer.momentum > 0", "optimizer.momentum=" + number(o.momentum));
  if ((path == "optimizer.beta1" || path == "optimizer.beta2" || path == "optimizer.eps") && o.name == OptimizerType::Sgd)
    return onlyWith("optimizer.name adam or adamw", optimizer);
  const auto lrSchedule = o.schedule.name;
  const std::string lrScheduleFound = "optimizer.schedule.name=" + choiceName(lrSchedule);
  if (path == "optimizer.schedule.warmup_steps" && lrSchedule != LrScheduleType::LinearWarmup &&
      lrSchedule != LrScheduleType::Cosine && lrSchedule != LrScheduleType::InverseSqrt)
    return onlyWith("optimizer.schedule.name linear-warmup, cosine or inverse-sqrt", lrScheduleFound);
  if ((path == "optimizer.schedule.step_size" || path == "optimizer.schedule.gamma") && lrSchedule != LrScheduleType::Step)
    return onlyWith("optimizer.schedule.name=step", lrScheduleFound);
  if (path == "optimizer.schedule.min_lr" && lrSchedule != LrScheduleType::Cosine)
    return onlyWith("optimizer.schedule.name=cosine", lrScheduleFound);
  if (path == "training.epochs" && e.training.steps > 0)
    return onlyWith("training.steps=0 (steps > 0 wins over epochs)", "training.steps=" + std::to_string(e.training.steps));
  if (path == "training.divergence_guard.max_loss" && !e.training.divergence_guard.enabled)
    return onlyWith("training.divergence_guard.enabled=true", "false");
  if (path == "execution.backend" && e.execution.mode != ExecutionMode::Real)
    return onlyWith("execution.mode=real (single mode uses in-process channels)", "execution.mode=single");
  return "";
}

Experiment experimentAsFarAsReadable(const Json& j) {
  Experiment e;
  LenientReader r(j);
  visitExperiment(r, e);
  return e;
}

std::vector<FieldInfo> experimentFields(const Experiment& e) {
  FieldCollector c;
  visitExperiment(c, e);
  return std::move(c.fields);
}

const FieldInfo* findField(const std::vector<FieldInfo>& fields, const std::string& path) {
  for (const auto& f : fields)
    if (f.path == path) return &f;
  return nullptr;
}

}  // namespace pm
