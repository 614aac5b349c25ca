#pragma once
// What `pipemare run`, `sweep` and `validate` check before a run is recorded, so that bad input is
// an error that names the file (exit 2), not a failed run.
#include "core/config/experiment.h"

namespace pm {

// Checks that the experiment's data can be found (Fashion-MNIST: the train and evaluation files
// exist; text: the corpus reads and is long enough), that a model file and tensor data fit each
// other (checkModelOnData), and what the run would refuse at its start: fewer training samples
// than microbatches (synthetic data, text, tensors, train_limit), a CUDA device on a LibTorch
// without CUDA (ConfigError).
void checkDataAvailable(const Experiment& e);

// For a TorchScript model (model.path) or tensor data (data.path): reads them and checks what the
// format alone cannot: the pipeline's stages and explicit boundaries against the model's units,
// and one sample of the data through the whole model (eval mode, no gradient): a sample shape the
// model does not take, an output that does not fit the loss, labels outside the output's classes.
// Throws ConfigError / DataError naming the file, the tensor and the shapes. Does nothing for a
// zoo model on its built-in data.
void checkModelOnData(const Experiment& e);

}  // namespace pm
