#pragma once
// A sweep's grid from its runs' "key=value" tags (set by `pipemare sweep`) and from the definition
// the sweep recorded in the store: shared by the command line (sweep, runs list --sweep), the
// Sweeps view and the study report. No Qt, no LibTorch.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace pm {

// The swept keys: keys of the oldest run's key=value tags that every run has, in tag order.
std::vector<std::string> sweepKeys(const std::vector<RunRecord>& runs);
// The value of `key` in the run's key=value tags, or `fallback`.
std::string sweepTagValue(const RunRecord& run, const std::string& key, const std::string& fallback = "?");

struct GridAxis {
  std::string key;                  // a field path, e.g. optimizer.lr
  std::vector<std::string> values;  // as written on the command line
};

// Every combination, the first axis varying slowest; each point is a list of "key=value".
std::vector<std::vector<std::string>> gridPoints(const std::vector<GridAxis>& axes);

// What `pipemare sweep` records for a sweep (RunStore::recordSweep), so that its points can be
// listed before they run and a stopped sweep resumed. JSON: {"version": 1, "file": ...,
// "experiment": the base experiment as read, "overrides": [...], "grid": [{"key": ...,
// "values": [...]}], "tags": [...], "name": ...}.
struct SweepDefinition {
  std::string file;                    // the experiment file as given
  nlohmann::json experiment;           // its content when the sweep started
  std::vector<std::string> overrides;  // --set, in every run
  std::vector<GridAxis> grid;
  std::vector<std::string> tags;       // --tag, on every run
  std::string name;                    // run name prefix ("" = the experiment's name)
};
std::string sweepDefinitionToJson(const SweepDefinition& d);
// Throws StoreError naming `place` for a document that is not a sweep definition.
SweepDefinition sweepDefinitionFromJson(const std::string& json, const std::string& place);

// Whether `run` lies on `point` (its key=value tags hold every key=value of the point).
bool runOnPoint(const RunRecord& run, const std::vector<std::string>& point);
// Stand-ins for the grid points that no run of `runs` lies on: id 0 (a stored run's id is 1 or
// more), status Created (shown as kNotStartedStatus: sweepPointStatus), the point's key=value
// tags. With them a sweep's table and map show the whole grid.
std::vector<RunRecord> notStartedPoints(const std::vector<RunRecord>& runs, const std::vector<GridAxis>& grid);

// How a stand-in's status reads.
inline constexpr const char* kNotStartedStatus = "not started";
// The status of a sweep's run as shown: toString(run.status), or kNotStartedStatus for a
// stand-in from notStartedPoints (id 0).
std::string sweepPointStatus(const RunRecord& run);

}  // namespace pm
