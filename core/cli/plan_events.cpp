#include "core/cli/plan_events.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "core/events/event.h"

namespace pm::cli {

int planWithEvents(const PlanOptions& o, std::ostream& out,
                   const std::function<int(const PlanOptions&, std::ostream& doc)>& body) {
  PlanOptions j = o;
  j.events = false;
  j.json = true;
  bool failed = false;
  j.progress = [&out](const PlanProgress& p) {
    Json e = makeEvent(ev::kProgress);
    e["phase"] = p.phase;
    e["done"] = p.done;
    e["total"] = p.total;
    e["message"] = p.message;
    out << eventToLine(e) << "\n" << std::flush;
  };
  j.failed = [&out, &failed](const PlanFailure& f) {
    failed = true;
    Json e = makeEvent(ev::kError);
    e["message"] = f.problem;
    e["place"] = f.place;
    e["exit_code"] = f.exitCode;
    out << eventToLine(e) << "\n" << std::flush;
  };
  std::ostringstream doc;
  const int code = body(j, doc);
  if (code == 0) {
    Json e = makeEvent(ev::kResult);
    e["result"] = Json::parse(doc.str());  // the document this process just wrote
    out << eventToLine(e) << "\n" << std::flush;
  } else if (!failed) {
    // A failure that reached no guard.
    Json e = makeEvent(ev::kError);
    e["message"] = "plan failed (exit code " + std::to_string(code) + "; its reason is on stderr)";
    e["place"] = "";
    e["exit_code"] = code;
    out << eventToLine(e) << "\n" << std::flush;
  }
  return code;
}

}  // namespace pm::cli
