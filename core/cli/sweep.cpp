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
#include <set>

#include "core/analysis/sweep_tags.h"
#include "core/cli/commands.h"
#include "core/config/experiment.h"
#include "core/engine/batch_source.h"
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

std::vector<std::vector<std::string>> gridPoints(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> points{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        auto q = p;
        q.push_back(axis.key + "=" + v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
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

void printSweepTable(const std::vector<RunRecord>& runs, const std::string& sweepId) {
  const auto keys = sweepKeys(runs);
  std::printf("sweep %s: %zu run(s), swept %s\n", sweepId.c_str(), runs.size(), keys.empty() ? "-" : join(keys, ", ").c_str());
  std::vector<int> width;  // each key's column: as wide as its name and its longest value
  for (const auto& k : keys) {
    size_t w = k.size();
    for (const auto& r : runs) w = std::max(w, sweepTagValue(r, k).size());
    width.push_back(static_cast<int>(w));
  }
  for (size_t i = 0; i < keys.size(); ++i) std::printf("%-*s ", width[i], keys[i].c_str());
  std::printf("%5s %-11s %9s %9s  %s\n", "run", "status", "loss", "accuracy", "message");
  for (const auto& r : runs) {
    for (size_t i = 0; i < keys.size(); ++i) std::printf("%-*s ", width[i], sweepTagValue(r, keys[i]).c_str());
    std::string msg = r.status_message.size() > 60 ? r.status_message.substr(0, 59) + "~" : r.status_message;
    std::printf("%5lld %-11s %9s %9s  %s\n", static_cast<long long>(r.id), r.status.c_str(), num(r.final_loss).c_str(),
                num(r.final_accuracy).c_str(), msg.c_str());
  }
  if (keys.size() != 2) return;
  // The grid as a matrix: rows = first key, columns = second key.
  const bool acc = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return !std::isnan(r.final_accuracy); });
  std::vector<std::string> rows, cols;
  std::map<std::pair<std::string, std::string>, const RunRecord*> cell;
  for (const auto& r : runs) {
    const auto a = sweepTagValue(r, keys[0]), b = sweepTagValue(r, keys[1]);
    if (std::find(rows.begin(), rows.end(), a) == rows.end()) rows.push_back(a);
    if (std::find(cols.begin(), cols.end(), b) == cols.end()) cols.push_back(b);
    cell[{a, b}] = &r;
  }
  std::printf("\nfinal %s (rows %s, columns %s; D = diverged, F = failed, S = stopped):\n", acc ? "accuracy" : "loss",
              keys[0].c_str(), keys[1].c_str());
  int rowWidth = 12, colWidth = 10;
  for (const auto& rv : rows) rowWidth = std::max(rowWidth, static_cast<int>(rv.size()));
  for (const auto& c : cols) colWidth = std::max(colWidth, static_cast<int>(c.size()));
  std::printf("%-*s", rowWidth, "");
  for (const auto& c : cols) std::printf(" %*s", colWidth, c.c_str());
  std::printf("\n");
  for (const auto& rv : rows) {
    std::printf("%-*s", rowWidth, rv.c_str());
    for (const auto& c : cols) {
      auto it = cell.find({rv, c});
      std::string s = "";
      if (it != cell.end()) {
        const RunRecord& r = *it->second;
        if (r.status == "diverged") s = "D";
        else if (r.status == "failed") s = "F";
        else if (r.status == "stopped" || r.status == "interrupted") s = "S";
        else if (r.status == "running" || r.status == "created") s = "...";
        else s = num(acc ? r.final_accuracy : r.final_loss);
      }
      std::printf(" %*s", colWidth, s.c_str());
    }
    std::printf("\n");
  }
}

int sweepCommand(const SweepOptions& o, const std::atomic<bool>* stop) {
  try {
    if (o.grids.empty()) throw ConfigError("sweep", "no --grid given (for example --grid optimizer.lr=0.01,0.1)");
    checkTags(o.tags);
    if (o.parallel < 1) throw ConfigError("--parallel", "must be at least 1");
    std::vector<GridAxis> axes;
    std::set<std::string> seen;
    for (const auto& g : o.grids) {
      axes.push_back(parseGridAxis(g));
      if (!seen.insert(axes.back().key).second) throw ConfigError("--grid " + g, "sweeps " + axes.back().key + " twice");
    }
    const auto points = gridPoints(axes);
    // Every point is validated before anything runs (exit 2, nothing recorded).
    const Json base = loadExperimentJson(o.file);
    std::string expName;
    for (const auto& p : points) {
      std::vector<std::string> sets = o.overrides;
      sets.insert(sets.end(), p.begin(), p.end());
      try {
        Experiment e = experimentFromJson(applyOverrides(base, sets), o.file + " (grid point " + join(p, " ") + ")");
        expName = e.name;
        checkDataAvailable(e);  // a missing dataset stops the sweep here, not as failed runs
      } catch (const ConfigError& err) {
        throw ConfigError(err.place(), err.problem() + " [grid point " + join(p, " ") + "]");
      } catch (const DataError& err) {
        throw DataError(err.place(), err.problem() + " [grid point " + join(p, " ") + "]");
      }
    }
    const std::string db = o.db.empty() ? defaultDatabasePath() : o.db;
    RunStore store(db);  // fails here (exit 2) for a bad database, before any run starts
    const std::string id = newSweepId();
    const std::string exe = o.runner.empty() ? selfExecutable() : o.runner;
    std::fprintf(stderr, "sweep %s: %zu run(s) of %s, %d at a time, recording into %s\n", id.c_str(), points.size(),
                 o.file.c_str(), o.parallel, store.path().c_str());

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
    // After a stop the points not started stay so: wait only for the running ones.
    while ((!stopping && next < points.size()) || !running.empty()) {
      if (stop && stop->load() && !stopping) {
        stopping = true;
        std::fprintf(stderr, "sweep %s: stopping %zu run(s); %zu not started\n", id.c_str(), running.size(), points.size() - next);
        for (auto& c : running) ::kill(c.pid, SIGTERM);
      }
      while (!stopping && next < points.size() && static_cast<int>(running.size()) < o.parallel) {
        const auto& p = points[next];
        std::vector<std::string> args{exe, "run", o.file, "--db", db, "--quiet", "--sweep-id", id, "--name",
                                      (o.name.empty() ? expName : o.name) + " [" + join(p, " ") + "]"};
        for (const auto& s : o.overrides) {
          args.push_back("--set");
          args.push_back(s);
        }
        for (const auto& t : o.tags) {
          args.push_back("--tag");
          args.push_back(t);
        }
        for (const auto& s : p) {
          args.push_back("--set");
          args.push_back(s);
          args.push_back("--tag");
          args.push_back(s);
        }
        Child c{next, -1, -1, -1, {}, {}, {}, {}, monotonicSeconds()};
        c.pid = spawnProcess(args, c.outFd, c.errFd, "sweep");
        std::fprintf(stderr, "[%zu/%zu] started %s\n", next + 1, points.size(), join(p, " ").c_str());
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
          std::fprintf(stderr, "[%zu/%zu] %s: %s%s%s (%s; %zu of %zu done)\n", c.point + 1, points.size(), join(points[c.point], " ").c_str(),
                       c.statusLine.empty() ? "no run recorded" : c.statusLine.c_str(), c.lastErr.empty() ? "" : "; ",
                       c.lastErr.c_str(), formatDuration(monotonicSeconds() - c.start).c_str(), done, points.size());
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
    printSweepTable(runs, id);
    std::printf("(see again: pipemare runs list --sweep %s)\n", id.c_str());
    if (stopping) {
      if (next < points.size()) {
        std::fprintf(stderr, "sweep %s: stopped; not started:", id.c_str());
        for (size_t i = next; i < points.size(); ++i) std::fprintf(stderr, "%s %s", i == next ? "" : ";", join(points[i], " ").c_str());
        std::fprintf(stderr, "\n");
      }
      return 130;
    }
    // From the store: a diverged run is a result of the sweep (the stability map's D cells), a
    // failed one (or a point that recorded none) is not.
    const auto count = [&runs](const char* status) {
      return static_cast<int>(std::count_if(runs.begin(), runs.end(), [&](const RunRecord& r) { return r.status == status; }));
    };
    const int diverged = count("diverged"), failed = count("failed") + count("interrupted") + noRun;
    if (diverged > 0) std::fprintf(stderr, "sweep %s: %d run(s) diverged (recorded as results)\n", id.c_str(), diverged);
    if (failed > 0) std::fprintf(stderr, "sweep %s: %d run(s) failed\n", id.c_str(), failed);
    return failed > 0 ? 1 : 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", ex.what());
    if (auto* e = dynamic_cast<const Error*>(&ex)) return e->exitCode();
    return 1;
  }
}

}  // namespace pm::cli
