#pragma once
// What tells compared runs apart: for each run, the experiment fields whose values differ among the
// runs compared, as a short label ("1f1b P=4 lr=0.05"), so that a legend or a table shows the
// schedule, P, N or rate that differ even where long names are cut. No Qt; any thread.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace pm {

// runId -> its label over the fields that differ among `runs` (every leaf of their stored
// experiments as readStoredExperiment reads them, so that a field a run was recorded without
// counts as its default; name, notes and tags left out). Known fields come first and short: the schedule by
// its value, P (pipeline.stages), N (pipeline.microbatches), lr (optimizer.lr), seed
// (training.seed), the model by its name; any other differing field as "path=value". At most
// `maxFields` fields, "..." when more differ. Runs whose experiments agree get "".
std::map<int64_t, std::string> distinguishingLabels(const std::vector<RunRecord>& runs, size_t maxFields = 4);

}  // namespace pm
