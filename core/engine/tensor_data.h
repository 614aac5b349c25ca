#pragma once
// Tensor datasets: one file per split, written in Python by torch.save({"x": x, "y": y}, path) and
// read with LibTorch's own torch::pickle_load (the zip container torch.save writes by default).
// The whole file is read into memory.
#include <torch/torch.h>

#include <string>

#include "core/config/experiment.h"
#include "core/engine/batch_source.h"

namespace pm {

struct TensorFile {
  std::string path;
  torch::Tensor x;  // [N, ...] float32, or int64 tokens
  torch::Tensor y;  // [N] int64 labels, [N, T] int64 next tokens, or [N, ...] float32 targets
};

// Reads and checks a tensor file: a dict with tensors "x" and "y" that have the same number of
// samples (at least one); floating x becomes float32, integer x int64, integer y int64, floating
// y float32. Throws DataError(path, ...) naming what is missing or wrong.
TensorFile loadTensorFile(const std::string& path);

// The loss the labels imply: integer [N] classification, integer [N, T] language-model,
// floating regression. With `wanted` other than Auto, checks that the labels fit it
// (DataError(path, ...) otherwise) and returns it.
Task taskOfLabels(const TensorFile& f, ModelTask wanted);

}  // namespace pm
