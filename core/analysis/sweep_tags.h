#pragma once
// A sweep's grid from its runs' "key=value" tags (set by `pipemare sweep`): shared by the
// command line (runs list --sweep), the Sweeps view and the study report. No Qt, no LibTorch.
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace pm {

// The swept keys: keys of the oldest run's key=value tags that every run has, in tag order.
std::vector<std::string> sweepKeys(const std::vector<RunRecord>& runs);
// The value of `key` in the run's key=value tags, or `fallback`.
std::string sweepTagValue(const RunRecord& run, const std::string& key, const std::string& fallback = "?");

}  // namespace pm
