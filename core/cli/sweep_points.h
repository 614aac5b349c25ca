#pragma once
// Runs a sweep's grid points as `pipemare run` child processes, a number at a time, with a line
// on stderr as each starts and ends. Internal to core/cli (sweep.cpp).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pm::cli {

struct PointRun {
  size_t point;                   // the grid point's index: "[point+1/gridSize]" in its lines
  std::string values;             // its key=value ..., as shown
  int64_t resumeRun = 0;          // > 0: the child resumes this run ("resumed run R:" instead of "started")
  std::vector<std::string> args;  // the child's command line, the executable first
};

// How running the points went.
struct PointsOutcome {
  size_t started = 0;    // runs[started..] did not start (after a stop)
  int noRun = 0;         // points whose process failed before it recorded a run
  bool stopped = false;  // `stop` was set
};

// Runs `runs` in order, `parallel` at a time, until all have ended. Once `stop` is set, the
// points not started stay so: the running ones get SIGTERM and are waited for.
PointsOutcome runPoints(const std::vector<PointRun>& runs, size_t gridSize, int parallel, const std::string& sweepId,
                        const std::atomic<bool>* stop);

}  // namespace pm::cli
