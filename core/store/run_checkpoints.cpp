#include "core/store/run_checkpoints.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "core/util/errors.h"

namespace pm {

namespace fs = std::filesystem;

std::string checkpointRoot(const std::string& storePath, int64_t run) {
  if (storePath.empty() || storePath == ":memory:") return "";
  return fs::absolute(storePath).string() + ".checkpoints/run-" + std::to_string(run);
}

void claimCheckpointRoot(const std::string& root, const std::string& storePath, const RunRecord& run) {
  if (root.empty()) return;
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root, ec);
  if (ec) throw StoreError(root, "cannot create the run's checkpoint directory: " + ec.message());
  const nlohmann::json owner{{"store", fs::absolute(storePath).string()}, {"run", run.id}, {"created_at", run.created_at}};
  std::ofstream f(root + "/owner.json");
  f << owner.dump() << "\n";
  if (!f.flush()) throw StoreError(root + "/owner.json", "cannot be written");
}

bool ownsCheckpointRoot(const std::string& root, const RunRecord& run) {
  if (root.empty()) return false;
  std::ifstream f(root + "/owner.json");
  const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  return j.value("run", int64_t{-1}) == run.id && j.value("created_at", -1.0) == run.created_at;
}

void removeCheckpoints(const std::string& storePath, int64_t run) {
  const std::string root = checkpointRoot(storePath, run);
  std::error_code ec;
  if (!root.empty()) fs::remove_all(root, ec);
}

}  // namespace pm
