#pragma once
// What the analytic planner and the timeline simulation need to know about each pipeline stage,
// derived from a ModelProfile at one of two granularities: one stage per weight layer (the
// PipeMare paper's setting) or contiguous ranges of the model zoo's units (the engine's stages).
// Plain data, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "core/pipeline/partition.h"
#include "core/planner/model_profile.h"

namespace pm {

struct StageProfile {
  std::string name;             // the layer's name, or "<first unit>..<last unit>"
  int begin = 0, end = 0;       // layers or units [begin, end) of the model profile
  int64_t parameters = 0;
  int64_t weightBytes = 0;      // W_i: parameter bytes (buffers are not stashed nor optimised)
  int64_t inputBytes = 0;       // X_i: the stage input, per microbatch
  int64_t activationBytes = 0;  // A_i: activations kept for the backward, per microbatch
  int64_t outputBytes = 0;      // the stage output sent downstream, per microbatch
  double forwardFlops = 0;      // per microbatch
};

enum class Granularity { Layers, Units };
// "layers" | "units"; throws std::invalid_argument otherwise.
Granularity granularityFromName(const std::string& name);
std::string granularityName(Granularity g);

// One stage per weight layer, in order: W = the layer's parameter bytes, X = its data input,
// A = its output (the paper's per-layer accounting), output = its output, FLOPs = its own op.
std::vector<StageProfile> layerStages(const ModelProfile& m, int64_t samplesPerMicrobatch);
// Contiguous ranges of weight layers (p over the layers): W and FLOPs summed, X = the first
// layer's input, A = the sum of the layers' outputs, output = the last layer's output.
std::vector<StageProfile> layerStages(const ModelProfile& m, const Partition& p, int64_t samplesPerMicrobatch);

// Stages over contiguous unit ranges: W = sum of the units' parameter bytes, X = the first unit's
// input, A = sum of the units' activation bytes, output = the last unit's output, FLOPs = sum.
std::vector<StageProfile> unitStages(const ModelProfile& m, const Partition& p, int64_t samplesPerMicrobatch);

// The engine's default partition ("parameters"): balancedPartition over the units' parameter
// counts. Throws std::invalid_argument when stages < 1 or stages > units.
Partition parameterPartition(const ModelProfile& m, int stages);
// The same over the weight layers (for fewer stages than layers at layer granularity).
Partition layerParameterPartition(const ModelProfile& m, int stages);

// Forward FLOPs per stage (for cost models).
std::vector<double> stageFlops(const std::vector<StageProfile>& stages);

}  // namespace pm
