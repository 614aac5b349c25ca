#include "core/cli/sweep.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include "core/analysis/sweep_tags.h"
#include "core/cli/commands.h"
#include "core/config/experiment.h"
#include "core/engine/batch_source.h"
#include "core/runner/local_run.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/process.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

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

// Four decimals, or three significant digits for a value that would not fit the column (a
// diverged run's loss).
std::string num(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, std::abs(v) >= 1e4 ? "%.3g" : "%.4f", v);
  return b;
}

std::string newSweepId() {
  time_t now = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string("sweep-") + b + "-" + std::to_string(getpid() % 10000);
}

}  // namespace

// Stored text (sweep ids, swept values, messages) is shown escaped (escapeForTerminal); columns are
// measured in characters.
void printSweepTable(const std::vector<RunRecord>& runs, const std::string& sweepId) {
  const auto keys = sweepKeys(runs);
  const auto notStarted = std::count_if(runs.begin(), runs.end(), [](const RunRecord& r) { return r.id == 0; });
  std::printf("sweep %s: %zu run(s)%s, swept %s\n", escapeForTerminal(sweepId).c_str(),
              runs.size() - static_cast<size_t>(notStarted),
              notStarted ? (", " + std::to_string(notStarted) + " point(s) not started").c_str() : "",
              keys.empty() ? "-" : escapeForTerminal(join(keys, ", ")).c_str());
  const auto value = [](const RunRecord& r, const std::string& key) { return escapeForTerminal(sweepTagValue(r, key)); };
  std::vector<size_t> width;  // each key's column: as wide as its name and its longest value
  for (const auto& k : keys) {
    size_t w = textLength(escapeForTerminal(k));
    for (const auto& r : runs) w = std::max(w, textLength(value(r, k)));
    width.push_back(w);
  }
  for (size_t i = 0; i < keys.size(); ++i) std::printf("%s ", padText(escapeForTerminal(keys[i]), width[i]).c_str());
  std::printf("%5s %-11s %9s %9s  %s\n", "run", "status", "loss", "accuracy", "message");
  for (const auto& r : runs) {
    for (size_t i = 0; i < keys.size(); ++i) std::printf("%s ", padText(value(r, keys[i]), width[i]).c_str());
    const std::string message = escapeForTerminal(r.status_message);
    const std::string msg = textLength(message) > 60 ? firstChars(message, 59) + "~" : message;
    std::printf("%5s %-11s %9s %9s  %s\n", r.id > 0 ? std::to_string(r.id).c_str() : "-", escapeForTerminal(r.status).c_str(),
                num(r.final_loss).c_str(), num(r.final_accuracy).c_str(), msg.c_str());
  }
  if (keys.size() != 2) return;
  // The grid as a matrix: rows = first key, columns = second key.
  const bool acc = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return !std::isnan(r.final_accuracy); });
  std::vector<std::string> rows, cols;
  std::map<std::pair<std::string, std::string>, const RunRecord*> cell;
  for (const auto& r : runs) {
    const auto a = value(r, keys[0]), b = value(r, keys[1]);
    if (std::find(rows.begin(), rows.end(), a) == rows.end()) rows.push_back(a);
    if (std::find(cols.begin(), cols.end(), b) == cols.end()) cols.push_back(b);
    cell[{a, b}] = &r;
  }
  std::printf("\nfinal %s (rows %s, columns %s; D = diverged, F = failed, S = stopped, . = not started):\n", acc ? "accuracy" : "loss",
              escapeForTerminal(keys[0]).c_str(), escapeForTerminal(keys[1]).c_str());
  size_t rowWidth = 12, colWidth = 10;
  for (const auto& rv : rows) rowWidth = std::max(rowWidth, textLength(rv));
  for (const auto& c : cols) colWidth = std::max(colWidth, textLength(c));
  const auto right = [](const std::string& s, size_t w) {  // right-aligned in w characters
    return std::string(w > textLength(s) ? w - textLength(s) : 0, ' ') + s;
  };
  std::printf("%s", std::string(rowWidth, ' ').c_str());
  for (const auto& c : cols) std::printf(" %s", right(c, colWidth).c_str());
  std::printf("\n");
  for (const auto& rv : rows) {
    std::printf("%s", padText(rv, rowWidth).c_str());
    for (const auto& c : cols) {
      auto it = cell.find({rv, c});
      std::string s = "";
      if (it != cell.end()) {
        const RunRecord& r = *it->second;
        if (r.status == "diverged") s = "D";
        else if (r.status == "failed") s = "F";
        else if (r.status == "stopped" || r.status == "interrupted") s = "S";
        else if (r.status == "running" || r.status == "created") s = "...";
        else if (r.status == "not started") s = ".";
        else s = num(acc ? r.final_accuracy : r.final_loss);
      }
      std::printf(" %s", right(s, colWidth).c_str());
    }
    std::printf("\n");
  }
}

namespace {

// One grid point to run: fresh, or by resuming the point's stopped run from its checkpoint.
struct Work {
  size_t point;            // index into the grid's points
  int64_t resumeRun = 0;   // > 0: `run --resume` this run
};

// The newest run of `runs` on each point of `grid` (nullptr where none is).
std::vector<const RunRecord*> newestOnPoints(const std::vector<RunRecord>& runs, const std::vector<std::vector<std::string>>& points) {
  std::vector<const RunRecord*> out(points.size(), nullptr);
  for (size_t i = 0; i < points.size(); ++i)
    for (const auto& r : runs)
      if (runOnPoint(r, points[i]) && (!out[i] || r.id > out[i]->id)) out[i] = &r;
  return out;
}

// A temporary copy of a resumed sweep's experiment, removed when the sweep ends.
struct TempExperiment {
  std::string dir, path;
  ~TempExperiment() {
    if (!path.empty()) ::unlink(path.c_str());
    if (!dir.empty()) ::rmdir(dir.c_str());
  }
};

}  // namespace

int sweepCommand(const SweepOptions& o, const std::atomic<bool>* stop) {
  try {
    if (o.parallel < 1) throw ConfigError("--parallel", "must be at least 1");
    const bool resuming = !o.resume.empty();
    const std::string db = o.db.empty() ? defaultDatabasePath() : o.db;
    SweepDefinition def;
    std::string id, file;  // file: what each point's `pipemare run` reads
    std::unique_ptr<RunStore> storeHolder;
    std::vector<Work> work;
    TempExperiment temp;
    if (resuming) {
      if (!o.file.empty() || !o.grids.empty() || !o.overrides.empty() || !o.tags.empty() || !o.name.empty())
        throw ConfigError("--resume " + o.resume, "a resumed sweep keeps its own file, grid, --set, --tag and --name; give only "
                                                  "--resume ID (with --parallel and --db if needed)");
      if (!fileExists(db)) throw StoreError(db, "no run store here (nothing to resume)", true);
      storeHolder = std::make_unique<RunStore>(db);
      storeHolder->markDeadRunsInterrupted();
      id = o.resume;
      RunFilter f;
      f.sweep_id = id;
      const auto runs = storeHolder->listRuns(f);
      const auto text = storeHolder->sweepDefinition(id);
      if (!text)
        throw StoreError(db, runs.empty() ? "no sweep \"" + id + "\" (see: pipemare runs list)"
                                          : "sweep \"" + id + "\" was made by an older PipeMare, which did not record its grid; "
                                            "it cannot be resumed (run the missing points with a new sweep)",
                         true);
      def = sweepDefinitionFromJson(*text, db + " (sweep " + id + ")");
      const auto points = gridPoints(def.grid);
      const auto newest = newestOnPoints(runs, points);
      for (size_t i = 0; i < points.size(); ++i) {
        const RunRecord* r = newest[i];
        if (!r) {
          work.push_back({i, 0});
        } else if (r->status == "running" || r->status == "created") {
          throw ConfigError("--resume " + id, "run " + std::to_string(r->id) + " (" + join(points[i], " ") +
                                                  ") is still running; resume the sweep after it has ended");
        } else if (r->status == "stopped" || r->status == "failed" || r->status == "interrupted") {
          // From its checkpoint when it has one (as `run --resume`), else from the start.
          const auto e = Json::parse(r->config_json, nullptr, false);
          const int stages = e.is_object() ? e.value("/pipeline/stages"_json_pointer, 1) : 1;
          const bool resumable = resumableStep(storeHolder->path(), *r, stages) > 0;
          work.push_back({i, resumable ? r->id : 0});
        }
      }
      // The experiment as it was when the sweep started: the file itself when unchanged.
      bool same = false;
      if (fileExists(def.file)) try {
          same = loadExperimentJson(def.file) == def.experiment;
        } catch (const Error&) {
        }
      if (same) {
        file = def.file;
      } else {
        std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/pipemare-sweep-XXXXXX";
        if (!::mkdtemp(tmpl.data())) throw StoreError(tmpl, "cannot create a temporary directory for the sweep's experiment");
        temp.dir = tmpl;
        temp.path = temp.dir + "/experiment.json";
        std::FILE* f = std::fopen(temp.path.c_str(), "w");
        if (!f) throw StoreError(temp.path, "cannot write the sweep's experiment");
        const std::string body = def.experiment.dump(2) + "\n";
        std::fwrite(body.data(), 1, body.size(), f);
        std::fclose(f);
        file = temp.path;
        if (!work.empty())
          std::fprintf(stderr, "sweep %s: %s has changed or is gone since the sweep started; its points run the experiment as "
                               "recorded then\n", escapeForTerminal(id).c_str(), escapeForTerminal(def.file).c_str());
      }
    } else {
      if (o.file.empty()) throw ConfigError("sweep", "no experiment file given (or --resume ID to continue a sweep)");
      if (o.grids.empty()) throw ConfigError("sweep", "no --grid given (for example --grid optimizer.lr=0.01,0.1)");
      checkTags(o.tags);
      std::set<std::string> seen;
      for (const auto& g : o.grids) {
        def.grid.push_back(parseGridAxis(g));
        if (!seen.insert(def.grid.back().key).second) throw ConfigError("--grid " + g, "sweeps " + def.grid.back().key + " twice");
      }
      def.file = file = o.file;
      def.experiment = loadExperimentJson(o.file);
      def.overrides = o.overrides;
      def.tags = o.tags;
      def.name = o.name;
      for (size_t i = 0; i < gridPoints(def.grid).size(); ++i) work.push_back({i, 0});
    }
    const auto points = gridPoints(def.grid);
    // Every point that starts afresh is validated before anything runs (exit 2, nothing recorded).
    std::string expName;
    for (const auto& w : work) {
      const auto& p = points[w.point];
      std::vector<std::string> sets = def.overrides;
      sets.insert(sets.end(), p.begin(), p.end());
      try {
        Experiment e = experimentFromJson(applyOverrides(def.experiment, sets), def.file + " (grid point " + join(p, " ") + ")");
        expName = e.name;
        if (w.resumeRun == 0) checkDataAvailable(e);  // a missing dataset stops the sweep here, not as failed runs
      } catch (const ConfigError& err) {
        throw ConfigError(err.place(), err.problem() + " [grid point " + join(p, " ") + "]");
      } catch (const DataError& err) {
        throw DataError(err.place(), err.problem() + " [grid point " + join(p, " ") + "]");
      }
    }
    if (!storeHolder && !o.db.empty()) ensureParentDirectory(o.db, "--db " + o.db);  // errors name the option
    if (!storeHolder) storeHolder = std::make_unique<RunStore>(db);  // fails here (exit 2) for a bad database, before any run starts
    RunStore& store = *storeHolder;
    if (!resuming) {
      id = newSweepId();
      store.recordSweep(id, sweepDefinitionToJson(def));
    }
    const std::string exe = o.runner.empty() ? selfExecutable() : o.runner;
    if (resuming) {
      const auto resumed = std::count_if(work.begin(), work.end(), [](const Work& w) { return w.resumeRun > 0; });
      std::fprintf(stderr, "sweep %s: resuming: %zu of %zu point(s) to run (%zd from a checkpoint), %d at a time, recording into %s\n",
                   escapeForTerminal(id).c_str(), work.size(), points.size(), static_cast<ssize_t>(resumed), o.parallel,
                   escapeForTerminal(store.path()).c_str());
    } else {
      std::fprintf(stderr, "sweep %s: %zu run(s) of %s, %d at a time, recording into %s\n", escapeForTerminal(id).c_str(),
                   points.size(), escapeForTerminal(o.file).c_str(), o.parallel, escapeForTerminal(store.path()).c_str());
    }

    struct Child {
      size_t point;
      pid_t pid;
      int outFd, errFd;
      std::string outBuf, errBuf, lastErr, statusLine;
      double start;
    };
    std::vector<Child> running;
    size_t next = 0, done = 0;
    int noRun = 0;  // points whose process failed before it recorded a run
    bool stopping = false;
    const auto label = [&](size_t point) { return "[" + std::to_string(point + 1) + "/" + std::to_string(points.size()) + "]"; };
    // After a stop the points not started stay so: wait only for the running ones.
    while ((!stopping && next < work.size()) || !running.empty()) {
      if (stop && stop->load() && !stopping) {
        stopping = true;
        std::fprintf(stderr, "sweep %s: stopping %zu run(s); %zu not started\n", escapeForTerminal(id).c_str(), running.size(),
                     work.size() - next);
        for (auto& c : running) ::kill(c.pid, SIGTERM);
      }
      while (!stopping && next < work.size() && static_cast<int>(running.size()) < o.parallel) {
        const Work& w = work[next];
        const auto& p = points[w.point];
        std::vector<std::string> args;
        if (w.resumeRun > 0) {
          args = {exe, "run", "--resume", std::to_string(w.resumeRun), "--db", db, "--quiet"};
        } else {
          args = {exe, "run", file, "--db", db, "--quiet", "--sweep-id", id, "--name",
                  (def.name.empty() ? expName : def.name) + " [" + join(p, " ") + "]"};
          for (const auto& s : def.overrides) {
            args.push_back("--set");
            args.push_back(s);
          }
          for (const auto& t : def.tags) {
            args.push_back("--tag");
            args.push_back(t);
          }
          for (const auto& s : p) {
            args.push_back("--set");
            args.push_back(s);
            args.push_back("--tag");
            args.push_back(s);
          }
        }
        Child c{w.point, -1, -1, -1, {}, {}, {}, {}, monotonicSeconds()};
        c.pid = spawnProcess(args, c.outFd, c.errFd, "sweep");
        std::fprintf(stderr, "%s %s %s\n", label(w.point).c_str(),
                     w.resumeRun > 0 ? ("resumed run " + std::to_string(w.resumeRun) + ":").c_str() : "started",
                     escapeForTerminal(join(p, " ")).c_str());
        running.push_back(std::move(c));
        ++next;
      }
      std::vector<pollfd> fds;
      for (auto& c : running) {
        if (c.outFd >= 0) fds.push_back({c.outFd, POLLIN, 0});
        if (c.errFd >= 0) fds.push_back({c.errFd, POLLIN, 0});
      }
      if (!fds.empty()) ::poll(fds.data(), fds.size(), 200);
      else ::usleep(100 * 1000);
      for (auto it = running.begin(); it != running.end();) {
        Child& c = *it;
        bool eof = false;
        if (c.outFd >= 0) {
          drainLines(c.outFd, c.outBuf, eof);
          if (eof) {
            ::close(c.outFd);
            c.outFd = -1;
          }
        }
        eof = false;
        if (c.errFd >= 0) {
          for (const auto& l : drainLines(c.errFd, c.errBuf, eof))
            if (l.size() > 4 && l.rfind("run ", 0) == 0 && std::isdigit(static_cast<unsigned char>(l[4]))) c.statusLine = l;
            else if (!l.empty() && l.rfind("stored as", 0) != 0 && l.rfind("run \"", 0) != 0) c.lastErr = trim(l);  // not the banner
          if (eof) {
            ::close(c.errFd);
            c.errFd = -1;
          }
        }
        int st = 0;
        if (c.outFd < 0 && c.errFd < 0 && waitpid(c.pid, &st, 0) == c.pid) {
          ++done;
          const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
          if (!ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 130) && c.statusLine.empty()) ++noRun;
          // [k/N] numbers the grid point, as on its "started" line.
          std::fprintf(stderr, "%s %s: %s%s%s (%s; %zu of %zu done)\n", label(c.point).c_str(),
                       escapeForTerminal(join(points[c.point], " ")).c_str(),
                       c.statusLine.empty() ? "no run recorded" : escapeForTerminal(c.statusLine).c_str(),
                       c.lastErr.empty() ? "" : "; ",
                       escapeForTerminal(c.lastErr).c_str(), formatDuration(monotonicSeconds() - c.start).c_str(), done,
                       work.size());
          it = running.erase(it);
        } else {
          ++it;
        }
      }
    }
    store.markDeadRunsInterrupted();  // a point killed mid-run reads as interrupted, not running
    RunFilter f;
    f.sweep_id = id;
    auto runs = store.listRuns(f);
    std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
    auto shown = runs;
    for (auto& r : notStartedPoints(runs, def.grid)) shown.push_back(std::move(r));
    printSweepTable(shown, id);
    std::printf("(see again: pipemare runs list --sweep %s)\n", escapeForTerminal(id).c_str());
    if (stopping) {
      if (next < work.size()) {
        std::fprintf(stderr, "sweep %s: stopped; not started:", escapeForTerminal(id).c_str());
        for (size_t i = next; i < work.size(); ++i)
          std::fprintf(stderr, "%s %s", i == next ? "" : ";", escapeForTerminal(join(points[work[i].point], " ")).c_str());
        std::fprintf(stderr, "\n");
      }
      std::fprintf(stderr, "sweep %s: continue it with: pipemare sweep --resume %s%s\n", escapeForTerminal(id).c_str(),
                   escapeForTerminal(id).c_str(), o.db.empty() ? "" : (" --db " + escapeForTerminal(o.db)).c_str());
      return 130;
    }
    if (work.empty())
      std::fprintf(stderr, "sweep %s: every grid point has already run; nothing to resume\n", escapeForTerminal(id).c_str());
    // From the store, the newest run of each point (the one the map shows): a diverged run is a
    // result of the sweep (the stability map's D cells), a failed one (or a point that recorded
    // none) is not.
    int diverged = 0, failed = noRun;
    for (const RunRecord* r : newestOnPoints(runs, points)) {
      if (!r) continue;
      if (r->status == "diverged") ++diverged;
      if (r->status == "failed" || r->status == "interrupted" || r->status == "stopped") ++failed;
    }
    if (diverged > 0)
      std::fprintf(stderr, "sweep %s: %d run(s) diverged (recorded as results)\n", escapeForTerminal(id).c_str(), diverged);
    if (failed > 0)
      std::fprintf(stderr, "sweep %s: %d run(s) failed (run them again: pipemare sweep --resume %s)\n",
                   escapeForTerminal(id).c_str(), failed, escapeForTerminal(id).c_str());
    return failed > 0 ? 1 : 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", escapeForTerminal(ex.what()).c_str());
    if (auto* e = dynamic_cast<const Error*>(&ex)) return e->exitCode();
    return 1;
  }
}

}  // namespace pm::cli
