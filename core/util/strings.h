#pragma once
// Small string helpers used by validation and printing.
#include <cstdint>
#include <string>
#include <vector>

namespace pm {

// Edit distance (insert/delete/substitute, each cost 1).
size_t editDistance(const std::string& a, const std::string& b);
// The closest candidate within a distance that scales with the word's length, or "" when none is close.
std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates);
std::vector<std::string> split(const std::string& s, char sep);
std::string join(const std::vector<std::string>& parts, const std::string& sep);
std::string trim(const std::string& s);
// Text order with runs of digits compared as numbers: "stage2/tau" before "stage10/tau".
bool naturalLess(const std::string& a, const std::string& b);
// Characters (UTF-8 code points) in `s`: its bytes that do not continue a multi-byte character.
size_t textLength(const std::string& s);
// The first `n` characters of `s` (all of it when it has no more), never part of a character.
std::string firstChars(const std::string& s, size_t n);
// `s` followed by spaces up to `width` characters, for a table column (printf's %-*s counts bytes).
std::string padText(const std::string& s, size_t width);
// `s` in at most `width` characters: unchanged when it fits, else its head and its tail joined by
// "~" (the tail keeps what tells sweep points apart: "study-resnet20-t1t2 [optimizer.lr=0.3]" ->
// "study-resnet~zer.lr=0.3]" in 24). Characters are UTF-8 code points, never cut in part.
std::string fitText(const std::string& s, size_t width);
// `s` made safe to print on a terminal: C0 controls, DEL, C1 controls, the bidirectional controls
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) and the line and paragraph separators
// (U+2028, U+2029) are written as escapes (\n, \t, \r, \x1b, \u202E), and so is each byte that is
// not part of well-formed UTF-8 (\xff). Everything else, backslashes included, is kept as it is.
// For human-readable output only: stores and JSON keep the exact text.
std::string escapeForTerminal(const std::string& s);
// Reads a run id as typed on a command line: digits only (no sign, no spaces), 1..2^63-1. Returns
// "" and sets `id`, else the problem in words: `expected a run id (a positive whole number), found
// "1abc"`, or that the number is out of range.
std::string parseRunId(const std::string& text, int64_t& id);
// Human-readable byte count: 1.5 MiB.
std::string formatBytes(double bytes);
// 1h02m03s / 4m05s / 12.3s
std::string formatDuration(double seconds);
// A number by a printf format for one double ("%.4g" by default: 0.1189, 2.63e-05, inf, nan).
std::string formatNumber(double v, const char* fmt = "%.4g");

}  // namespace pm
