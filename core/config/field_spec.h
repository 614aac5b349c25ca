#pragma once
// Internal to core/config: the pieces shared by the field table and its visitors (experiment.cpp,
// experiment_fields.cpp), the cross-field rules (experiment_rules.cpp) and experiment_io.cpp
// (files, --set overrides). Not part of the public interface.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/config/experiment.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

namespace pm::config_detail {

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
// The most microbatches one run may have, counted over its stages (training.steps x
// pipeline.microbatches x pipeline.stages): the engine lays out each stage's whole schedule, every
// microbatch's actions, before the first step (a few hundred bytes per microbatch and stage, a few
// GB at this bound), so a longer run would run out of memory before it trained. Every count of
// steps (training length, intervals, warm-up and anneal lengths) has the same bound.
constexpr int64_t kMaxRunMicrobatches = 10000000;
constexpr int64_t kMaxSteps = kMaxRunMicrobatches;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A ConfigError that also remembers the field path, so applyOverrides can tell which --set caused it.
class FieldError : public ConfigError {
 public:
  FieldError(const std::string& source, std::string field, const std::string& problem)
      : ConfigError(field.empty() ? source : source + ": " + field, problem), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// A value as the user wrote it: JSON, strings quoted, long values shortened (by characters).
inline std::string shown(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (textLength(s) > 80) s = firstChars(s, 77) + "...";
  return s;
}

// A number in a range or message: 0.5, 10, 1e-08.
inline std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

inline std::string inQuotes(const std::string& s) { return "\"" + s + "\""; }

// Field specs: the values one field accepts, and how an error message describes them.
struct IntSpec {
  int64_t lo = 0;
  int64_t hi = kNoMax;
  std::string note;  // appended to the description, e.g. "(model mlp has 3 partitionable units)"

  bool contains(int64_t v) const { return v >= lo && v <= hi; }
  std::string describe() const {
    std::string s = hi == kNoMax ? "an integer >= " + std::to_string(lo)
                                 : "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
    return note.empty() ? s : s + " " + note;
  }
};

struct RealSpec {
  double lo = 0;
  double hi = kInf;
  bool loOpen = false;
  bool hiOpen = false;
  std::string note;

  bool contains(double v) const {
    if (!std::isfinite(v)) return false;
    if (loOpen ? v <= lo : v < lo) return false;
    return hiOpen ? v < hi : v <= hi;
  }
  std::string describe() const {
    std::string s = hi == kInf ? std::string("a number ") + (loOpen ? "> " : ">= ") + number(lo)
                               : std::string("a number in ") + (loOpen ? "(" : "[") + number(lo) + ", " +
                                     number(hi) + (hiOpen ? ")" : "]");
    return note.empty() ? s : s + " " + note;
  }
};

struct TextSpec {
  std::vector<std::string> choices;  // non-empty: an enumeration
  bool nonEmpty = false;
  size_t maxLength = 0;  // 0: unlimited
  bool device = false;   // "cpu" or "cuda:K"

  static TextSpec oneOf(std::vector<std::string> c) { return TextSpec{std::move(c), false, 0, false}; }
  static TextSpec any() { return TextSpec{}; }
  static TextSpec label(size_t maxLength) { return TextSpec{{}, true, maxLength, false}; }
  static TextSpec deviceName() { return TextSpec{{}, false, 0, true}; }

  std::string describe() const {
    if (!choices.empty()) return "one of " + join(choices, ", ");
    if (device) return "\"cpu\" or \"cuda:K\" (K = 0, 1, ...)";
    if (nonEmpty && maxLength) return "a non-empty string of at most " + std::to_string(maxLength) + " characters";
    if (nonEmpty) return "a non-empty string";
    return "a string";
  }
  // "" when fine, else the problem.
  std::string check(const std::string& v) const {
    bool ok = true;
    if (!choices.empty()) {
      ok = std::find(choices.begin(), choices.end(), v) != choices.end();
    } else if (device) {
      ok = v == "cpu" || (v.size() > 5 && v.compare(0, 5, "cuda:") == 0 && v.size() <= 9 &&
                          v.find_first_not_of("0123456789", 5) == std::string::npos);
    } else {
      if (nonEmpty && trim(v).empty()) ok = false;
      if (maxLength && textLength(v) > maxLength) ok = false;  // characters, not bytes
    }
    if (ok) return "";
    std::string p = "expected " + describe() + ", found " + shown(Json(v));
    if (!choices.empty()) {
      std::string guess = didYouMean(v, choices);
      if (!guess.empty()) p += "; did you mean " + inQuotes(guess) + "?";
    }
    return p;
  }
};

// The spec of a named value (an enum of choices.h): one of its names.
template <class C>
TextSpec choiceSpec() {
  return TextSpec::oneOf(choiceNames<C>());
}

}  // namespace pm::config_detail
