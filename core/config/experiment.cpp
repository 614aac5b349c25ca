#include "core/config/experiment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/config/field_spec.h"
#include "core/config/field_table.h"
#include "core/config/model_catalog.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

// Parsing, range validation and serialisation of an experiment: three visitors of the field table
// (field_table.h). The cross-field rules are in experiment_rules.cpp.

namespace pm {

using namespace config_detail;

namespace {

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
  void field(const char* key, T& ref, const IntSpec& spec, const char*) {
    const Json* v = lookup(key);
    if (!v) return;
    int64_t x = 0;
    if (!integerOf(*v, x) || !spec.contains(x) || !fits<T>(x))
      fail(at(key), "expected " + spec.describe() + ", found " + shown(*v));
    ref = static_cast<T>(x);
  }
  void field(const char* key, double& ref, const RealSpec& spec, const char*) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_number() || !spec.contains(v->get<double>()))
      fail(at(key), "expected " + spec.describe() + ", found " + shown(*v));
    ref = v->get<double>();
  }
  void field(const char* key, std::string& ref, const TextSpec& spec, const char*) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_string()) fail(at(key), "expected " + spec.describe() + ", found " + shown(*v));
    std::string problem = spec.check(v->get<std::string>());
    if (!problem.empty()) fail(at(key), problem);
    ref = v->get<std::string>();
  }
  // A named value: checked as a string against the enum's names, then stored as the enum.
  template <class C>
  void choice(const char* key, C& ref, const char* help) {
    std::string name = choiceName(ref);
    field(key, name, choiceSpec<C>(), help);
    ref = *choiceFromName<C>(name);
  }
  void flag(const char* key, bool& ref, const char*) {
    const Json* v = lookup(key);
    if (!v) return;
    if (!v->is_boolean()) fail(at(key), "expected true or false, found " + shown(*v));
    ref = v->get<bool>();
  }
  void list(const char* key, std::vector<std::string>& ref, const TextSpec& spec, const char*) {
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
  void intList(const char* key, std::vector<int>& ref, const IntSpec& spec, const char*) {
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
  void options(const char* key, Json& ref, const std::string& model, const char*) {
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
  using PathTracker::section;
  explicit RangeChecker(std::string source) : source_(std::move(source)) {}

  template <class T>
  void field(const char* key, const T& ref, const IntSpec& spec, const char*) {
    int64_t x = 0;
    if (!toInt64(ref, x) || !spec.contains(x)) fail(at(key), "expected " + spec.describe() + ", found " + shown(Json(ref)));
  }
  void field(const char* key, const double& ref, const RealSpec& spec, const char*) {
    if (!spec.contains(ref))
      fail(at(key), "expected " + spec.describe() + ", found " + (std::isfinite(ref) ? shown(Json(ref)) : number(ref)));
  }
  void field(const char* key, const std::string& ref, const TextSpec& spec, const char*) {
    std::string problem = spec.check(ref);
    if (!problem.empty()) fail(at(key), problem);
  }
  // Only a cast makes a value outside the enum's table.
  template <class C>
  void choice(const char* key, const C& ref, const char*) {
    if (!isKnownChoice(ref))
      fail(at(key), "expected " + choiceSpec<C>().describe() + ", found " + std::to_string(static_cast<int>(ref)));
  }
  void flag(const char*, const bool&, const char*) {}
  void list(const char* key, const std::vector<std::string>& ref, const TextSpec& spec, const char*) {
    for (size_t i = 0; i < ref.size(); ++i) {
      std::string problem = spec.check(ref[i]);
      if (!problem.empty()) fail(at(key) + "[" + std::to_string(i) + "]", problem);
    }
  }
  void intList(const char* key, const std::vector<int>& ref, const IntSpec& spec, const char*) {
    for (size_t i = 0; i < ref.size(); ++i)
      if (!spec.contains(ref[i]))
        fail(at(key) + "[" + std::to_string(i) + "]", "expected " + spec.describe() + ", found " + std::to_string(ref[i]));
  }
  void options(const char* key, const Json& ref, const std::string& model, const char*) {
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
  void field(const char* key, const T& ref, const Spec&, const char*) {
    (*current_)[key] = ref;
  }
  template <class C>
  void choice(const char* key, const C& ref, const char*) {
    (*current_)[key] = choiceName(ref);
  }
  void flag(const char* key, const bool& ref, const char*) { (*current_)[key] = ref; }
  void list(const char* key, const std::vector<std::string>& ref, const TextSpec&, const char*) { (*current_)[key] = ref; }
  void intList(const char* key, const std::vector<int>& ref, const IntSpec&, const char*) { (*current_)[key] = ref; }
  void options(const char* key, const Json& ref, const std::string&, const char*) { (*current_)[key] = ref; }

 private:
  Json* current_ = &result;
};

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

const std::vector<std::string>& modelNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& m : modelCatalog()) names.push_back(m.name);
    names.push_back(kTorchScriptModel);
    return names;
  }();
  return kNames;
}

int pipelineChunks(const Experiment& e) { return scheduleChunks(e.pipeline.schedule, e.pipeline.chunks); }

int modelStages(const Experiment& e) { return e.pipeline.stages * pipelineChunks(e); }

}  // namespace pm
