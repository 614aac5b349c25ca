#pragma once
// The smallest experiment that trains through the engine: 16 steps of a zoo model on 256
// synthetic samples, batch 32, a loss logged every 4 steps (header-only: core/config is the
// only library it needs).
#include <string>

#include "core/config/experiment.h"

namespace pm::test {

inline Experiment tinyExperiment(const std::string& model = "mlp") {
  Experiment e;
  e.name = "tiny";
  e.model.name = model;
  e.data.dataset = DatasetKind::Synthetic;
  e.data.synthetic_samples = 256;
  e.data.batch_size = 32;
  e.pipeline.microbatches = 1;
  e.optimizer.lr = 0.05;
  e.optimizer.momentum = 0.9;
  e.training.steps = 16;
  e.training.log_interval = 4;
  e.training.seed = 3;
  return e;
}

}  // namespace pm::test
