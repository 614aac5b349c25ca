// pipemare models: the model zoo, each model with its parameter count and its units.
#include <cstdio>

#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/config/model_catalog.h"
#include "core/models/model_zoo.h"
#include "core/util/strings.h"

namespace pm::cli {

int modelsCommand(bool json) {
  try {
    Json arr = Json::array();
    if (!json) std::printf("%-9s %12s %6s  %s\n", "model", "parameters", "units", "description");
    for (const auto& m : modelCatalog()) {
      auto units = buildModel(m.name, 1);
      std::vector<std::string> names;
      Json unitJson = Json::array();
      for (const auto& u : units) {
        names.push_back(u.name);
        unitJson.push_back({{"name", u.name}, {"parameters", parameterCount(u)}});
      }
      int64_t params = parameterCount(units);
      if (json) {
        arr.push_back({{"name", m.name}, {"parameters", params}, {"units", unitJson}, {"description", m.description}});
      } else {
        std::printf("%-9s %12lld %6zu  %s\n          units: %s\n", m.name.c_str(), static_cast<long long>(params),
                    units.size(), m.description.c_str(), join(names, " ").c_str());
      }
    }
    if (json) std::printf("%s\n", arr.dump(2).c_str());
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex);
  }
}

}  // namespace pm::cli
