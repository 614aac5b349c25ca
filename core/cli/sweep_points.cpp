#include "core/cli/sweep_points.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>

#include "core/util/process.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm::cli {
namespace {

// The child process of a point and what it has written so far.
struct Child {
  const PointRun* run;
  pid_t pid;
  int outFd, errFd;
  std::string outBuf, errBuf, lastErr, statusLine;
  double start;
};

// "[k/N]": the grid point's number.
std::string label(const PointRun& r, size_t gridSize) {
  return "[" + std::to_string(r.point + 1) + "/" + std::to_string(gridSize) + "]";
}

Child startPoint(const PointRun& r, size_t gridSize) {
  Child c{&r, -1, -1, -1, {}, {}, {}, {}, monotonicSeconds()};
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

// Reads what the child has written. Its stdout is read and dropped; of its stderr it keeps the
// run's status line ("run 12 finished") and the last other line that is not the banner.
void readOutput(Child& c) {
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
    for (const auto& l : drainLines(c.errFd, c.errBuf, eof)) {
      if (l.size() > 4 && l.rfind("run ", 0) == 0 && std::isdigit(static_cast<unsigned char>(l[4]))) c.statusLine = l;
      else if (!l.empty() && l.rfind("stored as", 0) != 0 && l.rfind("run \"", 0) != 0) c.lastErr = trim(l);
    }
    if (eof) {
      ::close(c.errFd);
      c.errFd = -1;
    }
  }
}

// "[k/N] key=value ...: run 12 finished (1m 02s; 4 of 9 done)"; [k/N] numbers the grid point, as
// on its "started" line.
void printPointEnded(const Child& c, size_t gridSize, size_t done, size_t total) {
  std::fprintf(stderr, "%s %s: %s%s%s (%s; %zu of %zu done)\n", label(*c.run, gridSize).c_str(),
               escapeForTerminal(c.run->values).c_str(),
               c.statusLine.empty() ? "no run recorded" : escapeForTerminal(c.statusLine).c_str(), c.lastErr.empty() ? "" : "; ",
               escapeForTerminal(c.lastErr).c_str(), formatDuration(monotonicSeconds() - c.start).c_str(), done, total);
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
        if (!ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 130) && c.statusLine.empty()) ++out.noRun;
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
