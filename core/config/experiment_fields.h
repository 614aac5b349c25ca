#pragma once
// What the format says about each field of an experiment, for editors (the workbench's Design
// tab) and tests: its path, type, accepted values and a one-line help text. Read from the same
// field table that parses, validates and writes experiments, so an editor copies nothing.
// No LibTorch, no Qt.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/config/experiment.h"

namespace pm {

enum class FieldType {
  Text,         // a string
  Choice,       // one of `choices` (a named value, or model.name from the model catalog)
  Integer,
  Real,         // a number, fractions allowed
  Flag,         // true or false
  TextList,     // an array of strings (tags, execution.devices)
  IntegerList,  // an array of integers, each in the integer range (pipeline.partition.boundaries)
  Object,       // model.options (reserved)
};

struct FieldInfo {
  std::string path;  // dotted, as errors name it: "pipeline.stages"
  FieldType type = FieldType::Text;
  std::vector<std::string> choices;  // Choice: the accepted names, in the format's order
  // Integer, IntegerList: the inclusive range; intMax = INT64_MAX when there is no upper bound.
  int64_t intMin = 0;
  int64_t intMax = std::numeric_limits<int64_t>::max();
  // Real: the range, an end excluded when its flag is set; realMax = infinity when unbounded.
  double realMin = 0;
  double realMax = std::numeric_limits<double>::infinity();
  bool realMinOpen = false;
  bool realMaxOpen = false;
  std::string accepts;  // the accepted values as error messages say them: "an integer 1..65536"
  std::string help;     // one line: what the field means
};

// Every field of the format (sections are not fields), in the order of the file and of
// validation. A range that depends on another field is the one that holds in `e`:
// pipeline.stages and pipeline.partition.boundaries (model.name's units), pipeline.microbatches
// (data.batch_size), data.context (model.name) and optimizer.schedule.min_lr (optimizer.lr).
std::vector<FieldInfo> experimentFields(const Experiment& e = Experiment{});

// The field at `path` in `fields`; nullptr when there is none.
const FieldInfo* findField(const std::vector<FieldInfo>& fields, const std::string& path);

// The section a field is written in: "" for the top level, "model", "pipeline.partition", ...
std::string fieldSection(const std::string& path);

// Why the field at `path` has no effect on a run of `e`, as docs/experiment-format.md says
// ("only with optimizer.name adam or adamw, found sgd"); "" when it has one, and for a path the
// format does not have. A field that does not apply is still parsed and validated: a value other
// than its default may break a cross-field rule (momentum with adam).
std::string whyFieldDoesNotApply(const Experiment& e, const std::string& path);
inline bool fieldApplies(const Experiment& e, const std::string& path) { return whyFieldDoesNotApply(e, path).empty(); }

// The experiment a design describes as far as each field can be read on its own: every field of
// `j` whose value has the field's type and lies in its range (as far as the fields before it
// decide the range) is taken, any other keeps its default; unknown keys and the cross-field rules
// are ignored. For editors, which need the choices made so far while the design is still invalid
// (whyFieldDoesNotApply of a design being edited). Never throws.
Experiment experimentAsFarAsReadable(const Json& j);

}  // namespace pm
