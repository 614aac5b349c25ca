// pipemare models: the model zoo, each model with its parameter count and its units; with --file,
// a TorchScript model's units with their parameters and, given an input, their output shapes.
#include <cstdio>

#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/config/model_catalog.h"
#include "core/engine/tensor_data.h"
#include "core/models/model_zoo.h"
#include "core/models/torch_text.h"
#include "core/models/torchscript_model.h"
#include "core/util/errors.h"
#include "core/util/file_digest.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

int zooCommand(bool json) {
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
}

// One sample (batch of 1): the tensor file's first, or zeros of --input-shape; undefined without either.
torch::Tensor sampleFor(const ModelsOptions& o) {
  if (!o.data.empty() && !o.inputShape.empty()) throw ConfigError("--input-shape", "give --data or --input-shape, not both");
  if (!o.data.empty()) return loadTensorFile(o.data).x.narrow(0, 0, 1);
  if (o.inputShape.empty()) return {};
  std::vector<int64_t> shape{1};
  for (const auto& part : split(o.inputShape, ',')) {
    const std::string t = trim(part);
    char* end = nullptr;
    const long long d = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || d < 1 || d > (1 << 24))
      throw ConfigError("--input-shape", "expected positive integers separated by commas (e.g. 1,28,28), found \"" + o.inputShape + "\"");
    shape.push_back(d);
  }
  return torch::zeros(shape);
}

int fileCommand(const ModelsOptions& o) {
  auto units = loadTorchScriptModel(o.file);
  const FileDigest digest = digestFile(o.file);
  torch::Tensor x = sampleFor(o);
  const bool shapes = x.defined();
  torch::NoGradGuard noGrad;
  Json unitJson = Json::array();
  if (!o.json) std::printf("%-4s %-20s %-24s %12s  %s\n", "unit", "name", "type", "parameters", shapes ? "output (one sample)" : "");
  for (size_t i = 0; i < units.size(); ++i) {
    auto& u = units[i];
    auto* script = dynamic_cast<ScriptUnitImpl*>(u.module.ptr().get());
    std::string type = script && script->script().type()->name() ? script->script().type()->name()->name() : "module";
    Json uj{{"index", i}, {"name", u.name}, {"type", type}, {"parameters", parameterCount(u)}};
    std::string out;
    if (shapes) {
      u.module.ptr()->eval();
      try {
        x = u.module.forward(x);
      } catch (const std::exception& ex) {
        throw DataError(o.data.empty() ? "--input-shape" : o.data,
                        "the sample does not fit unit " + std::to_string(i) + " (\"" + u.name + "\"): " + errorFirstLine(ex));
      }
      uj["output_shape"] = x.sizes().slice(1).vec();
      out = shapeText(x.sizes().slice(1));
    }
    unitJson.push_back(uj);
    if (!o.json)
      std::printf("%-4zu %-20s %-24s %12lld  %s\n", i, fitText(u.name, 20).c_str(), fitText(type, 24).c_str(),
                  static_cast<long long>(parameterCount(u)), out.c_str());
  }
  if (o.json) {
    std::printf("%s\n", Json{{"file", o.file},
                             {"size", digest.size},
                             {"sha256", digest.sha256},
                             {"parameters", parameterCount(units)},
                             {"units", unitJson}}
                            .dump(2)
                            .c_str());
  } else {
    std::printf("%zu units, %lld parameters; %s, %lld bytes, sha256 %s\n", units.size(),
                static_cast<long long>(parameterCount(units)), escapeForTerminal(o.file).c_str(),
                static_cast<long long>(digest.size), digest.sha256.c_str());
    if (!shapes) std::printf("(give --data FILE or --input-shape DIMS to see each unit's output shape)\n");
  }
  return 0;
}

}  // namespace

int modelsCommand(const ModelsOptions& o) {
  try {
    if (o.file.empty()) {
      if (!o.data.empty() || !o.inputShape.empty())
        throw ConfigError(o.data.empty() ? "--input-shape" : "--data", "applies only with --file");
      return zooCommand(o.json);
    }
    return fileCommand(o);
  } catch (const std::exception& ex) {
    return reportError(ex, o.json);
  }
}

}  // namespace pm::cli
