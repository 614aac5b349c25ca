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
  return what.substr(0, what.find('\n'));
}

}  // namespace pm
