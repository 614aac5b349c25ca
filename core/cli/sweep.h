#pragma once
// Sweeps: a grid of experiment variants run as separate `pipemare run` processes, and the table
// that shows a sweep's grid with each run's status and final metrics.
#include <string>
#include <utility>
#include <vector>

#include "core/store/run_store.h"

namespace pm::cli {

struct GridAxis {
  std::string key;                  // a field path, e.g. optimizer.lr
  std::vector<std::string> values;  // as written on the command line
};

// Parses "key=v1,v2,...". Throws ConfigError naming the --grid argument.
GridAxis parseGridAxis(const std::string& spec);

// Every combination, the first axis varying slowest; each point is a list of "key=value".
std::vector<std::vector<std::string>> gridPoints(const std::vector<GridAxis>& axes);

// Prints the runs of a sweep: one row per grid point (swept values, run, status, final loss and
// accuracy), then, for a two-parameter sweep, the final metric as a matrix.
void printSweepTable(const std::vector<RunRecord>& runs, const std::string& sweepId);

}  // namespace pm::cli
