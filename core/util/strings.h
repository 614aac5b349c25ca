#pragma once
// Small string helpers used by validation and printing.
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
// `s` in at most `width` bytes: unchanged when it fits, else its head and its tail joined by "~"
// (the tail keeps what tells sweep points apart: "study-resnet20-t1t2 [optimizer.lr=0.3]" ->
// "study-resnet~zer.lr=0.3]" in 24), cut at UTF-8 character boundaries.
std::string fitText(const std::string& s, size_t width);
// Human-readable byte count: 1.5 MiB.
std::string formatBytes(double bytes);
// 1h02m03s / 4m05s / 12.3s
std::string formatDuration(double seconds);

}  // namespace pm
