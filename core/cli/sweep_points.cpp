#include "core/cli/sweep_points.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "core/events/event.h"
#include "core/events/run_status.h"
#include "core/util/errors.h"
#include "core/util/process.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm::cli {
namespace {

// The child process of a point and what its events have said so far (`run --events stdout`).
struct Child {
  const PointRun* run;
  pid_t pid;
  int outFd, errFd;
  std::string outBuf, errBuf;
  int64_t runId = 0;         // the run it recorded (a log event's `run`), 0 before
  std::string status;        // run_finished's status, "" before
  std::string message;       // run_finished's message, or the error event's place and message
  std::string lastErr;       // the last line on its stderr, for people, shown when no event says why
  double start;
};

// "[k/N]": the grid point's number.
std::string label(const PointRun& r, size_t gridSize) {
  return "[" + std::to_string(r.point + 1) + "/" + std::to_string(gridSize) + "]";
}

Child startPoint(const PointRun& r, size_t gridSize) {
  Child c{&r, -1, -1, -1, {}, {}, 0, {}, {}, {}, monotonicSeconds()};
  c.pid = spawnProcess(r.args, c.outFd, c.errFd, "sweep");
  std::fprintf(stderr, "%s %s %s\n", label(r, gridSize).c_str(),
               r.resumeRun > 0 ? ("resumed run " + std::to_string(r.resumeRun) + ":").c_str() : "started",
               escapeForTerminal(r.values).c_str());
  return c;
}

// Waits up to 200 ms for output of any running child.
void waitForOutput(const std::vector<Child>& running) {
  std::vector<pollfd> fds;
  for (const auto& c : running) {
    if (c.outFd >= 0) fds.push_back({c.outFd, POLLIN, 0});
    if (c.errFd >= 0) fds.push_back({c.errFd, POLLIN, 0});
  }
  if (!fds.empty()) ::poll(fds.data(), fds.size(), 200);
  else ::usleep(100 * 1000);
}

// What one event line of the child says about its run: the run it recorded, how it ended, or
// why it could not. A line that is not an event (none should be) is left out.
void readEvent(Child& c, const std::string& line) {
  Json e;
  try {
    e = parseEventLine(line);
  } catch (const Error&) {
    return;
  }
  const std::string type = e.value("type", std::string());
  if (type == ev::kLog && e.contains("run") && e["run"].is_number_integer()) {
    c.runId = e["run"].get<int64_t>();
  } else if (type == ev::kRunFinished) {
    if (e.contains("run") && e["run"].is_number_integer()) c.runId = e["run"].get<int64_t>();
    c.status = e.value("status", std::string());
    c.message = e.value("message", std::string());
  } else if (type == ev::kError && c.message.empty()) {
    const std::string place = e.value("place", std::string());
    c.message = (place.empty() ? std::string() : place + ": ") + e.value("message", std::string());
  }
}

// Reads what the child has written: its events on stdout; of its stderr, meant for people, the
// last line.
void readOutput(Child& c) {
  bool eof = false;
  if (c.outFd >= 0) {
    for (const auto& l : drainLines(c.outFd, c.outBuf, eof)) readEvent(c, l);
    if (eof) {
      ::close(c.outFd);
      c.outFd = -1;
    }
  }
  eof = false;
  if (c.errFd >= 0) {
    for (const auto& l : drainLines(c.errFd, c.errBuf, eof))
      if (!trim(l).empty()) c.lastErr = trim(l);
    if (eof) {
      ::close(c.errFd);
      c.errFd = -1;
    }
  }
}

// How the point ended, from its events: "run 12 finished", "run 12 failed: MESSAGE", "no run
// recorded: PLACE: MESSAGE"; the last line of its stderr where no event says why.
std::string pointEnd(const Child& c) {
  std::string text = c.runId > 0 ? "run " + std::to_string(c.runId) + " " + (c.status.empty() ? "ended" : c.status)
                                  : std::string("no run recorded");
  const std::string why = !c.message.empty() ? c.message : c.status == toString(RunStatus::Finished) ? std::string() : c.lastErr;
  if (!why.empty()) text += (c.runId > 0 ? ": " : "; ") + why;
  return text;
}

// "[k/N] key=value ...: run 12 finished (1m 02s; 4 of 9 done)"; [k/N] numbers the grid point, as
// on its "started" line.
void printPointEnded(const Child& c, size_t gridSize, size_t done, size_t total) {
  std::fprintf(stderr, "%s %s: %s (%s; %zu of %zu done)\n", label(*c.run, gridSize).c_str(),
               escapeForTerminal(c.run->values).c_str(), escapeForTerminal(pointEnd(c)).c_str(),
               formatDuration(monotonicSeconds() - c.start).c_str(), done, total);
}

}  // namespace

PointsOutcome runPoints(const std::vector<PointRun>& runs, size_t gridSize, int parallel, const std::string& sweepId,
                        const std::atomic<bool>* stop) {
  PointsOutcome out;
  std::vector<Child> running;
  size_t done = 0;
  while ((!out.stopped && out.started < runs.size()) || !running.empty()) {
    if (stop && stop->load() && !out.stopped) {
      out.stopped = true;
      std::fprintf(stderr, "sweep %s: stopping %zu run(s); %zu not started\n", escapeForTerminal(sweepId).c_str(),
                   running.size(), runs.size() - out.started);
      for (auto& c : running) ::kill(c.pid, SIGTERM);
    }
    for (; !out.stopped && out.started < runs.size() && static_cast<int>(running.size()) < parallel; ++out.started)
      running.push_back(startPoint(runs[out.started], gridSize));
    waitForOutput(running);
    for (auto it = running.begin(); it != running.end();) {
      Child& c = *it;
      readOutput(c);
      int st = 0;
      if (c.outFd < 0 && c.errFd < 0 && waitpid(c.pid, &st, 0) == c.pid) {
        ++done;
        const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 130) && c.runId == 0) ++out.noRun;
        printPointEnded(c, gridSize, done, runs.size());
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out;
}

}  // namespace pm::cli
