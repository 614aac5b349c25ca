#include "core/config/experiment_fields.h"

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

}  // namespace

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
