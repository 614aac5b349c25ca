#pragma once
// Sweeps: a grid of experiment variants run as separate `pipemare run` processes (sweep.cpp), and
// the table that shows a sweep's grid with each run's status and final metrics (sweep_table.cpp).
#include <string>
#include <utility>
#include <vector>

#include "core/analysis/sweep_tags.h"
#include "core/store/run_store.h"

namespace pm::cli {

// Parses "key=v1,v2,...". Throws ConfigError naming the --grid argument.
GridAxis parseGridAxis(const std::string& spec);

// Prints the runs of a sweep: one row per grid point (swept values, run, status, final loss and
// accuracy), then, for a two-parameter sweep, the final metric as a matrix. Stand-ins from
// notStartedPoints (id 0) show as points not started.
void printSweepTable(const std::vector<RunRecord>& runs, const std::string& sweepId);

}  // namespace pm::cli
