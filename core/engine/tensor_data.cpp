#include "core/engine/tensor_data.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/models/torch_text.h"
#include "core/util/errors.h"
#include "core/util/strings.h"
#include "core/util/zip_check.h"

namespace pm {

TensorFile loadTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path, std::string("cannot open: ") + std::strerror(errno));
  if (const std::string bomb = zipBombProblem(path); !bomb.empty()) throw DataError(path, bomb);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string advice = " (write it in Python with torch.save({\"x\": x, \"y\": y}, path))";
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& ex) {
    throw DataError(path, "not a readable torch.save file" + advice + ": " + errorFirstLine(ex));
  }
  if (!value.isGenericDict()) throw DataError(path, "holds a " + value.tagKind() + ", not a dict of tensors" + advice);
  const auto dict = value.toGenericDict();
  std::vector<std::string> keys;
  for (const auto& item : dict) keys.push_back(item.key().isString() ? "\"" + item.key().toStringRef() + "\"" : item.key().tagKind());
  auto tensor = [&](const char* name) {
    for (const auto& item : dict) {
      if (!item.key().isString() || item.key().toStringRef() != name) continue;
      if (!item.value().isTensor())
        throw DataError(path, std::string("\"") + name + "\" is a " + item.value().tagKind() + ", not a tensor" + advice);
      return item.value().toTensor();
    }
    throw DataError(path, std::string("has no tensor \"") + name + "\" (found keys: " + (keys.empty() ? "none" : join(keys, ", ")) +
                              ")" + advice);
  };
  TensorFile f;
  f.path = path;
  torch::Tensor x = tensor("x");
  torch::Tensor y = tensor("y");
  if (x.dim() < 1 || x.size(0) < 1) throw DataError(path, "tensor \"x\" has no samples (shape " + shapeText(x.sizes()) + ")");
  if (y.dim() < 1 || y.size(0) != x.size(0))
    throw DataError(path, "tensor \"y\" of shape " + shapeText(y.sizes()) + " does not have one label per sample of \"x\" (shape " +
                              shapeText(x.sizes()) + ")");
  if (x.is_complex() || y.is_complex() || x.scalar_type() == torch::kBool || y.scalar_type() == torch::kBool)
    throw DataError(path, "tensors \"x\" and \"y\" must hold real numbers or integers");
  f.x = (x.is_floating_point() ? x.to(torch::kFloat) : x.to(torch::kLong)).contiguous();
  f.y = (y.is_floating_point() ? y.to(torch::kFloat) : y.to(torch::kLong)).contiguous();
  return f;
}

Task taskOfLabels(const TensorFile& f, ModelTask wanted) {
  const bool integer = !f.y.is_floating_point();
  Task implied = !integer ? Task::Regression : f.y.dim() == 1 ? Task::Classification : Task::LanguageModel;
  const std::string found = std::string(integer ? "integer" : "floating-point") + " labels of shape " + shapeText(f.y.sizes());
  switch (wanted) {
    case ModelTask::Auto:
      return implied;
    case ModelTask::Classification:
      if (!integer || f.y.dim() != 1)
        throw DataError(f.path, "model.task=classification needs integer class labels \"y\" of shape [N], found " + found);
      return Task::Classification;
    case ModelTask::LanguageModel:
      if (!integer || f.y.dim() < 2)
        throw DataError(f.path, "model.task=language-model needs integer next-token labels \"y\" of shape [N, T], found " + found);
      return Task::LanguageModel;
    case ModelTask::Regression:
      if (integer) throw DataError(f.path, "model.task=regression needs floating-point targets \"y\", found " + found);
      return Task::Regression;
  }
  return implied;
}

}  // namespace pm
