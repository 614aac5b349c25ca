#pragma once
// Chrome trace format (chrome://tracing, Perfetto) for simulated timelines: {"traceEvents": [...]}
// with one complete event (ph "X", ts and dur in microseconds, pid = tid = stage) per action and
// metadata events naming each stage. No LibTorch.
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/planner/timeline_sim.h"

namespace pm {

// `label` names the trace (e.g. "pipemare, P=4, N=8"); it goes into "otherData".
Json chromeTrace(const std::vector<SimTraceRecord>& records, const std::string& label = "");

// Writes chromeTrace(...) to `path`. Throws pm::Error (kind Engine) naming the path when the file
// cannot be written.
void writeChromeTrace(const std::string& path, const std::vector<SimTraceRecord>& records,
                      const std::string& label = "");

}  // namespace pm
