// libFuzzer target: the experiment parser (JSON text, --set overrides, validation).
// Input: experiment JSON text, optionally followed by a NUL byte and newline-separated
// `key=value` overrides. Properties: no crash, leak or hang; a rejected input is a pm::Error
// with a place and message; an accepted experiment serialises to JSON that parses back to the
// same experiment.
#include <algorithm>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string text = input.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string::npos) {
    std::string rest = input.substr(nul + 1);
    size_t start = 0;
    while (start <= rest.size() && overrides.size() < 16) {
      const size_t end = rest.find('\n', start);
      overrides.push_back(rest.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  pm::Experiment e;
  try {
    pm::Json j = pm::parseExperimentText(text, "fuzz.json");
    // Valid JSON: every field's line (for error places) lies within the text.
    const auto lines = pm::fieldLines(text);
    const long total = 1 + std::count(text.begin(), text.end(), '\n');
    for (const auto& [path, line] : lines)
      if (line < 1 || line > total) pmfuzz::fail("field " + path + " placed on line " + std::to_string(line) + " of " + std::to_string(total));
    if (j.is_object() && text.find('\\') == std::string::npos)  // escapes in keys are not decoded
      for (const auto& item : j.items())
        if (!lines.count(item.key()))
          pmfuzz::fail("top-level field " + item.key() + " has no line");
    if (!overrides.empty()) j = pm::applyOverrides(j, overrides);
    e = pm::experimentFromJson(j, "fuzz.json");
  } catch (const pm::Error& err) {
    pmfuzz::checkRejection(err);
    return 0;
  }
  // Accepted: the canonical form must be accepted again and describe the same experiment.
  try {
    const pm::Json canonical = pm::experimentToJson(e);
    const pm::Experiment again = pm::experimentFromJson(pm::parseExperimentText(canonical.dump(2), "canonical"), "canonical");
    if (pm::experimentToJson(again) != canonical) pmfuzz::fail("round trip changed the experiment: " + canonical.dump());
  } catch (const pm::Error& err) {
    pmfuzz::fail(std::string("an accepted experiment's canonical form was rejected: ") + err.what());
  }
  return 0;
}
