// pipemare export RUN --csv DIR | --json FILE | --chrome-trace FILE: a run's record, metrics,
// schedule trace and log as files, written all or none.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/cli/export_files.h"
#include "core/planner/chrome_trace.h"
#include "core/store/run_store.h"
#include "core/util/csv.h"
#include "core/util/errors.h"

namespace pm::cli {
namespace {

namespace fs = std::filesystem;

// What an export reads of the run, once for all of its outputs.
struct RunContent {
  RunRecord record;
  std::vector<std::string> keys, stageKeys;
  std::vector<TraceRecord> trace;
  std::vector<LogRecord> log;
};

// Refusals before anything is written.
void checkTargets(const ExportOptions& o, const RunContent& c) {
  if (!o.chromeTrace.empty() && c.trace.empty())
    throw ConfigError("--chrome-trace", "run " + std::to_string(o.run) +
                                            " recorded no schedule trace (its training.trace_steps was 0, or it ended before "
                                            "its first minibatch); nothing written");
  if (!o.csvDir.empty() && fs::exists(o.csvDir) && !fs::is_directory(o.csvDir))
    throw ConfigError("--csv " + o.csvDir, "exists and is not a directory (--csv names a directory to write CSV files into)");
  for (const auto& [option, path] : {std::pair<std::string, std::string>{"--json", o.jsonFile}, {"--chrome-trace", o.chromeTrace}})
    if (!path.empty() && fs::is_directory(path)) throw ConfigError(option + " " + path, "is a directory (give a file name)");
}

// --csv DIR: metrics.csv, stage_metrics.csv, trace.csv, log.csv and the run's record as run.json.
void addCsvFiles(const ExportOptions& o, const RunStore& store, const RunContent& c, std::vector<ExportFile>& files) {
  const auto add = [&](const std::string& name, std::string text) {
    files.push_back({"--csv " + o.csvDir, name, o.csvDir + "/" + name, std::move(text)});
  };
  std::string m = "key,step,wall_time,value\n";
  for (const auto& k : c.keys)
    for (const auto& p : store.loadMetric(o.run, k))
      m += csvField(k) + "," + std::to_string(p.step) + "," + csvNumber(p.wall_time) + "," + csvNumber(p.value) + "\n";
  add("metrics.csv", m);
  std::string sm = "stage,key,step,value\n";
  for (const auto& k : c.stageKeys)
    for (const auto& p : store.loadStageMetric(o.run, k))
      sm += std::to_string(p.stage) + "," + csvField(k) + "," + std::to_string(p.step) + "," + csvNumber(p.value) + "\n";
  add("stage_metrics.csv", sm);
  std::string t = "stage,action,microbatch,start,end\n";
  for (const auto& x : c.trace)
    t += std::to_string(x.stage) + "," + csvField(x.action) + "," + std::to_string(x.microbatch) + "," + csvNumber(x.start) +
         "," + csvNumber(x.end) + "\n";
  add("trace.csv", t);
  std::string l = "time,level,message\n";
  for (const auto& x : c.log) l += csvNumber(x.time) + "," + csvField(x.level) + "," + csvField(x.message) + "\n";
  add("log.csv", l);
  add("run.json", runJsonWithConfig(c.record).dump(2) + "\n");
}

// --json FILE: the run's record, every metric and stage metric as [columns...] rows, trace and log.
Json exportJson(const ExportOptions& o, const RunStore& store, const RunContent& c) {
  Json j = runJsonWithConfig(c.record);
  Json metrics = Json::object(), stageMetrics = Json::object(), tr = Json::array(), lg = Json::array();
  auto val = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
  for (const auto& k : c.keys) {
    Json pts = Json::array();
    for (const auto& p : store.loadMetric(o.run, k)) pts.push_back({p.step, p.wall_time, val(p.value)});
    metrics[k] = pts;
  }
  for (const auto& k : c.stageKeys) {
    Json pts = Json::array();
    for (const auto& p : store.loadStageMetric(o.run, k)) pts.push_back({p.stage, p.step, val(p.value)});
    stageMetrics[k] = pts;
  }
  for (const auto& x : c.trace) tr.push_back({{"stage", x.stage}, {"action", x.action}, {"mb", x.microbatch}, {"start", x.start}, {"end", x.end}});
  for (const auto& x : c.log) lg.push_back({{"time", x.time}, {"level", x.level}, {"message", x.message}});
  j["metrics"] = metrics;
  j["metrics_columns"] = {"step", "wall_time", "value"};
  j["stage_metrics"] = stageMetrics;
  j["stage_metrics_columns"] = {"stage", "step", "value"};
  j["trace"] = tr;
  j["log"] = lg;
  return j;
}

// --chrome-trace FILE: the measured schedule trace in the Chrome trace format.
Json measuredChromeTrace(const RunContent& c) {
  std::vector<SimTraceRecord> recs;
  for (const auto& x : c.trace) recs.push_back({x.stage, x.action, x.microbatch, x.start, x.end});
  return chromeTrace(recs, "run " + std::to_string(c.record.id) + " " + c.record.name + " (measured)", kMeasuredTraceSource);
}

// Two outputs onto one file would write one over the other.
void checkDistinctPaths(const std::vector<ExportFile>& files) {
  std::set<std::string> seen;
  for (const auto& f : files)
    if (!seen.insert(fs::absolute(f.path).lexically_normal().string()).second)
      throw ConfigError("export", f.path + " is named by two outputs (--csv, --json, --chrome-trace): give each its own file");
}

// Makes the --csv directory when it is missing, one level only: a mistyped path is refused, not
// grown. Returns whether it made it.
bool makeCsvDirectory(const std::string& csvDir) {
  if (csvDir.empty() || fs::exists(csvDir)) return false;
  std::error_code ec;
  fs::path dir(csvDir);
  if (!dir.has_filename()) dir = dir.parent_path();  // "out/" names the folder out
  const fs::path up = dir.parent_path();
  if (!up.empty() && !fs::is_directory(up, ec))
    throw ConfigError("--csv " + csvDir, fs::exists(up, ec) ? up.string() + " is not a folder; nothing exported"
                                                            : "the folder " + up.string() +
                                                                  " does not exist (only the last folder of the "
                                                                  "path is created); nothing exported");
  ec.clear();
  const bool made = fs::create_directory(csvDir, ec);
  if (ec) throw StoreError("--csv " + csvDir, "cannot create the directory: " + ec.message() + "; nothing exported", true);
  // A folder the export makes is the user's alone (0700), whatever the umask.
  if (made) fs::permissions(csvDir, fs::perms::owner_all, fs::perm_options::replace, ec);
  return made;
}

}  // namespace

int exportCommand(const ExportOptions& o) {
  try {
    if (o.csvDir.empty() && o.jsonFile.empty() && o.chromeTrace.empty())
      throw ConfigError("export", "nothing to export: give --csv DIR, --json FILE and/or --chrome-trace FILE");
    auto opened = RunStore::openReadOnly(dbPath(o.db));  // never writes
    RunStore& store = *opened;
    auto r = store.getRun(o.run);
    if (!r) throw StoreError(store.path(), "no run with id " + std::to_string(o.run), true);
    const RunContent c{*r, store.metricKeys(o.run), store.stageMetricKeys(o.run), store.loadTrace(o.run), store.loadLog(o.run)};
    checkTargets(o, c);
    std::vector<ExportFile> files;  // written together at the end, or not at all
    if (!o.csvDir.empty()) addCsvFiles(o, store, c, files);
    if (!o.jsonFile.empty())
      files.push_back({"--json " + o.jsonFile, "the export file", o.jsonFile, exportJson(o, store, c).dump() + "\n"});
    if (!o.chromeTrace.empty())
      files.push_back({"--chrome-trace " + o.chromeTrace, "the trace file", o.chromeTrace, measuredChromeTrace(c).dump() + "\n"});
    checkDistinctPaths(files);
    const bool madeCsvDir = makeCsvDirectory(o.csvDir);
    try {
      writeAllOrNothing(files);
    } catch (...) {
      std::error_code ec;
      if (madeCsvDir) fs::remove(o.csvDir, ec);  // only if still empty
      throw;
    }
    std::fprintf(stderr, "exported run %lld (%zu metric keys, %zu trace records)\n", static_cast<long long>(o.run), c.keys.size(),
                 c.trace.size());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

}  // namespace pm::cli
