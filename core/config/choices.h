#pragma once
// The named values of the experiment format: one enum per string-valued field with a fixed set of
// values (pipeline.schedule, optimizer.name, ...). Each enum has exactly one table of
// (value, name), in choices.cpp; parsing, printing, JSON conversion, error messages and the
// designer's lists all read it. The names are the file format: experiment files, --set overrides,
// stored run configs and events spell the values this way. Pure data; no LibTorch, no Qt.
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/pipeline/schedule_decl.h"

namespace pm {

// pipeline.schedule: ScheduleKind, declared with its traits in core/pipeline/schedule_decl.h (its
// name table here is read from the declarations).
// pipeline.timing: how far forwards run ahead of backwards in the asynchronous 1F1B.
enum class PipelineTiming { Software1F1B, Paper };  // "1f1b" | "paper"
// pipeline.partition.method
enum class PartitionMethod { Parameters, Time, Explicit };
// pipemare.warmup_schedule: the synchronous schedule of PipeMare's warm-up.
enum class WarmupSchedule { GPipe, OneFOneB };
// pipemare.momentum_mode
enum class MomentumMode { Same, DelayScaled };
// optimizer.name
enum class OptimizerType { Sgd, Adam, AdamW };
// optimizer.schedule.name
enum class LrScheduleType { Constant, Step, Cosine, LinearWarmup, InverseSqrt };
// data.dataset
enum class DatasetKind { FashionMnist, Text, Synthetic, Tensors };
// model.task: the loss. auto = the dataset's (fashion-mnist: classification, text: language-model,
// synthetic: data.synthetic_task, tensors: from the labels' dtype and shape).
enum class ModelTask { Auto, Classification, LanguageModel, Regression };
// data.eval_split
enum class EvalSplit { Test, Train };
// data.synthetic_task
enum class SyntheticTask { Classification, Regression };
// execution.mode
enum class ExecutionMode { Single, Real };
// execution.backend
enum class CommBackend { Gloo, Nccl, Local };

template <class E>
struct Choice {
  E value;
  const char* name;
};

// True for the enums above (the ones with a table).
template <class E>
struct IsChoice : std::false_type {};

// The table of an enum: every value once, in the order messages and lists show them.
// Specialised for each enum below (defined in choices.cpp).
template <class E>
const std::vector<Choice<E>>& choiceTable();

template <class E>
std::optional<E> choiceFromName(const std::string& name) {
  for (const auto& c : choiceTable<E>())
    if (name == c.name) return c.value;
  return std::nullopt;
}

// The name of a value; "unknown" for a value outside the table (only a cast makes one).
template <class E>
std::string choiceName(E value) {
  for (const auto& c : choiceTable<E>())
    if (c.value == value) return c.name;
  return "unknown";
}

template <class E>
bool isKnownChoice(E value) {
  for (const auto& c : choiceTable<E>())
    if (c.value == value) return true;
  return false;
}

template <class E>
std::vector<std::string> choiceNames() {
  std::vector<std::string> names;
  for (const auto& c : choiceTable<E>()) names.emplace_back(c.name);
  return names;
}

// The value of a name; otherwise std::invalid_argument("unknown <what> '<name>' (expected one of: ...)").
template <class E>
E choiceOrThrow(const std::string& name, const std::string& what = "name") {
  if (auto v = choiceFromName<E>(name)) return *v;
  std::string list;
  for (const auto& c : choiceTable<E>()) list += (list.empty() ? "" : ", ") + std::string(c.name);
  throw std::invalid_argument("unknown " + what + " '" + name + "' (expected one of: " + list + ")");
}

template <class E, std::enable_if_t<IsChoice<E>::value, int> = 0>
std::ostream& operator<<(std::ostream& os, E value) {
  return os << choiceName(value);
}

// Declares an enum's table and its JSON conversion (the name as a JSON string, as the file
// format writes it; nlohmann would otherwise write the enum as an integer).
#define PM_DECLARE_CHOICE(E)                                                       \
  template <>                                                                      \
  struct IsChoice<E> : std::true_type {};                                          \
  template <>                                                                      \
  const std::vector<Choice<E>>& choiceTable<E>();                                  \
  template <typename BasicJsonType>                                                \
  void to_json(BasicJsonType& j, const E& value) {                                 \
    j = choiceName(value);                                                         \
  }                                                                                \
  template <typename BasicJsonType>                                                \
  void from_json(const BasicJsonType& j, E& value) {                               \
    value = choiceOrThrow<E>(j.template get<std::string>());                       \
  }

PM_DECLARE_CHOICE(ScheduleKind)
PM_DECLARE_CHOICE(PipelineTiming)
PM_DECLARE_CHOICE(PartitionMethod)
PM_DECLARE_CHOICE(WarmupSchedule)
PM_DECLARE_CHOICE(MomentumMode)
PM_DECLARE_CHOICE(OptimizerType)
PM_DECLARE_CHOICE(LrScheduleType)
PM_DECLARE_CHOICE(DatasetKind)
PM_DECLARE_CHOICE(ModelTask)
PM_DECLARE_CHOICE(EvalSplit)
PM_DECLARE_CHOICE(SyntheticTask)
PM_DECLARE_CHOICE(ExecutionMode)
PM_DECLARE_CHOICE(CommBackend)

#undef PM_DECLARE_CHOICE

// The schedule by name (scheduleDecls()' names); throws std::invalid_argument otherwise.
ScheduleKind scheduleFromName(const std::string& name);
std::string scheduleName(ScheduleKind k);
// The names of the schedules, in the table's order.
const std::vector<std::string>& scheduleNames();

}  // namespace pm
