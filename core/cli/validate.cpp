// pipemare validate: reads an experiment file (with its --set overrides) and says whether it is valid.
#include <cstdio>

#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/config/experiment.h"
#include "core/data/datasets.h"
#include "core/engine/input_check.h"
#include "core/util/strings.h"

namespace pm::cli {

namespace {
bool fashionMnistPresent(const Experiment& e) {
  if (e.data.dataset != DatasetKind::FashionMnist) return false;
  try {
    locateFashionMnist(e.data.path, "train");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

int validateCommand(const std::string& file, const std::vector<std::string>& overrides, bool json) {
  try {
    Experiment e = loadWithOverrides(file, overrides);
    // A model file or tensor data: read them as `run` would, and run one sample through the model.
    // Fashion-MNIST files that are there are read too (corrupt ones are refused here); where the
    // dataset is not installed the experiment is still valid: `run` says where it looked.
    if (e.model.fromFile() || e.data.dataset == DatasetKind::Tensors || fashionMnistPresent(e)) checkDataAvailable(e);
    if (json) {
      const Json j = {{"valid", true},           {"file", file},
                      {"model", e.model.name},   {"schedule", choiceName(e.pipeline.schedule)},
                      {"stages", e.pipeline.stages}, {"microbatches", e.pipeline.microbatches}};
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("%s: valid (%s, %s, P=%d, N=%d)\n", escapeForTerminal(file).c_str(), e.model.name.c_str(),
                choiceName(e.pipeline.schedule).c_str(), e.pipeline.stages, e.pipeline.microbatches);
    return 0;
  } catch (const std::exception& ex) {
    return reportError(ex, json);
  }
}

}  // namespace pm::cli
