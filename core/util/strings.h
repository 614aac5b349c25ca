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
// Human-readable byte count: 1.5 MiB.
std::string formatBytes(double bytes);
// 1h02m03s / 4m05s / 12.3s
std::string formatDuration(double seconds);

}  // namespace pm
