// pipemare runs list | show | tag | note | delete | import: the runs of a store.
#include <algorithm>
#include <cstdio>

#include "core/analysis/sweep_tags.h"
#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/cli/sweep.h"
#include "core/store/run_store.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

// The runs of one sweep in id order, with the points of its recorded grid that have not started.
void printSweepRuns(const RunStore& store, std::vector<RunRecord> runs, const std::string& sweep) {
  if (runs.empty()) throw StoreError(store.path(), "no runs of sweep \"" + sweep + "\"", true);
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  if (const auto def = store.sweepDefinition(sweep))  // the grid as recorded: its points not started too
    for (auto& r : notStartedPoints(runs, sweepDefinitionFromJson(*def, store.path() + " (sweep " + sweep + ")").grid))
      runs.push_back(std::move(r));
  printSweepTable(runs, sweep);
}

// One line per run. The name column is as wide as the longest name, up to 48 characters (longer
// ones keep their head and tail). Stored text is shown escaped (escapeForTerminal); --json gives it
// exactly.
void printRunTable(const std::vector<RunRecord>& runs) {
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
                padText(fitText(names[i], nameWidth), nameWidth).c_str(), toString(r.status),
                escapeForTerminal(r.model).c_str(), escapeForTerminal(r.schedule).c_str(), r.stages, r.microbatches,
                fmtNum(r.final_loss).c_str(), fmtNum(r.final_accuracy).c_str(), fmtTime(r.created_at).c_str(),
                escapeForTerminal(join(r.tags, ",")).c_str());
  }
}

}  // namespace

int runsListCommand(const ListOptions& o) {
  try {
    if (o.db.empty() && !fileExists(dbPath(o.db)) && o.sweep.empty()) {  // nothing recorded yet on this machine
      if (o.json)
        std::printf("[]\n");
      else
        std::printf("0 run(s): no run store yet at %s (pipemare run records there)\n", escapeForTerminal(dbPath(o.db)).c_str());
      return 0;
    }
    // Read-only: listing never writes (a full disk, a read-only file system). A run whose launcher
    // is gone is listed as interrupted, as the next command that writes will record it.
    auto opened = RunStore::openReadOnly(dbPath(o.db));
    RunStore& store = *opened;
    RunFilter f{o.status, o.tag, o.sweep, o.text};
    std::vector<RunRecord> runs;
    const auto dead = store.deadRuns();
    for (auto& r : store.listRuns(RunFilter{"", o.tag, o.sweep, o.text})) {
      for (const auto& [id, pid] : dead)
        if (r.id == id) {
          r.status = RunStatus::Interrupted;
          r.status_message = RunStore::deadLauncherMessage(pid);
        }
      if (f.status.empty() || f.status == toString(r.status)) runs.push_back(std::move(r));
    }
    if (o.json) {
      Json arr = Json::array();
      for (const auto& r : runs) arr.push_back(runJson(r));
      std::printf("%s\n", arr.dump(2).c_str());
      return 0;
    }
    if (!o.sweep.empty()) {
      printSweepRuns(store, std::move(runs), o.sweep);
      return 0;
    }
    printRunTable(runs);
    std::printf("%zu run(s) in %s\n", runs.size(), escapeForTerminal(store.path()).c_str());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

int runsShowCommand(const std::string& db, int64_t run, bool json) {
  try {
    auto opened = RunStore::openReadOnly(dbPath(db));
    RunStore& store = *opened;
    auto r = store.getRun(run);
    if (!r) throw StoreError(store.path(), "no run with id " + std::to_string(run), true);
    if (json) {
      Json j = runJsonWithConfig(*r);
      // The TorchScript file the model was read from; null for a zoo model.
      j["model_file"] = r->model_file.path.empty()
                            ? Json(nullptr)
                            : Json{{"path", r->model_file.path}, {"size", r->model_file.size}, {"sha256", r->model_file.sha256}};
      // What the engine that ran it was built on; null when not recorded.
      j["build"] = r->build.torch.empty() ? Json(nullptr) : engineBuildJson(r->build);
      Json metrics = Json::object();
      for (const auto& k : store.metricKeys(run)) metrics[k] = store.loadMetric(run, k).size();
      j["metrics"] = metrics;
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    // Stored text is shown escaped (escapeForTerminal: a newline in the notes reads \n); --json gives it exactly.
    const auto shown = [](const std::string& s) { return escapeForTerminal(s); };
    std::printf("run %lld: %s\n  status: %s%s%s\n  model %s, schedule %s, P=%d, N=%d\n  created %s, started %s, finished %s\n",
                static_cast<long long>(r->id), shown(r->name).c_str(), toString(r->status),
                r->status_message.empty() ? "" : " - ", shown(r->status_message).c_str(), shown(r->model).c_str(),
                shown(r->schedule).c_str(), r->stages, r->microbatches, fmtTime(r->created_at).c_str(),
                fmtTime(r->started_at).c_str(), fmtTime(r->finished_at).c_str());
    std::printf("  host %s, revision %s\n  built on: %s\n  tags: %s\n  notes: %s\n", shown(r->host).c_str(),
                shown(r->revision).c_str(), shown(engineBuildText(r->build)).c_str(), shown(join(r->tags, ", ")).c_str(),
                shown(r->notes).c_str());
    if (!r->model_file.path.empty())
      std::printf("  model file: %s (%lld bytes, sha256 %s)\n", shown(r->model_file.path).c_str(),
                  static_cast<long long>(r->model_file.size), shown(r->model_file.sha256).c_str());
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
    if (rec->status == RunStatus::Running)  // its launcher (alive: dead ones were just marked) still records into it
      throw ConfigError("runs delete " + std::to_string(run), std::string("the run is ") + toString(rec->status) + " (launcher pid " +
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
    std::vector<std::pair<int64_t, int64_t>> skipped, refreshed;
    const auto ids = store.importRuns(other, &skipped, &refreshed);
    std::printf("imported %zu run(s) from %s into %s\n", ids.size(), escapeForTerminal(other).c_str(),
                escapeForTerminal(store.path()).c_str());
    for (const auto& [from, to] : ids) std::printf("  run %lld -> %lld\n", static_cast<long long>(from), static_cast<long long>(to));
    if (!refreshed.empty())
      std::printf("refreshed %zu run(s) copied before while they were still going (they have ended since):\n", refreshed.size());
    for (const auto& [from, here] : refreshed)
      std::printf("  run %lld is run %lld here\n", static_cast<long long>(from), static_cast<long long>(here));
    if (!skipped.empty()) std::printf("skipped %zu run(s) this store already has:\n", skipped.size());
    for (const auto& [from, here] : skipped)
      std::printf("  run %lld is run %lld here\n", static_cast<long long>(from), static_cast<long long>(here));
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

}  // namespace pm::cli
