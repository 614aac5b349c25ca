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
  const auto write = [&out](const Json& e) { out << eventToLine(e) << "\n" << std::flush; };
  const auto error = [&write](const std::string& place, const std::string& message, int code) {
    Json e = makeEvent(ev::kError);
    e["message"] = message;
    e["place"] = place;
    e["exit_code"] = code;
    write(e);
  };
  j.progress = [&write](const PlanProgress& p) {
    Json e = makeEvent(ev::kProgress);
    e["phase"] = p.phase;
    e["done"] = p.done;
    e["total"] = p.total;
    e["message"] = p.message;
    write(e);
  };
  j.failed = [&error, &failed](const PlanFailure& f) {
    failed = true;
    error(f.place, f.problem, f.exitCode);
  };
  // The commands write their --json document to a stream; the result event holds it parsed back
  // (one parse of a document of a few hundred kB at most, once per plan).
  std::ostringstream doc;
  const int code = body(j, doc);
  if (code == 0) {
    Json e = makeEvent(ev::kResult);
    e["result"] = Json::parse(doc.str());
    write(e);
  } else if (!failed) {
    error("", "plan failed (exit code " + std::to_string(code) + "; its reason is on stderr)", code);  // reached no guard
  }
  return code;
}

}  // namespace pm::cli
