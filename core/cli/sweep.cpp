// pipemare sweep: every point of a grid as its own `pipemare run` child process, and resuming a
// sweep's points that did not run to their end.
#include "core/cli/sweep.h"
#include "core/analysis/stored_run.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <set>

#include "core/analysis/sweep_tags.h"
#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/cli/sweep_points.h"
#include "core/config/experiment.h"
#include "core/engine/input_check.h"
#include "core/runner/local_run.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/process.h"
#include "core/util/strings.h"

namespace pm::cli {

namespace {
// The whole text as a finite number ("0.1", "1e-1"); false for anything else ("adam", "2x").
bool parseDouble(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end && end != text.c_str() && *end == '\0' && std::isfinite(out);
}
}  // namespace

GridAxis parseGridAxis(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= spec.size())
    throw ConfigError("--grid " + spec, "expected key=value1,value2,... (for example optimizer.lr=0.01,0.1)");
  GridAxis a;
  a.key = trim(spec.substr(0, eq));
  for (const auto& v : split(spec.substr(eq + 1), ',')) {
    const std::string t = trim(v);
    if (t.empty()) throw ConfigError("--grid " + spec, "has an empty value");
    if (std::find(a.values.begin(), a.values.end(), t) != a.values.end())
      throw ConfigError("--grid " + spec, "lists the value \"" + t + "\" twice");
    // 0.1, 1e-1 and 0.10 are one number: three identical runs under different tags.
    double x = 0;
    if (parseDouble(t, x))
      for (const auto& earlier : a.values) {
        double y = 0;
        if (parseDouble(earlier, y) && x == y)
          throw ConfigError("--grid " + spec, "lists the same number twice (\"" + earlier + "\" and \"" + t + "\")");
      }
    a.values.push_back(t);
  }
  return a;
}

namespace {

using GridPoints = std::vector<std::vector<std::string>>;

std::string newSweepId() {
  time_t now = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string("sweep-") + b + "-" + std::to_string(getpid() % 10000);
}

// One grid point to run: fresh, or by resuming the point's stopped run from its checkpoint.
struct Work {
  size_t point;            // index into the grid's points
  int64_t resumeRun = 0;   // > 0: `run --resume` this run
};

// The newest run of `runs` on each of `points` (nullptr where none is).
std::vector<const RunRecord*> newestOnPoints(const std::vector<RunRecord>& runs, const GridPoints& points) {
  std::vector<const RunRecord*> out(points.size(), nullptr);
  for (size_t i = 0; i < points.size(); ++i)
    for (const auto& r : runs)
      if (runOnPoint(r, points[i]) && (!out[i] || r.id > out[i]->id)) out[i] = &r;
  return out;
}

// A temporary copy of a resumed sweep's experiment, removed when the sweep ends.
struct TempExperiment {
  std::string dir, path;
  TempExperiment() = default;
  TempExperiment(const TempExperiment&) = delete;
  TempExperiment& operator=(const TempExperiment&) = delete;
  ~TempExperiment() {
    if (!path.empty()) ::unlink(path.c_str());
    if (!dir.empty()) ::rmdir(dir.c_str());
  }
};

// A sweep ready to run: new (from the options) or resumed (from what the store recorded).
struct Sweep {
  SweepDefinition def;
  std::string id, file;           // file: what each point's `pipemare run` reads
  std::vector<Work> work;         // the points to run, in grid order
  std::unique_ptr<RunStore> store;
  TempExperiment temp;
};

// --resume ID: the points of the sweep to run again. A point without a run runs afresh; one whose
// newest run stopped, failed or was interrupted resumes from its checkpoint when it has one (as
// `run --resume`), else runs from the start. A point still running refuses the resume.
std::vector<Work> pointsToResume(const RunStore& store, const std::string& id, const std::vector<RunRecord>& runs,
                                 const GridPoints& points) {
  std::vector<Work> work;
  const auto newest = newestOnPoints(runs, points);
  for (size_t i = 0; i < points.size(); ++i) {
    const RunRecord* r = newest[i];
    if (!r) {
      work.push_back({i, 0});
    } else if (r->status == RunStatus::Running || r->status == RunStatus::Created) {
      throw ConfigError("--resume " + id, "run " + std::to_string(r->id) + " (" + join(points[i], " ") +
                                              ") is still running; resume the sweep after it has ended");
    } else if (isResumable(r->status)) {  // stopped, failed or interrupted
      const int stages = readStoredExperiment(*r).experiment.pipeline.stages;
      const bool resumable = resumableStep(store.path(), *r, stages) > 0;
      work.push_back({i, resumable ? r->id : 0});
    }
  }
  return work;
}

// The experiment as it was when the sweep started: the file itself when unchanged, else a
// temporary copy of the recorded one.
void useRecordedExperiment(Sweep& s) {
  bool same = false;
  if (fileExists(s.def.file)) try {
      same = loadExperimentJson(s.def.file) == s.def.experiment;
    } catch (const Error&) {
    }
  if (same) {
    s.file = s.def.file;
    return;
  }
  std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/pipemare-sweep-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw StoreError(tmpl, "cannot create a temporary directory for the sweep's experiment");
  s.temp.dir = tmpl;
  s.temp.path = s.temp.dir + "/experiment.json";
  std::FILE* f = std::fopen(s.temp.path.c_str(), "w");
  if (!f) throw StoreError(s.temp.path, "cannot write the sweep's experiment");
  const std::string body = s.def.experiment.dump(2) + "\n";
  std::fwrite(body.data(), 1, body.size(), f);
  std::fclose(f);
  s.file = s.temp.path;
  if (!s.work.empty())
    std::fprintf(stderr, "sweep %s: %s has changed or is gone since the sweep started; its points run the experiment as "
                         "recorded then\n", escapeForTerminal(s.id).c_str(), escapeForTerminal(s.def.file).c_str());
}

// --resume ID: the sweep as the store recorded it, and its points to run again.
void prepareResumedSweep(const SweepOptions& o, const std::string& db, Sweep& s) {
  if (!o.file.empty() || !o.grids.empty() || !o.overrides.empty() || !o.tags.empty() || !o.name.empty())
    throw ConfigError("--resume " + o.resume, "a resumed sweep keeps its own file, grid, --set, --tag and --name; give only "
                                              "--resume ID (with --parallel and --db if needed)");
  if (!fileExists(db)) throw StoreError(db, "no run store here (nothing to resume)", true);
  s.store = std::make_unique<RunStore>(db);
  s.store->markDeadRunsInterrupted();
  s.id = o.resume;
  // Held by this process from here to its end (SweepHold in sweepCommand): a second resume of the
  // sweep at once is refused before it chooses any point.
  if (s.store->sweepDefinition(s.id)) {
    std::string holder;
    if (!s.store->claimSweep(s.id, static_cast<int64_t>(::getpid()), &holder))
      throw ConfigError("--resume " + s.id, "the sweep is running in " + holder + "; resume it after that process has ended");
  }
  RunFilter f;
  f.sweep_id = s.id;
  const auto runs = s.store->listRuns(f);
  const auto text = s.store->sweepDefinition(s.id);
  if (!text)
    throw StoreError(db, runs.empty() ? "no sweep \"" + s.id + "\" (see: pipemare runs list)"
                                      : "sweep \"" + s.id + "\" was made by an older PipeMare, which did not record its grid; "
                                        "it cannot be resumed (run the missing points with a new sweep)",
                     true);
  s.def = sweepDefinitionFromJson(*text, db + " (sweep " + s.id + ")");
  s.work = pointsToResume(*s.store, s.id, runs, gridPoints(s.def.grid));
  useRecordedExperiment(s);
}

// A new sweep: its grid from --grid, every point to run.
void prepareNewSweep(const SweepOptions& o, Sweep& s) {
  if (o.file.empty()) throw ConfigError("sweep", "no experiment file given (or --resume ID to continue a sweep)");
  if (o.grids.empty()) throw ConfigError("sweep", "no --grid given (for example --grid optimizer.lr=0.01,0.1)");
  checkTags(o.tags);
  std::set<std::string> seen;
  for (const auto& g : o.grids) {
    s.def.grid.push_back(parseGridAxis(g));
    if (!seen.insert(s.def.grid.back().key).second) throw ConfigError("--grid " + g, "sweeps " + s.def.grid.back().key + " twice");
  }
  s.def.file = s.file = o.file;
  s.def.experiment = loadExperimentJson(o.file);
  s.def.overrides = o.overrides;
  s.def.tags = o.tags;
  s.def.name = o.name;
  for (size_t i = 0; i < gridPoints(s.def.grid).size(); ++i) s.work.push_back({i, 0});
}

// Every point that starts afresh is validated before anything runs (exit 2, nothing recorded).
// Returns the experiment's name (the prefix of the runs' names).
std::string checkPoints(const Sweep& s, const GridPoints& points) {
  std::string expName;
  for (const auto& w : s.work) {
    const auto& p = points[w.point];
    std::vector<std::string> sets = s.def.overrides;
    sets.insert(sets.end(), p.begin(), p.end());
    try {
      Experiment e = experimentFromJson(applyOverrides(s.def.experiment, sets), s.def.file + " (grid point " + join(p, " ") + ")");
      expName = e.name;
      if (w.resumeRun == 0) checkDataAvailable(e);  // a missing dataset stops the sweep here, not as failed runs
    } catch (const ConfigError& err) {
      throw ConfigError(err.place(), err.problem() + " [grid point " + join(p, " ") + "]");
    } catch (const DataError& err) {
      throw DataError(err.place(), err.problem() + " [grid point " + join(p, " ") + "]");
    }
  }
  return expName;
}

void printSweepStart(const SweepOptions& o, const Sweep& s, size_t pointCount) {
  if (!o.resume.empty()) {
    const auto resumed = std::count_if(s.work.begin(), s.work.end(), [](const Work& w) { return w.resumeRun > 0; });
    std::fprintf(stderr, "sweep %s: resuming: %zu of %zu point(s) to run (%zd from a checkpoint), %d at a time, recording into %s\n",
                 escapeForTerminal(s.id).c_str(), s.work.size(), pointCount, static_cast<ssize_t>(resumed), o.parallel,
                 escapeForTerminal(s.store->path()).c_str());
  } else {
    std::fprintf(stderr, "sweep %s: %zu run(s) of %s, %d at a time, recording into %s\n", escapeForTerminal(s.id).c_str(),
                 pointCount, escapeForTerminal(o.file).c_str(), o.parallel, escapeForTerminal(s.store->path()).c_str());
  }
}

// The command line of a point: `run --resume RUN`, or `run FILE` with the sweep's --set and --tag
// and the point's key=value as --set and --tag.
std::vector<std::string> pointArgs(const Sweep& s, const std::vector<std::string>& point, const Work& w, const std::string& exe,
                                   const std::string& db, const std::string& expName) {
  if (w.resumeRun > 0) return {exe, "run", "--resume", std::to_string(w.resumeRun), "--db", db, "--quiet", "--events", "stdout"};
  std::vector<std::string> args{exe, "run", s.file, "--db", db, "--quiet", "--events", "stdout", "--sweep-id", s.id, "--name",
                                (s.def.name.empty() ? expName : s.def.name) + " [" + join(point, " ") + "]"};
  for (const auto& o : s.def.overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  for (const auto& t : s.def.tags) {
    args.push_back("--tag");
    args.push_back(t);
  }
  for (const auto& kv : point) {
    args.push_back("--set");
    args.push_back(kv);
    args.push_back("--tag");
    args.push_back(kv);
  }
  return args;
}

// The sweep's work as child processes to run (runPoints).
std::vector<PointRun> pointRuns(const Sweep& s, const GridPoints& points, const std::string& exe, const std::string& db,
                                const std::string& expName) {
  std::vector<PointRun> runs;
  for (const auto& w : s.work)
    runs.push_back({w.point, join(points[w.point], " "), w.resumeRun, pointArgs(s, points[w.point], w, exe, db, expName)});
  return runs;
}

// Prints the sweep's table from the store (the points not started included) and returns its runs
// in id order.
std::vector<RunRecord> printSweepResults(RunStore& store, const Sweep& s) {
  store.markDeadRunsInterrupted();  // a point killed mid-run reads as interrupted, not running
  RunFilter f;
  f.sweep_id = s.id;
  auto runs = store.listRuns(f);
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  auto shown = runs;
  for (auto& r : notStartedPoints(runs, s.def.grid)) shown.push_back(std::move(r));
  printSweepTable(shown, s.id);
  std::printf("(see again: pipemare runs list --sweep %s)\n", escapeForTerminal(s.id).c_str());
  return runs;
}

// After a stop: the points not started, and how to continue.
void printStopped(const SweepOptions& o, const Sweep& s, const GridPoints& points, size_t next) {
  const std::string id = escapeForTerminal(s.id);
  if (next < s.work.size()) {
    std::fprintf(stderr, "sweep %s: stopped; not started:", id.c_str());
    for (size_t i = next; i < s.work.size(); ++i)
      std::fprintf(stderr, "%s %s", i == next ? "" : ";", escapeForTerminal(join(points[s.work[i].point], " ")).c_str());
    std::fprintf(stderr, "\n");
  }
  std::fprintf(stderr, "sweep %s: continue it with: pipemare sweep --resume %s%s\n", id.c_str(), id.c_str(),
               o.db.empty() ? "" : (" --db " + escapeForTerminal(o.db)).c_str());
}

// From the store, the newest run of each point (the one the map shows): a diverged run is a result
// of the sweep (the stability map's D cells), a failed one (or a point that recorded none) is not.
// Returns the exit code: 1 when a point failed.
int reportOutcome(const Sweep& s, const std::vector<RunRecord>& runs, const GridPoints& points, int noRun) {
  const std::string id = escapeForTerminal(s.id);
  if (s.work.empty()) std::fprintf(stderr, "sweep %s: every grid point has already run; nothing to resume\n", id.c_str());
  int diverged = 0, failed = noRun;
  for (const RunRecord* r : newestOnPoints(runs, points)) {
    if (!r) continue;
    if (r->status == RunStatus::Diverged) ++diverged;
    if (r->status == RunStatus::Failed || r->status == RunStatus::Interrupted || r->status == RunStatus::Stopped) ++failed;
  }
  if (diverged > 0) std::fprintf(stderr, "sweep %s: %d run(s) diverged (recorded as results)\n", id.c_str(), diverged);
  if (failed > 0)
    std::fprintf(stderr, "sweep %s: %d run(s) failed (run them again: pipemare sweep --resume %s)\n", id.c_str(), failed,
                 id.c_str());
  return failed > 0 ? 1 : 0;
}

}  // namespace

// Lets go of the sweep when the command ends, however it ends.
struct SweepHold {
  RunStore* store = nullptr;
  std::string id;
  ~SweepHold() {
    try {
      if (store && !id.empty()) store->releaseSweep(id, static_cast<int64_t>(::getpid()));
    } catch (const std::exception&) {
      // a store that cannot be written any more: the next claim sees this process gone
    }
  }
};

int sweepCommand(const SweepOptions& o, const std::atomic<bool>* stop) {
  try {
    if (o.parallel < 1) throw ConfigError("--parallel", "must be at least 1");
    const bool resuming = !o.resume.empty();
    const std::string db = dbPath(o.db);
    Sweep s;
    SweepHold hold;  // after s: let go before its store closes
    if (resuming) {
      prepareResumedSweep(o, db, s);
      hold.store = s.store.get();
      hold.id = s.id;
    } else {
      prepareNewSweep(o, s);
    }
    const auto points = gridPoints(s.def.grid);
    const std::string expName = checkPoints(s, points);
    if (!s.store && !o.db.empty()) ensureParentDirectory(o.db, "--db " + o.db);  // errors name the option
    if (!s.store) s.store = std::make_unique<RunStore>(db);  // fails here (exit 2) for a bad database, before any run starts
    if (!resuming) {
      s.id = newSweepId();
      s.store->recordSweep(s.id, sweepDefinitionToJson(s.def));
      s.store->claimSweep(s.id, static_cast<int64_t>(::getpid()));
    }
    hold.store = s.store.get();
    hold.id = s.id;
    const std::string exe = o.runner.empty() ? selfExecutable() : o.runner;
    printSweepStart(o, s, points.size());
    const PointsOutcome ran = runPoints(pointRuns(s, points, exe, db, expName), points.size(), o.parallel, s.id, stop);
    const auto runs = printSweepResults(*s.store, s);
    if (ran.stopped) {
      printStopped(o, s, points, ran.started);
      return 130;
    }
    return reportOutcome(s, runs, points, ran.noRun);
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

}  // namespace pm::cli
