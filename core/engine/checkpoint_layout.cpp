#include "core/engine/checkpoint_layout.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/events/event.h"
#include "core/util/atomic_file.h"
#include "core/util/errors.h"

namespace pm {

namespace {
constexpr const char* kStepPrefix = "step-";

// The step a directory name stands for; 0 when it is not a step directory.
int64_t stepOfName(const std::string& name) {
  if (name.rfind(kStepPrefix, 0) != 0) return 0;
  char* end = nullptr;
  const long long step = std::strtoll(name.c_str() + 5, &end, 10);
  return step > 0 && *end == '\0' ? step : 0;
}
}  // namespace

std::string CheckpointLayout::stepDir(int64_t step) const { return root_ + "/" + kStepPrefix + std::to_string(step); }

std::string CheckpointLayout::stageFile(int64_t step, int stage) const {
  return stepDir(step) + "/stage" + std::to_string(stage) + ".pt";
}

std::string CheckpointLayout::partitionFile(int64_t step) const { return stepDir(step) + "/partition.json"; }

std::map<int64_t, std::string> CheckpointLayout::completeSteps(int stages) const {
  std::map<int64_t, std::string> out;
  std::error_code ec;
  if (root_.empty() || !std::filesystem::is_directory(root_, ec)) return out;
  for (const auto& d : std::filesystem::directory_iterator(root_, ec)) {
    const int64_t step = stepOfName(d.path().filename().string());
    if (step <= 0) continue;
    if (isComplete(step, stages)) out[step] = d.path().string();
  }
  return out;
}

bool CheckpointLayout::isComplete(int64_t step, int stages) const {
  // Complete: a partition that reads and a non-empty file for every stage. A step torn by a kill
  // or a full disk (files written before they were written atomically) is passed over, so a
  // resume falls back to the newest checkpoint that loads.
  try {
    readPartition(step);
  } catch (const StoreError&) {
    return false;
  }
  std::error_code ec;
  for (int s = 0; s < stages; ++s) {
    const auto size = std::filesystem::file_size(stageFile(step, s), ec);
    if (ec || size == 0) return false;
  }
  return true;
}

int CheckpointLayout::pruneBefore(int64_t step, int stages) const {
  if (root_.empty() || !isComplete(step, stages)) return 0;
  int removed = 0;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(root_, ec)) {
    const int64_t older = stepOfName(d.path().filename().string());
    if (older <= 0 || older >= step) continue;
    std::error_code rm;
    std::filesystem::remove_all(d.path(), rm);
    removed += rm ? 0 : 1;
  }
  return removed;
}

int64_t CheckpointLayout::latestComplete(int stages) const {
  const auto c = completeSteps(stages);
  return c.empty() ? 0 : c.rbegin()->first;
}

void CheckpointLayout::prune(int stages, bool all) const {
  std::error_code ec;
  if (root_.empty()) return;
  if (all) {
    std::filesystem::remove_all(root_, ec);
    return;
  }
  const int64_t keep = latestComplete(stages);
  for (const auto& d : std::filesystem::directory_iterator(root_, ec)) {
    const std::string name = d.path().filename().string();
    if (name.rfind(kStepPrefix, 0) == 0 && name != kStepPrefix + std::to_string(keep)) std::filesystem::remove_all(d.path(), ec);
  }
}

void CheckpointLayout::writePartition(int64_t step, const std::vector<int>& boundaries) const {
  writeFileAtomically(partitionFile(step), Json{{"boundaries", boundaries}}.dump() + "\n", 0600);
}

std::vector<int> CheckpointLayout::readPartition(int64_t step) const {
  const std::string file = partitionFile(step);
  std::ifstream in(file);
  const Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("boundaries") || !j["boundaries"].is_array()) throw StoreError(file, "is missing or not valid JSON");
  try {
    return j["boundaries"].get<std::vector<int>>();
  } catch (const std::exception&) {
    throw StoreError(file, "is missing or not valid JSON");
  }
}

}  // namespace pm
