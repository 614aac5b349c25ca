#include "core/cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>

#include "core/cli/sweep.h"
#include "core/config/experiment.h"
#include "core/engine/batch_source.h"
#include "core/events/node_link.h"
#include "core/config/model_catalog.h"
#include "core/models/model_zoo.h"
#include "core/planner/chrome_trace.h"
#include "core/runner/local_run.h"
#include "core/runner/progress_printer.h"
#include "core/runner/worker_main.h"
#include "core/store/run_store.h"
#include "core/util/errors.h"
#include "core/util/net.h"
#include "core/util/paths.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

std::string dbPath(const std::string& db) { return db.empty() ? defaultDatabasePath() : db; }

// Messages quote names, paths and values as given: escaped, so that they cannot steer the terminal.
int reportError(const std::exception& ex) {
  std::fprintf(stderr, "error: %s\n", escapeForTerminal(ex.what()).c_str());
  if (auto* e = dynamic_cast<const Error*>(&ex)) return e->exitCode();
  return 1;
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

std::string fmtNum(double v, const char* f = "%.4f") {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

Json runJson(const RunRecord& r) {
  auto nanOrNull = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
  return Json{{"id", r.id},
              {"name", r.name},
              {"status", r.status},
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

}  // namespace

// With --events stdout, an error before the run exists (bad experiment, store, usage) is an event
// too, so that a client reading only the stream learns why nothing ran.
void emitStartError(const std::exception& ex) {
  Json ev = makeErrorEvent(ex);
  const auto* err = dynamic_cast<const Error*>(&ex);
  ev["place"] = err ? err->place() : std::string();
  ev["exit_code"] = err ? err->exitCode() : 1;
  ev["before_run"] = true;
  JsonLinesSink sink(stdout);
  sink.emit(ev);
  sink.flush();
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

int runCommand(const RunOptions& o, const std::atomic<bool>* stop) {
  bool runStarted = false;
  try {
    if (o.sweepId.empty()) checkTags(o.tags);
    if (!o.name.empty() && (trim(o.name).empty() || textLength(o.name) > 200))  // the format's rule for names
      throw ConfigError("--name", trim(o.name).empty() ? "a run name must not be blank"
                                                       : "a run name has at most 200 characters, found " +
                                                             std::to_string(textLength(o.name)));
    if (o.resume > 0 && (!o.file.empty() || !o.overrides.empty()))
      throw ConfigError("--resume", "continues a stored run with its stored configuration: give no experiment file or --set");
    if (o.resume <= 0 && o.file.empty()) throw ConfigError("run", "give an experiment file (or --resume RUN)");
    if (o.nnodes < 1 || o.nodeRank < 0 || o.nodeRank >= o.nnodes)
      throw ConfigError("--node-rank", "must be in 0.." + std::to_string(o.nnodes - 1) + " for --nnodes " + std::to_string(o.nnodes));
    if (o.nnodes > 1 && o.masterPort <= 0) throw ConfigError("--master-port", "a multi-node run needs the same --master-port on every node");
    if (o.nnodes > 1) {
      checkHostResolves(o.masterAddr, "--master-addr");
      loadRunSecret(o.secretFile);  // a missing or unreadable secret: exit 2 before anything starts
    }
    if (o.nodeRank > 0) {
      // A remote share: nothing is recorded here; node 0 records the whole run.
      Experiment e = loadWithOverrides(o.file, o.overrides);
      FanoutSink sink;
      if (o.events == "stdout") sink.add(std::make_shared<JsonLinesSink>(stdout));
      std::fprintf(stderr, "node %d of %d: starting ranks of \"%s\"; node 0 at %s:%d records the run\n", o.nodeRank, o.nnodes,
                   escapeForTerminal(e.name).c_str(), escapeForTerminal(o.masterAddr).c_str(), o.masterPort);
      RunOutcome out = runRemoteShare(e, o.nnodes, o.nodeRank, o.masterAddr, o.masterPort, sink, stop, o.saveState, o.secretFile);
      std::fprintf(stderr, "node %d: %s%s%s\n", o.nodeRank, out.status.c_str(), out.message.empty() ? "" : ": ",
                   escapeForTerminal(out.message).c_str());
      return out.status == "finished" ? 0 : out.status == "stopped" ? 130 : 1;
    }
    if (!o.db.empty()) ensureParentDirectory(o.db, "--db " + o.db);  // errors name the option
    RunStore store(dbPath(o.db));
    store.markDeadRunsInterrupted();
    Experiment e;
    if (o.resume > 0) {
      auto rec = store.getRun(o.resume);
      if (!rec) throw StoreError(store.path(), "no run with id " + std::to_string(o.resume), true);
      checkResumable(*rec);  // before the banner
      e = storedExperiment(*rec);
    } else {
      e = loadWithOverrides(o.file, o.overrides);
    }
    checkDataAvailable(e);  // a missing dataset: exit 2 before a run is recorded
    LocalRunRequest req;
    req.resumeRun = o.resume;
    req.nnodes = o.nnodes;
    req.masterAddr = o.masterAddr;
    req.masterPort = o.masterPort;
    req.secretFile = o.secretFile;
    req.experiment = e;
    req.runName = o.name;
    req.saveStateDir = o.saveState;
    req.extraTags = o.tags;
    req.sweepId = o.sweepId;
    if (o.events == "stdout") req.extraSinks.push_back(std::make_shared<JsonLinesSink>(stdout));
    if (!o.quiet) req.extraSinks.push_back(std::make_shared<ProgressPrinter>(stderr));
    std::fprintf(stderr, "%s \"%s\": %s, %d stage(s), %d microbatch(es), %s, %s mode, recording into %s\n",
                 o.resume > 0 ? "resume" : "run", escapeForTerminal(o.name.empty() ? e.name : o.name).c_str(),
                 e.model.name.c_str(), e.pipeline.stages, e.pipeline.microbatches, e.pipeline.schedule.c_str(),
                 e.execution.mode.c_str(), escapeForTerminal(store.path()).c_str());
    runStarted = true;
    LocalRunResult r = runLocally(store, req, stop);
    const auto& s = r.outcome.summary;
    const std::string& message = r.outcome.message;
    std::fprintf(stderr, "run %lld %s%s%s\n", static_cast<long long>(r.runId), r.outcome.status.c_str(),
                 message.empty() ? "" : ": ", escapeForTerminal(message).c_str());
    if (s.is_object() && s.contains("samples_per_s")) {
      std::fprintf(stderr, "  final loss %s, accuracy %s, %.0f samples/s over %s (start-up and evaluation included)\n",
                   fmtNum(s.value("final_loss", NAN)).c_str(),
                   fmtNum(s["final_accuracy"].is_number() ? s["final_accuracy"].get<double>() : NAN).c_str(),
                   s.value("samples_per_s", 0.0), formatDuration(s.value("wall_s", 0.0)).c_str());
    }
    std::fprintf(stderr, "stored as run %lld in %s (see: pipemare runs show %lld)\n", static_cast<long long>(r.runId),
                 escapeForTerminal(store.path()).c_str(), static_cast<long long>(r.runId));
    if (r.outcome.status == "finished") return 0;
    if (r.outcome.status == "stopped") return 130;
    return 1;
  } catch (const std::exception& ex) {
    if (o.events == "stdout" && !runStarted) emitStartError(ex);
    return reportError(ex);
  }
}

int validateCommand(const std::string& file, const std::vector<std::string>& overrides) {
  try {
    Experiment e = loadWithOverrides(file, overrides);
    std::printf("%s: valid (%s, %s, P=%d, N=%d)\n", escapeForTerminal(file).c_str(), e.model.name.c_str(),
                e.pipeline.schedule.c_str(), e.pipeline.stages, e.pipeline.microbatches);
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsListCommand(const ListOptions& o) {
  try {
    if (o.db.empty() && !fileExists(dbPath(o.db)) && o.sweep.empty()) {  // nothing recorded yet on this machine
      if (o.json)
        std::printf("[]\n");
      else
        std::printf("0 run(s): no run store yet at %s (pipemare run records there)\n", escapeForTerminal(dbPath(o.db)).c_str());
      return 0;
    }
    auto opened = RunStore::openForReading(dbPath(o.db));
    RunStore& store = *opened;
    store.markDeadRunsInterrupted();
    RunFilter f{o.status, o.tag, o.sweep, o.text};
    auto runs = store.listRuns(f);
    if (o.json) {
      Json arr = Json::array();
      for (const auto& r : runs) arr.push_back(runJson(r));
      std::printf("%s\n", arr.dump(2).c_str());
      return 0;
    }
    if (!o.sweep.empty()) {
      if (runs.empty()) throw StoreError(store.path(), "no runs of sweep \"" + o.sweep + "\"", true);
      std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
      if (const auto def = store.sweepDefinition(o.sweep))  // the grid as recorded: its points not started too
        for (auto& r : notStartedPoints(runs, sweepDefinitionFromJson(*def, store.path() + " (sweep " + o.sweep + ")").grid))
          runs.push_back(std::move(r));
      printSweepTable(runs, o.sweep);
      return 0;
    }
    // The name column as wide as the longest name, up to 48 characters (longer ones keep their head
    // and tail). Stored text is shown escaped (escapeForTerminal); --json gives it exactly.
    std::vector<std::string> names;
    size_t nameWidth = 4;
    for (const auto& r : runs) {
      names.push_back(escapeForTerminal(r.name));
      nameWidth = std::max(nameWidth, std::min<size_t>(48, textLength(names.back())));
    }
    std::printf("%-5s %s %-11s %-9s %-13s %3s %3s %9s %9s %-19s %s\n", "id", padText("name", nameWidth).c_str(), "status",
                "model", "schedule", "P", "N", "loss", "accuracy", "created", "tags");
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      std::printf("%-5lld %s %-11s %-9s %-13s %3d %3d %9s %9s %-19s %s\n", static_cast<long long>(r.id),
                  padText(fitText(names[i], nameWidth), nameWidth).c_str(), escapeForTerminal(r.status).c_str(),
                  escapeForTerminal(r.model).c_str(), escapeForTerminal(r.schedule).c_str(), r.stages, r.microbatches,
                  fmtNum(r.final_loss).c_str(), fmtNum(r.final_accuracy).c_str(), fmtTime(r.created_at).c_str(),
                  escapeForTerminal(join(r.tags, ",")).c_str());
    }
    std::printf("%zu run(s) in %s\n", runs.size(), escapeForTerminal(store.path()).c_str());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsShowCommand(const std::string& db, int64_t run, bool json) {
  try {
    auto opened = RunStore::openForReading(dbPath(db));
    RunStore& store = *opened;
    auto r = store.getRun(run);
    if (!r) throw StoreError(store.path(), "no run with id " + std::to_string(run), true);
    if (json) {
      Json j = runJson(*r);
      j["config"] = Json::parse(r->config_json, nullptr, false);
      Json metrics = Json::object();
      for (const auto& k : store.metricKeys(run)) metrics[k] = store.loadMetric(run, k).size();
      j["metrics"] = metrics;
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    // Stored text is shown escaped (escapeForTerminal: a newline in the notes reads \n); --json gives it exactly.
    const auto shown = [](const std::string& s) { return escapeForTerminal(s); };
    std::printf("run %lld: %s\n  status: %s%s%s\n  model %s, schedule %s, P=%d, N=%d\n  created %s, started %s, finished %s\n",
                static_cast<long long>(r->id), shown(r->name).c_str(), shown(r->status).c_str(),
                r->status_message.empty() ? "" : " - ", shown(r->status_message).c_str(), shown(r->model).c_str(),
                shown(r->schedule).c_str(), r->stages, r->microbatches, fmtTime(r->created_at).c_str(),
                fmtTime(r->started_at).c_str(), fmtTime(r->finished_at).c_str());
    std::printf("  host %s, revision %s\n  tags: %s\n  notes: %s\n", shown(r->host).c_str(), shown(r->revision).c_str(),
                shown(join(r->tags, ", ")).c_str(), shown(r->notes).c_str());
    std::printf("  metrics:\n");
    for (const auto& k : store.metricKeys(run)) {
      auto pts = store.loadMetric(run, k);
      if (pts.empty()) continue;
      std::printf("    %s %6zu points, last %s at step %lld\n", padText(shown(k), 22).c_str(), pts.size(),
                  fmtNum(pts.back().value, "%.6g").c_str(), static_cast<long long>(pts.back().step));
    }
    auto log = store.loadLog(run);
    std::printf("  log (%zu lines):\n", log.size());
    for (size_t i = log.size() > 12 ? log.size() - 12 : 0; i < log.size(); ++i)
      std::printf("    [%s] %s\n", shown(log[i].level).c_str(), shown(log[i].message).c_str());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsTagCommand(const std::string& db, int64_t run, const std::vector<std::string>& tags) {
  try {
    auto opened = RunStore::openForReading(dbPath(db));  // an existing store only
    RunStore& store = *opened;
    if (!store.getRun(run)) throw StoreError(store.path(), "no run with id " + std::to_string(run), true);
    checkTags(tags);  // the experiment format's rule for tags, as for --tag
    store.setTags(run, tags);
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsNoteCommand(const std::string& db, int64_t run, const std::string& note) {
  try {
    auto opened = RunStore::openForReading(dbPath(db));  // an existing store only
    RunStore& store = *opened;
    if (!store.getRun(run)) throw StoreError(store.path(), "no run with id " + std::to_string(run), true);
    store.setNotes(run, note);
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsDeleteCommand(const std::string& db, int64_t run) {
  try {
    auto opened = RunStore::openForReading(dbPath(db));  // an existing store only
    RunStore& store = *opened;
    store.markDeadRunsInterrupted();
    const auto rec = store.getRun(run);
    if (!rec) throw StoreError(store.path(), "no run with id " + std::to_string(run), true);
    if (rec->status == "running")  // its launcher (alive: dead ones were just marked) still records into it
      throw ConfigError("runs delete " + std::to_string(run), "the run is " + rec->status + " (launcher pid " +
                                                                  std::to_string(rec->launcher_pid) + "); stop it first");
    store.deleteRun(run);
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsImportCommand(const std::string& db, const std::string& other) {
  try {
    if (!db.empty()) ensureParentDirectory(db, "--db " + db);  // errors name the option
    RunStore store(dbPath(db));
    std::vector<std::pair<int64_t, int64_t>> skipped;
    const auto ids = store.importRuns(other, &skipped);
    std::printf("imported %zu run(s) from %s into %s\n", ids.size(), escapeForTerminal(other).c_str(),
                escapeForTerminal(store.path()).c_str());
    for (const auto& [from, to] : ids) std::printf("  run %lld -> %lld\n", static_cast<long long>(from), static_cast<long long>(to));
    if (!skipped.empty()) std::printf("skipped %zu run(s) this store already has:\n", skipped.size());
    for (const auto& [from, here] : skipped)
      std::printf("  run %lld is run %lld here\n", static_cast<long long>(from), static_cast<long long>(here));
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int modelsCommand(bool json) {
  try {
    Json arr = Json::array();
    if (!json) std::printf("%-9s %12s %6s  %s\n", "model", "parameters", "units", "description");
    for (const auto& m : modelCatalog()) {
      auto units = buildModel(m.name, 1);
      std::vector<std::string> names;
      Json unitJson = Json::array();
      for (const auto& u : units) {
        names.push_back(u.name);
        unitJson.push_back({{"name", u.name}, {"parameters", parameterCount(u)}});
      }
      int64_t params = parameterCount(units);
      if (json) {
        arr.push_back({{"name", m.name}, {"parameters", params}, {"units", unitJson}, {"description", m.description}});
      } else {
        std::printf("%-9s %12lld %6zu  %s\n          units: %s\n", m.name.c_str(), static_cast<long long>(params),
                    units.size(), m.description.c_str(), join(names, " ").c_str());
      }
    }
    if (json) std::printf("%s\n", arr.dump(2).c_str());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

namespace {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csvNum(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One file of an export: the option that asked for it as given ("--json out.json", "--csv DIR"),
// what the file is in messages, where it goes and what it holds.
struct ExportFile {
  std::string option, what, path, text;
};

// Writes `text` to `path`: "" when done, else why not, in the system's words.
std::string writeExportText(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return std::strerror(errno);
  int err = 0;
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0) err = errno ? errno : EIO;
  if (std::fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  return err == 0 ? std::string() : std::strerror(err);
}

// Writes every file or none: each text goes to "<path>.part" first, and only when all of them are
// written are they renamed into place, so that an unwritable --json leaves no CSV files of a
// half-done export behind and a failed write never truncates an earlier export. A target that
// exists and is not a regular file (a link, /dev/stdout, a FIFO) is written through instead, after
// every .part file is. A failure is one StoreError at the file's option (a usage error, exit 2)
// that says what is exported: nothing, or the files already in place.
void writeAllOrNothing(const std::vector<ExportFile>& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> parts(files.size());
  auto removeParts = [&parts] {
    std::error_code ec;
    for (const auto& p : parts)
      if (!p.empty()) fs::remove(p, ec);
  };
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      const ExportFile& f = files[i];
      std::error_code ec;
      const auto st = fs::symlink_status(f.path, ec);
      if (!ec && fs::exists(st) && !fs::is_regular_file(st)) continue;  // written through below
      parts[i] = f.path + ".part";
      const std::string problem = writeExportText(parts[i], f.text);
      if (!problem.empty())
        throw StoreError(f.option, "cannot write " + f.what + " (through " + parts[i] + "): " + problem + "; nothing exported",
                         true);
    }
  } catch (...) {
    removeParts();
    throw;
  }
  std::vector<std::string> done;
  for (size_t i = 0; i < files.size(); ++i) {
    const ExportFile& f = files[i];
    std::string problem;
    if (parts[i].empty()) {
      problem = writeExportText(f.path, f.text);
      if (!problem.empty()) problem = "cannot write " + f.what + ": " + problem;
    } else {
      std::error_code ec;
      fs::rename(parts[i], f.path, ec);
      if (ec) {
        problem = "cannot put " + f.what + " in place: " + ec.message();
      } else {
        parts[i].clear();
        dropWorldWritable(f.path);
      }
    }
    if (!problem.empty()) {
      removeParts();
      throw StoreError(f.option, problem + (done.empty() ? "; nothing exported" : "; already written: " + join(done, ", ")),
                       true);
    }
    done.push_back(f.path);
  }
}

}  // namespace

int exportCommand(const ExportOptions& o) {
  try {
    if (o.csvDir.empty() && o.jsonFile.empty() && o.chromeTrace.empty())
      throw ConfigError("export", "nothing to export: give --csv DIR, --json FILE and/or --chrome-trace FILE");
    RunStore store(dbPath(o.db), /*readOnly=*/true);
    auto r = store.getRun(o.run);
    if (!r) throw StoreError(store.path(), "no run with id " + std::to_string(o.run), true);
    const auto keys = store.metricKeys(o.run);
    const auto stageKeys = store.stageMetricKeys(o.run);
    const auto trace = store.loadTrace(o.run);
    const auto log = store.loadLog(o.run);
    // Refusals before anything is written.
    if (!o.chromeTrace.empty() && trace.empty())
      throw ConfigError("--chrome-trace", "run " + std::to_string(o.run) +
                                              " recorded no schedule trace (its training.trace_steps was 0, or it ended before "
                                              "its first minibatch); nothing written");
    if (!o.csvDir.empty() && std::filesystem::exists(o.csvDir) && !std::filesystem::is_directory(o.csvDir))
      throw ConfigError("--csv " + o.csvDir, "exists and is not a directory (--csv names a directory to write CSV files into)");
    for (const auto& [option, path] : {std::pair<std::string, std::string>{"--json", o.jsonFile}, {"--chrome-trace", o.chromeTrace}})
      if (!path.empty() && std::filesystem::is_directory(path))
        throw ConfigError(option + " " + path, "is a directory (give a file name)");
    std::vector<ExportFile> files;  // written together at the end, or not at all
    const auto addCsv = [&](const std::string& name, std::string text) {
      files.push_back({"--csv " + o.csvDir, name, o.csvDir + "/" + name, std::move(text)});
    };
    if (!o.csvDir.empty()) {
      std::string m = "key,step,wall_time,value\n";
      for (const auto& k : keys)
        for (const auto& p : store.loadMetric(o.run, k))
          m += csvField(k) + "," + std::to_string(p.step) + "," + csvNum(p.wall_time) + "," + csvNum(p.value) + "\n";
      addCsv("metrics.csv", m);
      std::string sm = "stage,key,step,value\n";
      for (const auto& k : stageKeys)
        for (const auto& p : store.loadStageMetric(o.run, k))
          sm += std::to_string(p.stage) + "," + csvField(k) + "," + std::to_string(p.step) + "," + csvNum(p.value) + "\n";
      addCsv("stage_metrics.csv", sm);
      std::string t = "stage,action,microbatch,start,end\n";
      for (const auto& x : trace)
        t += std::to_string(x.stage) + "," + csvField(x.action) + "," + std::to_string(x.microbatch) + "," + csvNum(x.start) +
             "," + csvNum(x.end) + "\n";
      addCsv("trace.csv", t);
      std::string l = "time,level,message\n";
      for (const auto& x : log) l += csvNum(x.time) + "," + csvField(x.level) + "," + csvField(x.message) + "\n";
      addCsv("log.csv", l);
      Json run = runJson(*r);
      run["config"] = Json::parse(r->config_json, nullptr, false);
      addCsv("run.json", run.dump(2) + "\n");
    }
    if (!o.jsonFile.empty()) {
      Json j = runJson(*r);
      j["config"] = Json::parse(r->config_json, nullptr, false);
      Json metrics = Json::object(), stageMetrics = Json::object(), tr = Json::array(), lg = Json::array();
      auto val = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
      for (const auto& k : keys) {
        Json pts = Json::array();
        for (const auto& p : store.loadMetric(o.run, k)) pts.push_back({p.step, p.wall_time, val(p.value)});
        metrics[k] = pts;
      }
      for (const auto& k : stageKeys) {
        Json pts = Json::array();
        for (const auto& p : store.loadStageMetric(o.run, k)) pts.push_back({p.stage, p.step, val(p.value)});
        stageMetrics[k] = pts;
      }
      for (const auto& x : trace) tr.push_back({{"stage", x.stage}, {"action", x.action}, {"mb", x.microbatch}, {"start", x.start}, {"end", x.end}});
      for (const auto& x : log) lg.push_back({{"time", x.time}, {"level", x.level}, {"message", x.message}});
      j["metrics"] = metrics;
      j["metrics_columns"] = {"step", "wall_time", "value"};
      j["stage_metrics"] = stageMetrics;
      j["stage_metrics_columns"] = {"stage", "step", "value"};
      j["trace"] = tr;
      j["log"] = lg;
      files.push_back({"--json " + o.jsonFile, "the export file", o.jsonFile, j.dump() + "\n"});
    }
    if (!o.chromeTrace.empty()) {
      std::vector<SimTraceRecord> recs;
      for (const auto& x : trace) recs.push_back({x.stage, x.action, x.microbatch, x.start, x.end});
      const Json traceJson =
          chromeTrace(recs, "run " + std::to_string(r->id) + " " + r->name + " (measured)", kMeasuredTraceSource);
      files.push_back({"--chrome-trace " + o.chromeTrace, "the trace file", o.chromeTrace, traceJson.dump() + "\n"});
    }
    {  // two outputs onto one file would write one over the other
      std::set<std::string> seen;
      for (const auto& f : files)
        if (!seen.insert(std::filesystem::absolute(f.path).lexically_normal().string()).second)
          throw ConfigError("export", f.path + " is named by two outputs (--csv, --json, --chrome-trace): give each its own file");
    }
    // The --csv directory is made when missing, one level only: a mistyped path is refused, not grown.
    bool madeCsvDir = false;
    if (!o.csvDir.empty() && !std::filesystem::exists(o.csvDir)) {
      std::error_code ec;
      std::filesystem::path dir(o.csvDir);
      if (!dir.has_filename()) dir = dir.parent_path();  // "out/" names the folder out
      const std::filesystem::path up = dir.parent_path();
      if (!up.empty() && !std::filesystem::is_directory(up, ec))
        throw ConfigError("--csv " + o.csvDir, std::filesystem::exists(up, ec)
                                                   ? up.string() + " is not a folder; nothing exported"
                                                   : "the folder " + up.string() + " does not exist (only the last folder of the "
                                                                                   "path is created); nothing exported");
      ec.clear();
      madeCsvDir = std::filesystem::create_directory(o.csvDir, ec);
      if (ec) throw StoreError("--csv " + o.csvDir, "cannot create the directory: " + ec.message() + "; nothing exported", true);
    }
    try {
      writeAllOrNothing(files);
    } catch (...) {
      std::error_code ec;
      if (madeCsvDir) std::filesystem::remove(o.csvDir, ec);  // only if still empty
      throw;
    }
    std::fprintf(stderr, "exported run %lld (%zu metric keys, %zu trace records)\n", static_cast<long long>(o.run), keys.size(),
                 trace.size());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int workerCommand(const WorkerArgs& a) {
  WorkerOptions o;
  o.config = a.config;
  o.rank = a.rank;
  o.worldSize = a.worldSize;
  o.masterAddr = a.masterAddr;
  o.masterPort = a.masterPort;
  o.storeFile = a.storeFile;
  o.saveStateDir = a.saveState;
  o.checkpointDir = a.checkpointDir;
  o.resumeStep = a.resumeStep;
  return workerMain(o);
}

}  // namespace pm::cli
