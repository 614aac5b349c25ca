#include "core/planner/model_profile.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <filesystem>

#include "core/engine/batch_source.h"
#include "core/engine/run_outcome.h"
#include "core/util/system_info.h"
#include "core/models/model_zoo.h"
#include "core/models/torchscript_model.h"
#include "core/util/file_digest.h"
#include "core/planner/op_observer.h"
#include "core/util/errors.h"

namespace pm {

int64_t ModelProfile::parameters() const {
  int64_t n = 0;
  for (const auto& u : units) n += u.parameters;
  return n;
}

int64_t ModelProfile::paramBytes() const {
  int64_t n = 0;
  for (const auto& u : units) n += u.paramBytes;
  return n;
}

double ModelProfile::flops() const {
  double f = 0;
  for (const auto& u : units) f += u.flops;
  return f;
}

int ModelProfile::countKind(const std::string& kind) const {
  return static_cast<int>(std::count_if(layers.begin(), layers.end(), [&](const LayerProfile& l) { return l.kind == kind; }));
}

namespace {

// --- layers ------------------------------------------------------------------------------------

std::string layerKind(const torch::nn::Module& m) {
  const std::string n = m.name();
  if (n == "torch::nn::Conv1dImpl" || n == "torch::nn::Conv2dImpl" || n == "torch::nn::Conv3dImpl") return "conv";
  if (n == "torch::nn::LinearImpl") return "linear";
  if (n == "torch::nn::BatchNorm1dImpl" || n == "torch::nn::BatchNorm2dImpl" || n == "torch::nn::BatchNorm3dImpl")
    return "batchnorm";
  if (n == "torch::nn::LayerNormImpl") return "layernorm";
  if (n == "torch::nn::EmbeddingImpl") return "embedding";
  return "";
}

struct LayerSlot {
  std::string name, kind;
  const void* weightStorage = nullptr;
  int64_t parameters = 0, paramBytes = 0, bufferBytes = 0;
  std::vector<int64_t> weightShape;
  bool seen = false;
};

double layerFlops(const LayerSlot& l, const ObservedOp& op) {
  const double out = static_cast<double>(op.outputNumel());
  if (l.kind == "conv") {
    // weight [Cout, Cin/groups, k...]: MACs per output element = Cin/groups * prod(k)
    int64_t perOut = 1;
    for (size_t d = 1; d < l.weightShape.size(); ++d) perOut *= l.weightShape[d];
    return 2.0 * out * static_cast<double>(perOut);
  }
  if (l.kind == "linear") return 2.0 * out * static_cast<double>(l.weightShape.at(1));
  if (l.kind == "batchnorm" || l.kind == "layernorm") return 5.0 * out;
  return out;  // embedding: a gather, one per output element
}

double otherFlops(const ObservedOp& op) {
  if (op.inputs.empty() || op.aliases()) return 0.0;  // factories, views
  static const std::set<std::string> matmuls = {"aten::matmul", "aten::bmm", "aten::mm", "aten::baddbmm",
                                                "aten::addmm", "aten::addbmm"};
  if (matmuls.count(op.name) != 0) {
    const auto& a = op.inputs[op.name == "aten::baddbmm" || op.name == "aten::addmm" || op.name == "aten::addbmm" ? 1 : 0];
    const int64_t k = a.shape.empty() ? 1 : a.shape.back();
    return 2.0 * static_cast<double>(op.outputNumel()) * static_cast<double>(k);
  }
  int64_t n = op.outputNumel();
  for (const auto& i : op.inputs) n = std::max(n, i.numel);
  return static_cast<double>(n);
}

torch::Tensor sampleInput(const std::string& model, int context) {
  std::vector<int64_t> shape{1};
  for (int64_t d : sampleShape(model, context)) shape.push_back(d);
  if (modelTakesTokens(model)) return torch::randint(0, 256, shape, torch::kLong);
  return torch::randn(shape);
}

}  // namespace

namespace {

// The layer kind of a scripted module, by its class name as Python names it (the exporter's
// "___torch_mangle_N" segments are not its last part).
std::string scriptLayerKind(const torch::jit::Module& m) {
  const auto& name = m.type()->name();
  if (!name) return "";
  const std::string n = name->name();
  if (n == "Conv1d" || n == "Conv2d" || n == "Conv3d") return "conv";
  if (n == "Linear") return "linear";
  if (n == "BatchNorm1d" || n == "BatchNorm2d" || n == "BatchNorm3d") return "batchnorm";
  if (n == "LayerNorm") return "layernorm";
  if (n == "Embedding") return "embedding";
  return "";
}

// The weight layers of a TorchScript unit: its scripted submodules of a known kind with a weight.
void scriptLayerSlots(const std::string& unitName, ScriptUnitImpl& unit, std::vector<LayerSlot>& slots) {
  for (const auto& item : unit.script().named_modules()) {
    const std::string kind = scriptLayerKind(item.value);
    if (kind.empty()) continue;
    const torch::jit::Module& m = item.value;
    torch::Tensor weight;
    for (const auto& p : m.named_parameters(/*recurse=*/false))
      if (p.name == "weight") weight = p.value;
    if (!weight.defined()) continue;
    LayerSlot s;
    s.name = unitName + (item.name.empty() ? "" : "." + item.name);
    s.kind = kind;
    s.weightStorage = weight.storage().unsafeGetStorageImpl();
    s.weightShape = weight.sizes().vec();
    for (const auto& p : m.named_parameters(false)) {
      s.parameters += p.value.numel();
      s.paramBytes += p.value.numel() * static_cast<int64_t>(p.value.element_size());
    }
    for (const auto& b : m.named_buffers(false)) s.bufferBytes += b.value.numel() * static_cast<int64_t>(b.value.element_size());
    slots.push_back(std::move(s));
  }
}

// Profiles `units` from one sample `x` (batch of 1). `label` names the model in messages.
ModelProfile profileUnits(const std::string& label, std::vector<Unit>& units, torch::Tensor x, int context) {
  ModelProfile prof;
  prof.model = label;
  prof.context = context;
  torch::NoGradGuard noGrad;

  for (size_t ui = 0; ui < units.size(); ++ui) {
    auto& unit = units[ui];
    auto& root = *unit.module.ptr();
    root.eval();

    // The unit's weight layers, in registration order (the execution order decides the final order).
    std::vector<LayerSlot> slots;
    std::set<const void*> stateStorages;  // parameters and buffers of the unit
    for (const auto& p : root.parameters()) stateStorages.insert(p.storage().unsafeGetStorageImpl());
    for (const auto& b : root.buffers()) stateStorages.insert(b.storage().unsafeGetStorageImpl());
    if (auto* script = dynamic_cast<ScriptUnitImpl*>(&root)) scriptLayerSlots(unit.name, *script, slots);
    for (const auto& item : root.named_modules("", /*include_self=*/true)) {
      const std::string kind = layerKind(*item.value());
      if (kind.empty()) continue;
      // Keep the dictionary alive: find() points into it (found by AddressSanitizer).
      const auto own = item.value()->named_parameters(/*recurse=*/false);
      auto* w = own.find("weight");
      if (w == nullptr) continue;  // no weights (e.g. a norm without affine parameters)
      LayerSlot s;
      s.name = unit.name + (item.key().empty() ? "" : "." + item.key());
      s.kind = kind;
      s.weightStorage = w->storage().unsafeGetStorageImpl();
      s.weightShape = w->sizes().vec();
      for (const auto& p : item.value()->parameters(false)) {
        s.parameters += p.numel();
        s.paramBytes += p.numel() * static_cast<int64_t>(p.element_size());
      }
      for (const auto& b : item.value()->buffers(false)) s.bufferBytes += b.numel() * static_cast<int64_t>(b.element_size());
      slots.push_back(std::move(s));
    }

    std::vector<ObservedOp> ops;
    torch::Tensor y;
    try {
      ops = observeOps([&] { y = unit.module.forward(x); });
    } catch (const c10::Error& e) {
      throw ConfigError("model " + label, "the shape pass failed in unit \"" + unit.name + "\" (context " +
                                              std::to_string(context) + "): " + e.what_without_backtrace());
    }

    UnitProfile up;
    up.name = unit.name;
    up.firstLayer = static_cast<int>(prof.layers.size());
    up.inputBytes = x.numel() * static_cast<int64_t>(x.element_size());
    up.outputBytes = y.numel() * static_cast<int64_t>(y.element_size());
    for (const auto& p : root.parameters()) {
      up.parameters += p.numel();
      up.paramBytes += p.numel() * static_cast<int64_t>(p.element_size());
    }
    for (const auto& b : root.buffers()) up.bufferBytes += b.numel() * static_cast<int64_t>(b.element_size());

    for (const auto& op : ops) {
      if (!op.aliases()) up.activationBytes += op.outputBytes();
      // Which layer's weight does this operation read? Views of the weight (the transpose in
      // Linear's addmm / matmul) alias it and are not the layer's operation.
      LayerSlot* slot = nullptr;
      if (!op.aliases())
        for (const auto& in : op.inputs)
          for (auto& s : slots)
            if (s.weightStorage == in.storage) slot = &s;
      if (slot == nullptr) {
        up.flops += otherFlops(op);
        continue;
      }
      const double f = layerFlops(*slot, op);
      up.flops += f;
      if (slot->seen) throw EngineError("profile " + label, "layer " + slot->name + " runs more than once per forward");
      slot->seen = true;
      LayerProfile lp;
      lp.name = slot->name;
      lp.kind = slot->kind;
      lp.unit = static_cast<int>(ui);
      lp.parameters = slot->parameters;
      lp.paramBytes = slot->paramBytes;
      lp.bufferBytes = slot->bufferBytes;
      for (const auto& in : op.inputs)
        if (stateStorages.count(in.storage) == 0) {
          lp.inputBytes = in.bytes;
          break;
        }
      lp.outputBytes = op.outputBytes();
      if (!op.outputs.empty()) lp.outputShape = op.outputs.front().shape;
      lp.flops = f;
      prof.layers.push_back(std::move(lp));
    }
    for (const auto& s : slots)
      if (!s.seen) throw EngineError("profile " + label, "layer " + s.name + " did not run in the shape pass");
    up.layerCount = static_cast<int>(prof.layers.size()) - up.firstLayer;
    prof.units.push_back(std::move(up));
    x = y;
  }
  return prof;
}

}  // namespace

ModelProfile profileModel(const std::string& model, int context) {
  if (context < 1) throw ConfigError("context", "expected a sequence length >= 1, found " + std::to_string(context));
  auto units = buildModel(model, 1);  // ConfigError for an unknown name
  torch::manual_seed(1);
  torch::Tensor x = sampleInput(model, context);
  return profileUnits(model, units, x, context);
}

ModelProfile profileModel(const Experiment& e) {
  if (!e.model.fromFile()) return profileModel(e.model.name, e.data.context);
  auto units = buildModel(e.model, 1);  // ConfigError naming the file
  torch::manual_seed(1);
  const torch::Tensor x = exampleInput(e, 1);
  return profileUnits(std::filesystem::path(e.model.path).filename().string(), units, x, e.data.context);
}

const ModelProfile& cachedModelProfile(const Experiment& e) {
  if (!e.model.fromFile()) return cachedModelProfile(e.model.name, e.data.context);
  // A model file: by its contents and the input it is profiled with.
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ModelProfile>> cache;
  const std::string key = digestFile(e.model.path).sha256 + " " + choiceName(e.data.dataset) + " " + e.data.path + " " +
                          std::to_string(e.data.context);
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) {
    try {
      slot = std::make_unique<ModelProfile>(profileModel(e));
    } catch (...) {
      cache.erase(key);
      throw;
    }
  }
  return *slot;
}

const ModelProfile& cachedModelProfile(const std::string& model, int context) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, std::unique_ptr<ModelProfile>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{model, context}];
  if (!slot) {
    try {
      slot = std::make_unique<ModelProfile>(profileModel(model, context));
    } catch (...) {
      cache.erase({model, context});
      throw;
    }
  }
  return *slot;
}

std::vector<UnitOpCosts> measureUnitOpCosts(const Experiment& e, int64_t samples, int threads, int rounds) {
  if (samples < 1) throw ConfigError("samples", "expected at least one sample per microbatch");
  setStageThreads(threads);
  auto units = buildModel(e.model, 1);  // ConfigError for an unknown name or a bad file
  torch::manual_seed(1);
  const torch::Tensor one = e.model.fromFile() ? exampleInput(e, 1) : sampleInput(e.model.name, e.data.context);
  std::vector<int64_t> reps(static_cast<size_t>(one.dim()), 1);
  reps[0] = samples;
  const torch::Tensor x0 = one.repeat(reps);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<UnitOpCosts> best(units.size(), UnitOpCosts{inf, inf, inf, inf});
  const auto keep = [](double& slot, double t) { slot = std::min(slot, t); };
  for (int round = 0; round <= rounds; ++round) {  // round 0: allocations, kernel choice, thread start-up
    torch::Tensor x = x0;
    for (size_t i = 0; i < units.size(); ++i) {
      Unit& u = units[i];
      const bool floating = x.is_floating_point();
      std::vector<torch::Tensor> params;
      for (const auto& p : u.module.ptr()->parameters())
        if (p.requires_grad()) params.push_back(p);
      const auto input = [&] { return floating ? x.detach().requires_grad_(true) : x; };
      UnitOpCosts c;
      // F and the whole backward B.
      torch::Tensor in = input();
      double t0 = monotonicSeconds();
      torch::Tensor out = u.module.forward(in);
      c.forward = monotonicSeconds() - t0;
      const torch::Tensor g = torch::ones_like(out);
      std::vector<torch::Tensor> wrt = params;
      if (floating) wrt.push_back(in);
      t0 = monotonicSeconds();
      if (!wrt.empty()) torch::autograd::grad({out}, wrt, {g});
      c.backward = monotonicSeconds() - t0;
      // BI then W on a second forward, as the engine's split backward runs them.
      in = input();
      out = u.module.forward(in);
      t0 = monotonicSeconds();
      if (floating) torch::autograd::grad({out}, {in}, {g}, /*retain_graph=*/true);
      c.backwardInput = floating ? monotonicSeconds() - t0 : 0.0;
      t0 = monotonicSeconds();
      if (!params.empty()) torch::autograd::grad({out}, params, {g});
      c.weight = params.empty() ? 0.0 : monotonicSeconds() - t0;
      if (round > 0) {
        keep(best[i].forward, c.forward);
        keep(best[i].backward, c.backward);
        keep(best[i].backwardInput, c.backwardInput);
        keep(best[i].weight, c.weight);
      }
      x = out.detach();
    }
  }
  return best;
}

}  // namespace pm
