#include "core/models/torch_text.h"

namespace pm {

std::string shapeText(c10::IntArrayRef sizes) {
  std::string out;
  for (int64_t d : sizes) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "[" + out + "]";
}

std::string errorFirstLine(const std::exception& ex) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&ex);
  const std::string what = c10 ? c10->what_without_backtrace() : ex.what();
  const std::string first = what.substr(0, what.find('\n'));
  // The TorchScript interpreter's first line only says that it failed ("The following operation
  // failed in the TorchScript interpreter."); the operation's own error (what it expected and what
  // it got) is the last "RuntimeError: " line of its traceback.
  if (first.find("TorchScript interpreter") == std::string::npos) return first;
  const std::string tag = "RuntimeError: ";
  const size_t at = what.rfind(tag);
  if (at == std::string::npos) return first;
  std::string cause = what.substr(at + tag.size());
  cause = cause.substr(0, cause.find('\n'));
  while (!cause.empty() && (cause.back() == ' ' || cause.back() == '\r')) cause.pop_back();
  return cause.empty() ? first : cause + " (in the TorchScript interpreter)";
}

}  // namespace pm
