// Names, tags and notes of runs of edited designs (run_naming.h).
#include "ui/designer/run_naming.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/config/choices.h"
#include "core/config/experiment.h"
#include "core/config/model_catalog.h"

namespace pm::ui {

namespace {

using Json = nlohmann::json;

// design[section][key], or `fallback` when either is missing.
template <class T>
T valueAt(const Json& design, const char* section, const char* key, T fallback) {
  if (!design.is_object() || !design.contains(section) || !design[section].is_object()) return fallback;
  try {
    return design[section].value(key, fallback);
  } catch (const Json::exception&) {
    return fallback;  // a value of another type: the validator reports it, the name does without it
  }
}

// A number as the name shows it: 1, 0.5 (no trailing zeros).
std::string shortNumber(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool isModelName(const std::string& tag) { return tag == kTorchScriptModel || findModel(tag) != nullptr; }

bool isScheduleName(const std::string& tag) {
  const auto& names = scheduleNames();
  return std::find(names.begin(), names.end(), tag) != names.end();
}

std::vector<std::string> stringList(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& v : j)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

void addOnce(std::vector<std::string>& tags, const std::string& tag) {
  if (!tag.empty() && std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.push_back(tag);
}

}  // namespace

std::string designRunName(const Json& design) {
  std::string model = valueAt<std::string>(design, "model", "name", "mlp");
  if (model == kTorchScriptModel) {
    // The file's own name says more than "torchscript".
    std::string path = valueAt<std::string>(design, "model", "path", "");
    path = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    path = path.substr(0, path.find('.'));
    if (!path.empty()) model = path;
  }
  const std::string schedule = valueAt<std::string>(design, "pipeline", "schedule", "gpipe");
  std::string name = model + " P=" + std::to_string(valueAt<int64_t>(design, "pipeline", "stages", 1)) +
                     " N=" + std::to_string(valueAt<int64_t>(design, "pipeline", "microbatches", 1)) + " " + schedule;
  if (schedule == "pipemare") {
    const bool t1 = valueAt<bool>(design, "pipemare", "t1", false), t2 = valueAt<bool>(design, "pipemare", "t2", false);
    if (t1 || t2) name += std::string(" ") + (t1 && t2 ? "T1+T2" : t1 ? "T1" : "T2");
    const double warmup = valueAt<double>(design, "pipemare", "warmup_epochs", 0.0);
    if (warmup > 0 && std::isfinite(warmup)) name += " warm-up=" + shortNumber(warmup);
  }
  return name;
}

std::vector<std::string> designRunTags(const std::vector<std::string>& tags, const Json& design) {
  const std::string model = valueAt<std::string>(design, "model", "name", "");
  const std::string schedule = valueAt<std::string>(design, "pipeline", "schedule", "");
  const bool multiProcess = valueAt<std::string>(design, "execution", "mode", "single") == "real";
  std::vector<std::string> out;
  for (const std::string& tag : tags) {
    if (isScheduleName(tag) && tag != schedule) continue;
    if (isModelName(tag) && tag != model) continue;
    if ((tag == "multi-process" && !multiProcess) || (tag == "single-process" && multiProcess)) continue;
    addOnce(out, tag);
  }
  addOnce(out, schedule);
  addOnce(out, model);
  return out;
}

RunIdentity editedRunIdentity(const Json& design, const Json& source, const std::string& file,
                              const std::vector<std::string>& edits) {
  const Json origin = source.is_object() ? source : Json::object();
  RunIdentity id;
  const std::string sourceName = origin.value("name", std::string("experiment"));
  const std::string name = design.value("name", std::string());
  id.name = !name.empty() && name != sourceName ? name : designRunName(design);
  const std::vector<std::string> tags = stringList(design.value("tags", Json::array()));
  if (tags != stringList(origin.value("tags", Json::array()))) {
    id.tags = tags;  // the user's own: only the schedule and model added
    addOnce(id.tags, valueAt<std::string>(design, "pipeline", "schedule", ""));
    addOnce(id.tags, valueAt<std::string>(design, "model", "name", ""));
  } else {
    id.tags = designRunTags(tags, design);
  }
  std::string edited;
  for (const std::string& e : edits) edited += (edited.empty() ? "" : ", ") + e;
  const std::string from = file.empty() ? std::string("From the default design") : "From preset " + sourceName + " (file " + file + ")";
  id.notes = from + "; edited: " + (edited.empty() ? std::string("nothing") : edited);
  const std::string notes = design.value("notes", std::string());
  if (!notes.empty() && notes != origin.value("notes", std::string())) id.notes = notes + "\n" + id.notes;
  return id;
}

}  // namespace pm::ui
