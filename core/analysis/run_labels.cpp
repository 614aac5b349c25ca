#include "core/analysis/run_labels.h"
#include "core/analysis/stored_run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace pm {

namespace {

// Every leaf of an experiment as "a.b.c" -> its value's JSON text.
void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
}

struct Known {
  const char* path;
  const char* prefix;  // "" : the value alone
};
// The fields a researcher tells runs apart by, in the order a label shows them.
constexpr Known kKnown[] = {{"pipeline.schedule", ""}, {"model.name", ""},        {"pipeline.stages", "P="},
                            {"pipeline.microbatches", "N="}, {"optimizer.lr", "lr="}, {"training.seed", "seed="},
                            {"pipemare.t1", "T1="},      {"pipemare.t2", "T2="},     {"pipeline.chunks", "v="}};

}  // namespace

std::map<int64_t, std::string> distinguishingLabels(const std::vector<RunRecord>& runs, size_t maxFields) {
  std::vector<std::map<std::string, std::string>> leaves;
  std::set<std::string> paths;
  for (const auto& r : runs) {
    std::map<std::string, std::string> m;
    flatten(storedExperimentJson(r), "", m);
    for (const char* skip : {"name", "notes", "tags"}) m.erase(skip);
    for (const auto& [p, v] : m) paths.insert(p);
    leaves.push_back(std::move(m));
  }
  // The paths whose values (a missing one counts as its own value) are not all the same.
  std::vector<std::string> differing;
  auto differs = [&](const std::string& p) {
    std::set<std::string> seen;
    for (const auto& m : leaves) {
      const auto it = m.find(p);
      seen.insert(it == m.end() ? std::string("\x01missing") : it->second);
    }
    return seen.size() > 1;
  };
  for (const Known& k : kKnown)
    if (paths.count(k.path) && differs(k.path)) differing.push_back(k.path);
  for (const auto& p : paths)
    if (std::none_of(std::begin(kKnown), std::end(kKnown), [&](const Known& k) { return p == k.path; }) && differs(p))
      differing.push_back(p);
  std::map<int64_t, std::string> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string label;
    for (size_t k = 0; k < differing.size() && k < maxFields; ++k) {
      const std::string& p = differing[k];
      const auto it = leaves[i].find(p);
      const std::string value = it == leaves[i].end() ? "-" : it->second;
      const auto known = std::find_if(std::begin(kKnown), std::end(kKnown), [&](const Known& x) { return p == x.path; });
      const std::string field = known != std::end(kKnown) ? known->prefix : p + "=";
      label += (label.empty() ? "" : " ") + field + value;
    }
    if (differing.size() > maxFields) label += " ...";
    out[runs[i].id] = label;
  }
  return out;
}

}  // namespace pm
