#pragma once
// The one reader of a stored run's configuration (RunRecord::config_json, the normalised
// experiment the run was recorded with): the store's users (analysis, the CLI, the workbench,
// the study) read a run's experiment here, typed, never its raw JSON.
#include <string>

#include <nlohmann/json.hpp>

#include "core/config/experiment.h"
#include "core/store/run_store.h"

namespace pm {

struct StoredExperiment {
  Experiment experiment;
  // "" when the stored configuration validates (as every run recorded by this version's does);
  // otherwise why not (a store of an older format, a configuration edited by hand), and the
  // experiment is then read as far as each field can be (experimentAsFarAsReadable).
  std::string problem;
  bool readable = true;  // false: the stored configuration is not a JSON object (every field a default)
};

// Never throws.
StoredExperiment readStoredExperiment(const RunRecord& r);

// The experiment a run was recorded with, exactly: throws pm::Error (StoreError for a
// configuration that is not JSON, ConfigError naming the field otherwise) where it does not
// validate. For what must run it again (resume, plan --against).
Experiment storedExperiment(const RunRecord& r);

// The stored experiment as the format writes it (experimentToJson): every field present, so that
// runs recorded before a field existed compare with its default.
nlohmann::json storedExperimentJson(const RunRecord& r);

}  // namespace pm
