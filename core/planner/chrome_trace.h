#pragma once
// Chrome trace format (chrome://tracing, Perfetto) for simulated timelines: {"traceEvents": [...]}
// with one complete event (ph "X", ts and dur in microseconds, pid = tid = stage) per action and
// metadata events naming each stage. No LibTorch.
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/planner/timeline_sim.h"

namespace pm {

inline constexpr const char* kSimulatedTraceSource = "pipemare plan (simulated timeline)";
inline constexpr const char* kMeasuredTraceSource = "pipemare export (measured schedule trace of a run)";

// `label` names the trace (e.g. "pipemare, P=4, N=8") and `source` says where its times come from
// (simulated or measured); both go into "otherData".
Json chromeTrace(const std::vector<SimTraceRecord>& records, const std::string& label = "",
                 const std::string& source = kSimulatedTraceSource);

// Writes chromeTrace(...) to `path`. Throws pm::Error (kind Engine) naming the path when the file
// cannot be written.
void writeChromeTrace(const std::string& path, const std::vector<SimTraceRecord>& records,
                      const std::string& label = "", const std::string& source = kSimulatedTraceSource);

}  // namespace pm
