#include "core/planner/stage_profile.h"

#include <stdexcept>

namespace pm {

Granularity granularityFromName(const std::string& name) {
  if (name == "layers") return Granularity::Layers;
  if (name == "units") return Granularity::Units;
  throw std::invalid_argument("unknown granularity '" + name + "' (expected layers or units)");
}

std::string granularityName(Granularity g) { return g == Granularity::Layers ? "layers" : "units"; }

std::vector<StageProfile> layerStages(const ModelProfile& m, int64_t samples) {
  if (samples < 1) throw std::invalid_argument("samples per microbatch must be >= 1");
  std::vector<StageProfile> out;
  out.reserve(m.layers.size());
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const auto& l = m.layers[i];
    StageProfile s;
    s.name = l.name;
    s.begin = static_cast<int>(i);
    s.end = static_cast<int>(i) + 1;
    s.parameters = l.parameters;
    s.weightBytes = l.paramBytes;
    s.inputBytes = l.inputBytes * samples;
    s.activationBytes = l.outputBytes * samples;
    s.outputBytes = l.outputBytes * samples;
    s.forwardFlops = l.flops * static_cast<double>(samples);
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Stages over a contiguous partition of `items` (layers or units); `activation` gives an item's
// activation bytes kept per sample.
template <class Item, class Activation>
std::vector<StageProfile> partitionStages(const std::vector<Item>& items, const Partition& p, int64_t samples,
                                          const char* what, Activation activation) {
  if (samples < 1) throw std::invalid_argument("samples per microbatch must be >= 1");
  std::vector<StageProfile> out;
  for (int st = 0; st < p.stages(); ++st) {
    const int b = p.begin[static_cast<size_t>(st)], e = p.end[static_cast<size_t>(st)];
    if (b < 0 || e > static_cast<int>(items.size()) || b >= e)
      throw std::invalid_argument("partition does not match the model's " + std::to_string(items.size()) + " " + what);
    const auto& first = items[static_cast<size_t>(b)];
    const auto& last = items[static_cast<size_t>(e - 1)];
    StageProfile s;
    s.name = e - b == 1 ? first.name : first.name + ".." + last.name;
    s.begin = b;
    s.end = e;
    s.inputBytes = first.inputBytes * samples;
    s.outputBytes = last.outputBytes * samples;
    for (int i = b; i < e; ++i) {
      const auto& it = items[static_cast<size_t>(i)];
      s.parameters += it.parameters;
      s.weightBytes += it.paramBytes;
      s.activationBytes += activation(it) * samples;
      s.forwardFlops += it.flops * static_cast<double>(samples);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<StageProfile> layerStages(const ModelProfile& m, const Partition& p, int64_t samples) {
  return partitionStages(m.layers, p, samples, "weight layers", [](const LayerProfile& l) { return l.outputBytes; });
}

std::vector<StageProfile> unitStages(const ModelProfile& m, const Partition& p, int64_t samples) {
  return partitionStages(m.units, p, samples, "units", [](const UnitProfile& u) { return u.activationBytes; });
}


Partition parameterPartition(const ModelProfile& m, int stages) {
  std::vector<double> costs;
  for (const auto& u : m.units) costs.push_back(static_cast<double>(u.parameters));
  return balancedPartition(costs, stages);
}

Partition layerParameterPartition(const ModelProfile& m, int stages) {
  std::vector<double> costs;
  for (const auto& l : m.layers) costs.push_back(static_cast<double>(l.parameters));
  return balancedPartition(costs, stages);
}

std::vector<double> stageFlops(const std::vector<StageProfile>& stages) {
  std::vector<double> f;
  for (const auto& s : stages) f.push_back(s.forwardFlops);
  return f;
}

}  // namespace pm
