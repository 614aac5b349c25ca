#pragma once
// How messages show LibTorch's values: a shape as "[1, 28, 28]", and the first line of an error
// LibTorch threw (without the C++ backtrace c10::Error carries).
#include <torch/torch.h>

#include <exception>
#include <string>

namespace pm {

std::string shapeText(c10::IntArrayRef sizes);
std::string errorFirstLine(const std::exception& ex);

}  // namespace pm
