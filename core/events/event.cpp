#include "core/events/event.h"

#include <cmath>

#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

Json makeEvent(const std::string& type) {
  Json e;
  e["v"] = kEventSchemaVersion;
  e["type"] = type;
  e["t"] = wallClockSeconds();
  return e;
}

Json makeErrorEvent(const std::exception& ex) {
  Json e = makeEvent(ev::kError);
  if (const auto* err = dynamic_cast<const Error*>(&ex)) {
    e["message"] = err->problem();
    e["place"] = err->place();
  } else {
    e["message"] = errorText(ex);
  }
  return e;
}

static void scrubNonFinite(Json& j, const std::string& path, Json& list) {
  if (j.is_number_float()) {
    if (!std::isfinite(j.get<double>())) {
      list.push_back(path);
      j = nullptr;
    }
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) scrubNonFinite(it.value(), path.empty() ? it.key() : path + "." + it.key(), list);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) scrubNonFinite(j[i], path + "[" + std::to_string(i) + "]", list);
  }
}

std::string eventToLine(const Json& event) {
  Json copy = event;
  Json list = Json::array();
  scrubNonFinite(copy, "", list);
  if (!list.empty()) copy["nonfinite"] = list;
  return copy.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json parseEventLine(const std::string& line) {
  Json e;
  try {
    e = Json::parse(line);
  } catch (const Json::exception& ex) {  // syntax errors, and numbers beyond double's range
    throw EngineError("event stream", std::string("malformed event line: ") + ex.what());
  }
  if (!e.is_object() || !e.contains("type") || !e["type"].is_string())
    throw EngineError("event stream", "event without a \"type\": " + line.substr(0, 200));
  int v = e.value("v", 0);
  if (v > kEventSchemaVersion)
    throw EngineError("event stream", "event schema version " + std::to_string(v) + " is newer than this program's " +
                                          std::to_string(kEventSchemaVersion));
  return e;
}

}  // namespace pm
