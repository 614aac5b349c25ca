#pragma once
// What the verbs of core/cli share: the store a --db names, the error report on stderr, the
// experiment a file and its --set overrides make, and how runs are shown (times, numbers, JSON).
// Internal to core/cli; the verbs themselves are declared in commands.h.
#include <exception>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/store/run_store.h"

namespace pm::cli {

// The store file a --db option names: the default store when it is empty.
std::string dbPath(const std::string& db);

// Prints "error: <what>" on stderr (escaped, so that it cannot steer the terminal) and returns the
// exit code: the Error's own, else 1.
int reportError(const std::exception& ex);
// reportError, and with `json` the same as data on stdout, for a program reading it:
// {"error": {"message", "place", "exit_code"}} (message the problem, place the file and field or
// option; "" when it has none).
int reportError(const std::exception& ex, bool json);

// The experiment of `file` with its --set overrides applied.
Experiment loadWithOverrides(const std::string& file, const std::vector<std::string>& overrides);

// Local time "YYYY-MM-DD HH:MM:SS"; "-" for 0 (not yet).
std::string fmtTime(double t);
// `v` printed with the printf format `f`; "-" for NaN.
std::string fmtNum(double v, const char* f = "%.4f");

// A run's record as JSON (`runs list --json`, `runs show --json`, exports): NaN metrics are null.
Json runJson(const RunRecord& r);
// runJson with the run's stored configuration under "config".
Json runJsonWithConfig(const RunRecord& r);

}  // namespace pm::cli
