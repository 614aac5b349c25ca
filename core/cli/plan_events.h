#pragma once
// `pipemare plan ... --events stdout`: what plan has to say as an event stream on stdout
// (docs/events.md, "plan's stream"), so that a client (the workbench's planner and timeline) reads
// facts, never the lines meant for people: `progress` events while it works (phase, done, total,
// message), then either one `result` event whose `result` is the document `--json` prints, or one
// `error` event (message, place, exit_code). The lines for people stay on stderr.
#include <functional>
#include <ostream>

#include "core/cli/plan.h"

namespace pm::cli {

// Runs `body` with a copy of `o` that prints its --json document (to the stream `body` is given)
// and reports its progress and failure as data, and writes them to `out` as events. Returns
// `body`'s exit code.
int planWithEvents(const PlanOptions& o, std::ostream& out,
                   const std::function<int(const PlanOptions&, std::ostream& doc)>& body);

}  // namespace pm::cli
