#include "core/planner/chrome_trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "core/pipeline/trace_actions.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace pm {

Json chromeTrace(const std::vector<SimTraceRecord>& records, const std::string& label, const std::string& source) {
  Json events = Json::array();
  std::set<int> stages;
  for (const auto& r : records) stages.insert(r.stage);
  for (int s : stages) {
    const std::string name = "stage " + std::to_string(s);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", s}, {"tid", s}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", s}, {"tid", s}, {"args", {{"name", name}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", s}, {"tid", s}, {"args", {{"sort_index", s}}}});
  }
  for (const auto& r : records) {
    const bool compute = isComputeTraceAction(r.action);
    events.push_back({{"name", r.action + std::to_string(r.mb)},
                      {"cat", compute ? "compute" : "comm"},
                      {"ph", "X"},
                      {"ts", r.start * 1e6},
                      {"dur", (r.end - r.start) * 1e6},
                      {"pid", r.stage},
                      {"tid", r.stage},
                      {"args", {{"action", r.action}, {"mb", r.mb}}}});
  }
  Json out;
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ms";
  out["otherData"] = {{"source", source}, {"label", label}};
  return out;
}

void writeChromeTrace(const std::string& path, const std::vector<SimTraceRecord>& records, const std::string& label,
                      const std::string& source) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw EngineError(path, std::string("cannot write the trace: ") + std::strerror(errno));
  f << chromeTrace(records, label, source).dump() << '\n';
  f.close();
  if (!f) throw EngineError(path, "cannot write the trace (write failed)");
  dropWorldWritable(path);
}

}  // namespace pm
