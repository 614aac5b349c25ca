#include "core/analysis/sweep_tags.h"

#include <algorithm>

namespace pm {

namespace {
bool hasKey(const RunRecord& r, const std::string& key) {
  return std::any_of(r.tags.begin(), r.tags.end(), [&](const std::string& t) { return t.rfind(key + "=", 0) == 0; });
}
}  // namespace

std::vector<std::string> sweepKeys(const std::vector<RunRecord>& runs) {
  std::vector<std::string> keys;
  if (runs.empty()) return keys;
  const RunRecord& oldest = *std::min_element(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  for (const auto& t : oldest.tags) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string k = t.substr(0, eq);
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    if (std::all_of(runs.begin(), runs.end(), [&](const RunRecord& r) { return hasKey(r, k); })) keys.push_back(k);
  }
  return keys;
}

std::string sweepTagValue(const RunRecord& run, const std::string& key, const std::string& fallback) {
  for (const auto& t : run.tags)
    if (t.rfind(key + "=", 0) == 0) return t.substr(key.size() + 1);
  return fallback;
}

}  // namespace pm
