#include "core/analysis/sweep_tags.h"

#include <algorithm>
#include <limits>

#include "core/util/errors.h"

namespace pm {

namespace {
bool hasKey(const RunRecord& r, const std::string& key) {
  return std::any_of(r.tags.begin(), r.tags.end(), [&](const std::string& t) { return t.rfind(key + "=", 0) == 0; });
}
}  // namespace

std::vector<std::string> sweepKeys(const std::vector<RunRecord>& runs) {
  std::vector<std::string> keys;
  if (runs.empty()) return keys;
  const RunRecord& oldest = *std::min_element(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  for (const auto& t : oldest.tags) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string k = t.substr(0, eq);
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    if (std::all_of(runs.begin(), runs.end(), [&](const RunRecord& r) { return hasKey(r, k); })) keys.push_back(k);
  }
  return keys;
}

std::string sweepTagValue(const RunRecord& run, const std::string& key, const std::string& fallback) {
  for (const auto& t : run.tags)
    if (t.rfind(key + "=", 0) == 0) return t.substr(key.size() + 1);
  return fallback;
}

std::vector<std::vector<std::string>> gridPoints(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> points{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        auto q = p;
        q.push_back(axis.key + "=" + v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

std::string sweepDefinitionToJson(const SweepDefinition& d) {
  nlohmann::json grid = nlohmann::json::array();
  for (const auto& a : d.grid) grid.push_back({{"key", a.key}, {"values", a.values}});
  return nlohmann::json{{"version", 1},        {"file", d.file}, {"experiment", d.experiment}, {"overrides", d.overrides},
                        {"grid", grid},        {"tags", d.tags}, {"name", d.name}}
      .dump();
}

SweepDefinition sweepDefinitionFromJson(const std::string& json, const std::string& place) {
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  const auto bad = [&](const std::string& what) { return StoreError(place, "damaged sweep definition: " + what); };
  if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
  if (j.value("version", 0) != 1) throw bad("unknown version " + j.value("version", nlohmann::json()).dump());
  SweepDefinition d;
  try {
    d.file = j.at("file").get<std::string>();
    d.experiment = j.at("experiment");
    d.overrides = j.at("overrides").get<std::vector<std::string>>();
    d.tags = j.at("tags").get<std::vector<std::string>>();
    d.name = j.at("name").get<std::string>();
    for (const auto& a : j.at("grid")) d.grid.push_back({a.at("key").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
  } catch (const nlohmann::json::exception& ex) {
    throw bad(ex.what());
  }
  if (!d.experiment.is_object()) throw bad("\"experiment\" is not an object");
  if (d.grid.empty()) throw bad("no grid");
  for (const auto& a : d.grid)
    if (a.key.empty() || a.values.empty()) throw bad("a grid axis without key or values");
  return d;
}

bool runOnPoint(const RunRecord& run, const std::vector<std::string>& point) {
  return std::all_of(point.begin(), point.end(),
                     [&](const std::string& kv) { return std::find(run.tags.begin(), run.tags.end(), kv) != run.tags.end(); });
}

std::vector<RunRecord> notStartedPoints(const std::vector<RunRecord>& runs, const std::vector<GridAxis>& grid) {
  std::vector<RunRecord> out;
  for (const auto& point : gridPoints(grid)) {
    if (std::any_of(runs.begin(), runs.end(), [&](const RunRecord& r) { return runOnPoint(r, point); })) continue;
    RunRecord r;  // id 0: a stand-in (sweepPointStatus reads "not started")
    r.status = RunStatus::Created;
    r.tags = point;
    r.final_loss = r.final_accuracy = std::numeric_limits<double>::quiet_NaN();
    if (!runs.empty()) r.sweep_id = runs.front().sweep_id;
    out.push_back(std::move(r));
  }
  return out;
}

std::string sweepPointStatus(const RunRecord& run) { return run.id == 0 ? kNotStartedStatus : toString(run.status); }

}  // namespace pm
