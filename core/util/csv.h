#pragma once
// CSV fields for the command line's exports (`pipemare export --csv`): quoted text, numbers at
// full precision. The Compare view writes its CSV with Qt strings (ui/compare/compare_csv.h).
#include <string>

namespace pm {

// `text` as one field: as it is, or in double quotes (inner quotes doubled) when it holds a comma,
// a double quote or a newline.
std::string csvField(const std::string& text);
// %.17g, which reads back as the same double; "" for NaN.
std::string csvNumber(double value);

}  // namespace pm
