#pragma once
// How messages show LibTorch's values: a shape as "[1, 28, 28]", and the first line of an error
// LibTorch threw (without the C++ backtrace c10::Error carries).
#include <torch/torch.h>

#include <exception>
#include <string>

namespace pm {

std::string shapeText(c10::IntArrayRef sizes);
// The first line of the error; for a TorchScript interpreter failure, the failed operation's own
// message (its RuntimeError line: what it expected and what it got) instead of "The following
// operation failed in the TorchScript interpreter."
std::string errorFirstLine(const std::exception& ex);

}  // namespace pm
