#include "core/cli/cli_support.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/cli/commands.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/strings.h"

namespace pm::cli {

std::string dbPath(const std::string& db) { return db.empty() ? defaultDatabasePath() : db; }

// Messages quote names, paths and values as given: escaped, so that they cannot steer the terminal.
int reportError(const std::exception& ex) {
  std::fprintf(stderr, "error: %s\n", escapeForTerminal(ex.what()).c_str());
  if (auto* e = dynamic_cast<const Error*>(&ex)) return e->exitCode();
  return 1;
}

int reportError(const std::exception& ex, bool json) {
  const int code = reportError(ex);
  if (!json) return code;
  const auto* e = dynamic_cast<const Error*>(&ex);
  const Json error = {{"message", e ? e->problem() : errorText(ex)}, {"place", e ? e->place() : std::string()}, {"exit_code", code}};
  std::printf("%s\n", Json{{"error", error}}.dump(2).c_str());
  return code;
}

// The file's notes describe it as written: with overrides they end with what the command line
// changed (the same on every node of a multi-node run, whose configurations must agree).
Experiment loadWithOverrides(const std::string& file, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return loadExperimentFile(file);
  Experiment e = loadExperimentFile(file, overrides);
  e.notes += std::string(e.notes.empty() ? "" : " ") + "[run with --set " + join(overrides, ", ") + "]";
  return e;
}

std::string fmtTime(double t) {
  if (t <= 0) return "-";
  time_t tt = static_cast<time_t>(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&tt));
  return buf;
}

std::string fmtNum(double v, const char* f) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

Json runJson(const RunRecord& r) {
  auto nanOrNull = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
  return Json{{"id", r.id},
              {"name", r.name},
              {"status", toString(r.status)},
              {"status_message", r.status_message},
              {"created_at", r.created_at},
              {"started_at", r.started_at},
              {"finished_at", r.finished_at},
              {"model", r.model},
              {"schedule", r.schedule},
              {"stages", r.stages},
              {"microbatches", r.microbatches},
              {"final_loss", nanOrNull(r.final_loss)},
              {"final_accuracy", nanOrNull(r.final_accuracy)},
              {"tags", r.tags},
              {"notes", r.notes},
              {"sweep_id", r.sweep_id},
              {"host", r.host},
              {"revision", r.revision}};
}

Json runJsonWithConfig(const RunRecord& r) {
  Json j = runJson(r);
  j["config"] = Json::parse(r.config_json, nullptr, false);
  return j;
}

// A tag given with --tag follows the experiment format's rule for tags. (A sweep passes each run
// its grid point as key=value tags, which may be longer: they are checked as the grid was.)
void checkTags(const std::vector<std::string>& tags) {
  for (const auto& t : tags) {
    if (trim(t).empty()) throw ConfigError("--tag", "a tag must not be empty or blank");
    if (textLength(t) > 64)
      throw ConfigError("--tag " + fitText(t, 40), "a tag has at most 64 characters (as the experiment's tags), found " +
                                                       std::to_string(textLength(t)));
  }
}

}  // namespace pm::cli
