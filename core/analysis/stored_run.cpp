#include "core/analysis/stored_run.h"

#include "core/config/experiment_fields.h"
#include "core/util/errors.h"

namespace pm {

namespace {

std::string where(const RunRecord& r) { return "run " + std::to_string(r.id) + " (stored configuration)"; }

}  // namespace

Experiment storedExperiment(const RunRecord& r) {
  const nlohmann::json j = nlohmann::json::parse(r.config_json, nullptr, false);
  if (j.is_discarded()) throw StoreError(where(r), "is not valid JSON");
  return experimentFromJson(j, where(r));
}

StoredExperiment readStoredExperiment(const RunRecord& r) {
  StoredExperiment out;
  try {
    out.experiment = storedExperiment(r);
  } catch (const std::exception& ex) {
    out.problem = errorText(ex);
    const nlohmann::json j = nlohmann::json::parse(r.config_json, nullptr, false);
    out.readable = j.is_object();
    out.experiment = experimentAsFarAsReadable(out.readable ? j : nlohmann::json::object());
  }
  return out;
}

nlohmann::json storedExperimentJson(const RunRecord& r) { return experimentToJson(readStoredExperiment(r).experiment); }

}  // namespace pm
