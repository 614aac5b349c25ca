// The field descriptions (experiment_fields.h) and the named values (choices.h) against what the
// parser and the validator really do: choices are the names the parser accepts, ranges are the
// bounds validation enforces, and every field has a help text.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/config/choices.h"
#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

using namespace pm;

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

Json::json_pointer pointerOf(const std::string& path) {
  std::string s = "/" + path;
  for (auto& c : s)
    if (c == '.') c = '/';
  return Json::json_pointer(s);
}

// An experiment with only `path` set (the defaults otherwise).
Json withField(const std::string& path, const Json& value) {
  Json j = Json::object();
  j[pointerOf(path)] = value;
  return j;
}

// The problem experimentFromJson reports at exactly `place`; "" when it accepts the experiment or
// reports another place.
std::string problemAt(const Json& j, const std::string& place) {
  try {
    experimentFromJson(j);
  } catch (const ConfigError& e) {
    if (e.place() == "experiment: " + place) return e.problem();
  }
  return "";
}

// True when the value is refused as out of the field's range (not by a cross-field rule).
bool outOfRange(const FieldInfo& f, const Json& value) {
  return startsWith(problemAt(withField(f.path, value), f.path), "expected " + f.accepts + ", found ");
}

void leaves(const Json& j, const std::string& prefix, std::set<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && it.key() != "options")
      leaves(*it, p, out);
    else
      out.insert(p);
  }
}

// An enum's table: names and values unique, each name parsed to its value and printed back, and
// the JSON conversion writes and reads the name (never the enum's integer).
template <class E>
void checkTable(const char* what) {
  SCOPED_TRACE(what);
  std::set<std::string> names;
  std::set<int> values;
  for (const auto& c : choiceTable<E>()) {
    EXPECT_FALSE(std::string(c.name).empty());
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " twice";
    EXPECT_TRUE(values.insert(static_cast<int>(c.value)).second) << c.name;
    EXPECT_EQ(choiceFromName<E>(c.name), c.value) << c.name;
    EXPECT_EQ(choiceName(c.value), c.name);
    EXPECT_TRUE(isKnownChoice(c.value));
    EXPECT_EQ(Json(c.value), Json(c.name));
    EXPECT_EQ(Json(c.name).get<E>(), c.value) << c.name;
  }
  EXPECT_EQ(choiceNames<E>().size(), choiceTable<E>().size());
  EXPECT_FALSE(choiceFromName<E>("no such name").has_value());
  EXPECT_THROW(choiceOrThrow<E>("no such name"), std::invalid_argument);
}

}  // namespace

TEST(Choices, EveryTableRoundTrips) {
  checkTable<ScheduleKind>("ScheduleKind");
  checkTable<PipelineTiming>("PipelineTiming");
  checkTable<PartitionMethod>("PartitionMethod");
  checkTable<WarmupSchedule>("WarmupSchedule");
  checkTable<MomentumMode>("MomentumMode");
  checkTable<OptimizerType>("OptimizerType");
  checkTable<LrScheduleType>("LrScheduleType");
  checkTable<DatasetKind>("DatasetKind");
  checkTable<EvalSplit>("EvalSplit");
  checkTable<SyntheticTask>("SyntheticTask");
  checkTable<ExecutionMode>("ExecutionMode");
  checkTable<CommBackend>("CommBackend");
}

TEST(Choices, SchedulesByName) {
  EXPECT_EQ(scheduleNames(), choiceNames<ScheduleKind>());
  for (const auto& name : scheduleNames()) EXPECT_EQ(scheduleName(scheduleFromName(name)), name);
  EXPECT_THROW(scheduleFromName("GPipe"), std::invalid_argument);
}

// Every leaf of the written experiment is described once, and only those.
TEST(ExperimentFields, DescribeEveryFieldOfTheFormatOnce) {
  std::set<std::string> written;
  leaves(experimentToJson(Experiment{}), "", written);
  std::set<std::string> described;
  for (const auto& f : experimentFields()) EXPECT_TRUE(described.insert(f.path).second) << f.path << " twice";
  EXPECT_EQ(described, written);
}

TEST(ExperimentFields, EveryFieldHasOneLineOfHelpAndItsAcceptedValues) {
  for (const auto& f : experimentFields()) {
    SCOPED_TRACE(f.path);
    EXPECT_FALSE(trim(f.help).empty());
    EXPECT_EQ(f.help.find('\n'), std::string::npos);
    EXPECT_FALSE(f.accepts.empty());
    EXPECT_EQ(f.type == FieldType::Choice, !f.choices.empty());
  }
}

TEST(ExperimentFields, TypesAreTheFormats) {
  const auto fields = experimentFields();
  struct Row {
    const char* path;
    FieldType type;
  };
  for (const Row& r : {Row{"name", FieldType::Text}, Row{"tags", FieldType::TextList}, Row{"model.name", FieldType::Choice},
                       Row{"model.options", FieldType::Object}, Row{"data.batch_size", FieldType::Integer},
                       Row{"data.shuffle", FieldType::Flag}, Row{"pipeline.schedule", FieldType::Choice},
                       Row{"pipeline.partition.boundaries", FieldType::IntegerList}, Row{"training.epochs", FieldType::Real},
                       Row{"training.seed", FieldType::Integer}, Row{"execution.devices", FieldType::TextList}}) {
    const FieldInfo* f = findField(fields, r.path);
    ASSERT_NE(f, nullptr) << r.path;
    EXPECT_EQ(f->type, r.type) << r.path;
  }
  EXPECT_EQ(findField(fields, "pipeline.stagez"), nullptr);
  EXPECT_EQ(findField(fields, "pipeline"), nullptr);  // a section, not a field
}

TEST(ExperimentFields, ChoicesComeFromTheOneTable) {
  const auto fields = experimentFields();
  EXPECT_EQ(findField(fields, "model.name")->choices, modelNames());
  EXPECT_EQ(findField(fields, "pipeline.schedule")->choices, scheduleNames());
  EXPECT_EQ(findField(fields, "pipeline.timing")->choices, choiceNames<PipelineTiming>());
  EXPECT_EQ(findField(fields, "optimizer.name")->choices, choiceNames<OptimizerType>());
  EXPECT_EQ(findField(fields, "optimizer.schedule.name")->choices, choiceNames<LrScheduleType>());
  EXPECT_EQ(findField(fields, "execution.backend")->choices, choiceNames<CommBackend>());
}

// Each listed choice passes the field's own check (a cross-field rule may still refuse it, with
// its own message) and is written back as given; anything else is refused with the list.
TEST(ExperimentFields, ChoicesAreTheNamesTheParserAccepts) {
  for (const auto& f : experimentFields()) {
    if (f.type != FieldType::Choice) continue;
    for (const auto& name : f.choices) {
      SCOPED_TRACE(f.path + " = " + name);
      const Json j = withField(f.path, name);
      EXPECT_FALSE(startsWith(problemAt(j, f.path), "expected ")) << problemAt(j, f.path);
      try {
        EXPECT_EQ(experimentToJson(experimentFromJson(j)).at(pointerOf(f.path)), Json(name));
      } catch (const ConfigError&) {
        // refused by a cross-field rule (data.dataset=text needs model charlm, ...)
      }
    }
    const std::string problem = problemAt(withField(f.path, f.choices.front() + "x"), f.path);
    EXPECT_TRUE(startsWith(problem, "expected one of " + join(f.choices, ", ") + ", found ")) << f.path << ": " << problem;
  }
}

// The range each field reports is the one validation enforces: just outside it is refused as out
// of range, its closed ends are not.
TEST(ExperimentFields, RangesAreTheBoundsValidationChecks) {
  constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
  int checked = 0;
  for (const auto& f : experimentFields()) {
    SCOPED_TRACE(f.path);
    if (f.type == FieldType::Integer) {
      EXPECT_TRUE(outOfRange(f, f.intMin - 1));
      EXPECT_FALSE(outOfRange(f, f.intMin));
      if (f.intMax != kNoMax) {
        EXPECT_TRUE(outOfRange(f, f.intMax + 1));
        EXPECT_FALSE(outOfRange(f, f.intMax));
      }
      ++checked;
    } else if (f.type == FieldType::Real) {
      EXPECT_EQ(outOfRange(f, f.realMin), f.realMinOpen);
      EXPECT_TRUE(outOfRange(f, f.realMin - 1));
      if (std::isfinite(f.realMax)) {
        EXPECT_EQ(outOfRange(f, f.realMax), f.realMaxOpen);
        EXPECT_TRUE(outOfRange(f, f.realMax + 1));
      }
      ++checked;
    } else if (f.type == FieldType::IntegerList) {
      const std::string range = "expected an integer " + std::to_string(f.intMin) + ".." + std::to_string(f.intMax);
      for (int64_t outside : {f.intMin - 1, f.intMax + 1})
        EXPECT_TRUE(startsWith(problemAt(withField(f.path, Json::array({outside})), f.path + "[0]"), range)) << outside;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

// A range that depends on another field is the one that holds in the experiment given.
TEST(ExperimentFields, RangesFollowTheFieldsTheyDependOn) {
  Experiment e;
  e.model.name = "charlm";
  e.data.dataset = DatasetKind::Text;
  e.data.batch_size = 16;
  e.optimizer.lr = 0.5;
  const auto fields = experimentFields(e);
  EXPECT_EQ(findField(fields, "pipeline.stages")->intMax, 6);
  EXPECT_EQ(findField(fields, "pipeline.microbatches")->intMax, 16);
  EXPECT_EQ(findField(fields, "data.context")->intMax, 128);
  EXPECT_DOUBLE_EQ(findField(fields, "optimizer.schedule.min_lr")->realMax, 0.5);
  EXPECT_EQ(findField(experimentFields(), "data.context")->intMax, 4096);
  EXPECT_EQ(findField(experimentFields(), "pipeline.stages")->intMax, 3);  // mlp
}
