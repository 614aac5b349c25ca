#include "core/util/strings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace pm {

namespace {

bool continuesCharacter(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The code point of the well-formed UTF-8 sequence at s[i], and its length in bytes; 0 when s[i]
// starts none (a stray continuation byte, an overlong form, a surrogate, a value above U+10FFFF,
// or a sequence cut short).
size_t decodeUtf8(const std::string& s, size_t i, uint32_t& cp) {
  const auto byte = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0Fu;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07u;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char x = byte(i + k);
    if (k == 1 ? (x < lo || x > hi) : !continuesCharacter(static_cast<char>(x))) return 0;
    cp = (cp << 6) | (x & 0x3Fu);
  }
  return len;
}

// Code points a terminal acts on instead of showing: C0 controls, DEL, C1 controls (some start
// escape sequences), the bidirectional controls (they reorder what follows, so a name can look
// like another), and the line and paragraph separators.
bool isTerminalControl(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t bestD = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

size_t textLength(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return !continuesCharacter(c); }));
}

std::string firstChars(const std::string& s, size_t n) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (!continuesCharacter(s[i]) && chars++ == n) return s.substr(0, i);
  return s;
}

std::string padText(const std::string& s, size_t width) {
  const size_t length = textLength(s);
  return length >= width ? s : s + std::string(width - length, ' ');
}

std::string fitText(const std::string& s, size_t width) {
  std::vector<size_t> starts;  // the byte offset of each character
  for (size_t i = 0; i < s.size(); ++i)
    if (!continuesCharacter(s[i])) starts.push_back(i);
  if (starts.size() <= width) return s;
  if (width == 0) return "";
  const size_t tail = (width - 1) / 2;
  const size_t head = width - 1 - tail;
  return s.substr(0, starts[head]) + "~" + (tail == 0 ? std::string() : s.substr(starts[starts.size() - tail]));
}

std::string escapeForTerminal(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = decodeUtf8(s, i, cp);
    if (len == 0) {  // not UTF-8: a terminal could take the byte for a C1 control
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[i])));
      out += buf;
      ++i;
      continue;
    }
    if (!isTerminalControl(cp)) {
      out.append(s, i, len);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else {
      std::snprintf(buf, sizeof buf, cp < 0x80 ? "\\x%02x" : "\\u%04X", static_cast<unsigned>(cp));
      out += buf;
    }
    i += len;
  }
  return out;
}

std::string parseRunId(const std::string& text, int64_t& id) {
  const std::string expected = "expected a run id (a positive whole number), found \"" + text + "\"";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return expected;
  const size_t first = text.find_first_not_of('0');
  if (first == std::string::npos) return expected;  // zero
  const std::string digits = text.substr(first);
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  if (digits.size() > max.size() || (digits.size() == max.size() && digits > max))
    return "run id " + text + " is out of range (run ids go up to " + max + ")";
  id = static_cast<int64_t>(std::stoll(digits));
  return "";
}

std::string formatNumber(double v, const char* fmt) {
  char b[48];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string formatDuration(double seconds) {
  char buf[32];
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  long s = static_cast<long>(seconds);
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", s / 3600, (s % 3600) / 60, s % 60);
  }
  return buf;
}

bool naturalLess(const std::string& a, const std::string& b) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the numbers without leading zeros: by length, then digit by digit.
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace pm
