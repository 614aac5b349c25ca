#include "core/models/torchscript_model.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <utility>

#include "core/models/torch_text.h"
#include "core/util/errors.h"
#include "core/util/zip_check.h"
#include "core/util/torch_compat.h"

namespace pm {
namespace {

const char* kWrapAdvice =
    "wrap the model as an nn.Sequential of blocks, each taking one tensor and returning one tensor, then "
    "torch.jit.script or torch.jit.trace it and save it (scripts/export-model.py shows how)";

// The module's class as Python names it: the exporter numbers classes that share a name
// ("...container.___torch_mangle_10.Sequential"); those segments are dropped.
std::string typeName(const torch::jit::Module& m) {
  const auto& name = m.type()->name();
  if (!name) return "<unnamed module>";
  std::string out;
  for (const auto& atom : name->atoms()) {
    if (atom.rfind("___torch_mangle_", 0) == 0) continue;
    out += (out.empty() ? "" : ".") + atom;
  }
  return out;
}

bool isSequential(const torch::jit::Module& m) {
  const std::string name = typeName(m);
  const std::string suffix = "torch.nn.modules.container.Sequential";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why unit `name` cannot be a pipeline unit ("" when it can): its forward must take one tensor
// (further arguments need defaults) and return one tensor.
std::string unitProblem(const torch::jit::Module& unit) {
  auto forward = unit.find_method("forward");
  if (!forward) return "has no forward method";
  const c10::FunctionSchema& schema = forward->function().getSchema();
  const auto& args = schema.arguments();  // args[0] is self
  if (args.size() < 2) return "its forward takes no input (it must take one tensor)";
  if (args[1].type()->kind() != c10::TypeKind::TensorType)
    return "its forward takes " + args[1].type()->annotation_str() + " (it must take one tensor)";
  for (size_t i = 2; i < args.size(); ++i)
    if (!args[i].default_value())
      return "its forward takes " + std::to_string(args.size() - 1) + " inputs (it must take one tensor)";
  const auto& rets = schema.returns();
  if (rets.size() != 1 || rets[0].type()->kind() != c10::TypeKind::TensorType) {
    std::string found;
    for (const auto& r : rets) found += (found.empty() ? "" : ", ") + r.type()->annotation_str();
    return "its forward returns " + (found.empty() ? std::string("nothing") : found) + " (it must return one tensor)";
  }
  return "";
}

std::string mangled(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c == '.') c = '_';
  return out;
}

// The PyTorch release that wrote the file, when the file says so: scripts/export-model.py records
// torch.__version__ as extra/producer.json {"torch": "2.11.0+cu130"}. "" when it does not (a file
// saved without it) or cannot be read as an archive.
std::string producerTorch(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (!reader.hasRecord("extra/producer.json")) return "";
    auto record = reader.getRecord("extra/producer.json");
    const std::string text(static_cast<const char*>(std::get<0>(record).get()), std::get<1>(record));
    const auto j = nlohmann::json::parse(text, nullptr, false);
    const auto v = j.is_object() ? j.find("torch") : j.end();
    return j.is_object() && v != j.end() && v->is_string() ? v->get<std::string>() : "";
  } catch (const std::exception&) {
    return "";
  }
}

// Major and minor of "2.11.0+cu130"; {-1, -1} when it does not start with two numbers.
std::pair<int, int> majorMinor(const std::string& v) {
  int major = -1, minor = -1;
  if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) != 2) return {-1, -1};
  return {major, minor};
}

}  // namespace

ScriptUnitImpl::ScriptUnitImpl(torch::jit::Module module) : script_(std::move(module)) {
  for (const auto& p : script_.named_parameters(/*recurse=*/true)) {
    register_parameter(mangled(p.name), p.value, p.value.requires_grad());
    names_.push_back(p.name);
  }
  for (const auto& b : script_.named_buffers(/*recurse=*/true)) {
    register_buffer(mangled(b.name), b.value);
    names_.push_back(b.name);
  }
}

torch::Tensor ScriptUnitImpl::forward(torch::Tensor x) { return script_.forward({std::move(x)}).toTensor(); }

void ScriptUnitImpl::train(bool on) {
  torch::nn::Module::train(on);
  script_.train(on);
}

void ScriptUnitImpl::to(torch::Device device, bool non_blocking) {
  script_.to(device, non_blocking);
  torch::nn::Module::to(device, non_blocking);
}

std::vector<Unit> loadTorchScriptModel(const std::string& path) {
  // The graph executor runs a loaded model's operations as they are, as eager code does: its
  // optimizations (profiling runs, guarded differentiable subgraphs; no operator fusion on CPU)
  // cost 9 to 13 % of a training step of the zoo cnn's architecture (engine_bench, docs/engine.md).
  torch::jit::setGraphExecutorOptimize(false);
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ConfigError(path, "cannot open: no such file (model.path)");
  if (fs::is_directory(path, ec)) throw ConfigError(path, "is a directory, not a TorchScript file (model.path)");
  // Records that would inflate to gigabytes are refused before LibTorch inflates them.
  if (const std::string bomb = zipBombProblem(path); !bomb.empty()) throw ConfigError(path, bomb + " (model.path)");
  // A file from a newer PyTorch than this build's LibTorch: refused by name, both versions said.
  const std::string producer = producerTorch(path);
  const std::string build = compat::torchVersion();
  if (!producer.empty() && majorMinor(producer) > majorMinor(build))
    throw ConfigError(path, "was written by PyTorch " + producer + ", newer than this build's LibTorch " + build +
                                ": export it with PyTorch " + build + " (or older), or use a build of the engine against PyTorch " +
                                producer + " (README: Two LibTorch builds)");
  torch::jit::Module model;
  try {
    model = torch::jit::load(path);
  } catch (const c10::Error& ex) {
    throw ConfigError(path, "not a readable TorchScript file for this build's LibTorch " + compat::torchVersion() +
                            " (torch.jit.save writes one; a truncated or other file, or one from a newer PyTorch, does not load): " +
                            errorFirstLine(ex));
  } catch (const std::exception& ex) {
    throw ConfigError(path, std::string("not a readable TorchScript file: ") + ex.what());
  }
  if (!isSequential(model))
    throw ConfigError(path, "the model is a " + typeName(model) + ", not an nn.Sequential: " + kWrapAdvice);
  std::vector<Unit> units;
  for (const auto& child : model.named_children()) {
    const std::string problem = unitProblem(child.value);
    if (!problem.empty())
      throw ConfigError(path, "unit " + std::to_string(units.size()) + " (\"" + child.name + "\", a " + typeName(child.value) +
                                  ") " + problem + ": " + kWrapAdvice);
    int layers = 0;
    for (const auto& m : child.value.modules()) {
      bool weights = false;
      for (const auto& p : m.named_parameters(/*recurse=*/false)) weights = weights || p.name == "weight";
      layers += weights ? 1 : 0;
    }
    units.push_back({child.name, torch::nn::AnyModule(ScriptUnit(child.value)), layers});
  }
  if (units.empty()) throw ConfigError(path, "the nn.Sequential has no units: " + std::string(kWrapAdvice));
  model.train(true);
  return units;
}

}  // namespace pm
