#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/config/experiment.h"
#include "core/config/field_spec.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

// Experiment files and --set overrides: JSON text -> Json (with places for syntax errors), then
// experiment.cpp's experimentFromJson does the rest.

namespace pm {

using namespace config_detail;

// Parses JSON text; syntax errors and duplicate keys become ConfigError naming the place.
// Deeper JSON than any experiment needs is refused (a parse and a print of 100,000 levels recurse).
constexpr size_t kMaxJsonDepth = 64;

Json parseExperimentText(const std::string& text, const std::string& name) {
  struct Frame {
    bool object;
    std::vector<std::string> keys;
    size_t index = 0;
  };
  std::vector<Frame> frames;
  auto pathOf = [&frames]() {
    std::string s;
    for (const auto& f : frames) {
      if (f.object && !f.keys.empty())
        s += (s.empty() ? "" : ".") + f.keys.back();
      else if (!f.object)
        s += "[" + std::to_string(f.index) + "]";
    }
    return s;
  };
  Json::parser_callback_t cb = [&](int, Json::parse_event_t ev, Json& parsed) {
    using E = Json::parse_event_t;
    switch (ev) {
      case E::object_start:
      case E::array_start:
        // No experiment nests deeply; the limit keeps a file that does (100,000 levels) from
        // overflowing the stack in the error message's printing of the value, which recurses.
        if (frames.size() >= kMaxJsonDepth) {
          std::string at = pathOf();
          if (textLength(at) > 40) at = firstChars(at, 40) + "...";
          throw ConfigError(name + (at.empty() ? std::string() : ": " + at),
                            "nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
        }
        frames.push_back(Frame{ev == E::object_start, {}, 0});
        break;
      case E::key: {
        auto& keys = frames.back().keys;
        std::string k = parsed.get<std::string>();
        if (std::find(keys.begin(), keys.end(), k) != keys.end()) {
          keys.push_back(k);
          // The line of the second occurrence.
          std::map<std::string, int> repeated;
          fieldLines(text, &repeated);
          const auto at = repeated.find(pathOf());
          throw ConfigError(name + (at != repeated.end() ? ":" + std::to_string(at->second) : std::string()) + ": " + pathOf(),
                            "duplicate key " + inQuotes(k));
        }
        keys.push_back(k);
        break;
      }
      case E::object_end:
      case E::array_end:
        frames.pop_back();
        if (!frames.empty() && !frames.back().object) ++frames.back().index;
        break;
      case E::value:
        if (!frames.empty() && !frames.back().object) ++frames.back().index;
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, cb);
  } catch (const Json::parse_error& ex) {
    // ex.byte is the 1-based offset of the character that broke the parse.
    size_t pos = ex.byte > 0 ? std::min<size_t>(ex.byte - 1, text.size()) : 0;
    size_t line = 1, lineStart = 0;
    for (size_t i = 0; i < pos; ++i)
      if (text[i] == '\n') {
        ++line;
        lineStart = i + 1;
      }
    std::string msg = ex.what();
    size_t pe = msg.find("parse error");
    size_t colon = pe == std::string::npos ? std::string::npos : msg.find(": ", pe);
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    throw ConfigError(name + ":" + std::to_string(line) + ":" + std::to_string(pos - lineStart + 1),
                      "invalid JSON: " + msg);
  } catch (const Json::exception& ex) {
    // A number too large for a double ("1e999"): nlohmann names the token but not its position,
    // so find the token's first occurrence for the line and column.
    std::string msg = ex.what();
    const size_t open = msg.find('\'');
    const size_t close = open == std::string::npos ? std::string::npos : msg.find('\'', open + 1);
    std::string place = name;
    if (close != std::string::npos) {
      const std::string token = msg.substr(open + 1, close - open - 1);
      const size_t pos = token.empty() ? std::string::npos : text.find(token);
      if (pos != std::string::npos) {
        size_t line = 1, lineStart = 0;
        for (size_t i = 0; i < pos; ++i)
          if (text[i] == '\n') {
            ++line;
            lineStart = i + 1;
          }
        place += ":" + std::to_string(line) + ":" + std::to_string(pos - lineStart + 1);
      }
      msg = "number out of range: " + token;
    }
    throw ConfigError(place, "invalid JSON: " + msg);
  }
}

namespace {

bool pathCovers(const std::string& override, const std::string& field) {
  auto under = [](const std::string& a, const std::string& b) {  // a is b or inside b
    return a.compare(0, b.size(), b) == 0 && (a.size() == b.size() || a[b.size()] == '.' || a[b.size()] == '[');
  };
  return !field.empty() && (under(field, override) || under(override, field));
}

}  // namespace

std::map<std::string, int> fieldLines(const std::string& text, std::map<std::string, int>* repeated) {
  struct Frame {
    bool object;
    std::string key;  // object: the key whose value comes next (or came last)
    size_t index = 0;  // array: the element's index
    bool expectKey = true;
  };
  std::map<std::string, int> lines;
  std::vector<Frame> frames;
  int line = 1;
  auto pathHere = [&frames]() {
    std::string s;
    for (const auto& f : frames) {
      if (f.object)
        s += (s.empty() ? "" : ".") + f.key;
      else
        s += "[" + std::to_string(f.index) + "]";
    }
    return s;
  };
  auto valueStarts = [&] {  // an array element starts here: its place is this line
    if (!frames.empty() && !frames.back().object) lines.emplace(pathHere(), line);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      std::string str;
      const int startLine = line;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          ++i;  // the escaped character is part of the string (\" does not end it)
          str += text[i] == 'n' ? '\n' : text[i];
          continue;
        }
        if (text[i] == '\n') ++line;
        str += text[i];
      }
      if (!frames.empty() && frames.back().object && frames.back().expectKey) {
        frames.back().key = str;  // escapes other than \" and \\ are rare in keys; kept simple
        frames.back().expectKey = false;
        if (!lines.emplace(pathHere(), startLine).second && repeated) repeated->emplace(pathHere(), startLine);
      } else {
        valueStarts();
      }
    } else if (c == '{' || c == '[') {
      valueStarts();
      frames.push_back(Frame{c == '{', {}, 0, true});
    } else if (c == '}' || c == ']') {
      if (!frames.empty()) frames.pop_back();
    } else if (c == ',') {
      if (!frames.empty()) {
        if (frames.back().object)
          frames.back().expectKey = true;
        else
          ++frames.back().index;
      }
    } else if (c != ':' && c != ' ' && c != '\t' && c != '\r') {
      // A number, true, false or null: skip to its end.
      valueStarts();
      while (i + 1 < text.size() && std::strchr(",}] \t\r\n", text[i + 1]) == nullptr) ++i;
    }
  }
  return lines;
}

namespace {

std::string readExperimentText(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path, "cannot open: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(path, "cannot read the file");
  return ss.str();
}

}  // namespace

Json loadExperimentJson(const std::string& path) { return parseExperimentText(readExperimentText(path), path); }

namespace {

// A field's problem as loadExperimentFile names it: with the line of the field (or of its nearest
// enclosing field in the file; a missing field is placed at its section). `source` is how the
// message names the file ("x.json", "x.json (with --set)").
[[noreturn]] void throwWithLine(const FieldError& ex, const std::string& text, const std::string& path, const std::string& suffix) {
  const auto lines = fieldLines(text);
  std::string field = ex.field();
  while (!field.empty() && !lines.count(field)) {
    const size_t cut = field.find_last_of(".[");
    field = cut == std::string::npos ? std::string() : field.substr(0, cut);
  }
  if (field.empty()) throw ex;
  throw FieldError(path + ":" + std::to_string(lines.at(field)) + suffix, ex.field(), ex.problem());
}

}  // namespace

void resolveFilePaths(Experiment& e, const std::string& experimentPath) {
  namespace fs = std::filesystem;
  const fs::path base = fs::absolute(fs::path(experimentPath)).parent_path();
  auto resolve = [&](std::string& p) {
    if (!p.empty() && fs::path(p).is_relative()) p = (base / p).lexically_normal().string();
  };
  resolve(e.model.path);
  if (e.data.dataset == DatasetKind::Tensors) {
    resolve(e.data.path);
    resolve(e.data.eval_path);
  }
}

Experiment loadExperimentFile(const std::string& path) {
  const std::string text = readExperimentText(path);
  const Json j = parseExperimentText(text, path);
  try {
    Experiment e = experimentFromJson(j, path);
    resolveFilePaths(e, path);
    return e;
  } catch (const FieldError& ex) {
    throwWithLine(ex, text, path, "");
  }
}

Experiment loadExperimentFile(const std::string& path, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return loadExperimentFile(path);
  const std::string text = readExperimentText(path);
  // A problem an override causes is the override's (applyOverrides); any other is the file's,
  // with its line.
  const Json j = applyOverrides(parseExperimentText(text, path), overrides);
  try {
    Experiment e = experimentFromJson(j, path + " (with --set)");
    resolveFilePaths(e, path);
    return e;
  } catch (const FieldError& ex) {
    throwWithLine(ex, text, path, " (with --set)");
  }
}

Json applyOverrides(Json j, const std::vector<std::string>& overrides) {
  if (j.is_null()) j = Json::object();
  if (!j.is_object()) throw ConfigError("--set", "the experiment is not a JSON object, found " + shown(j));
  std::vector<std::string> paths;
  for (const auto& text : overrides) {
    const std::string place = "--set " + text;
    size_t eq = text.find('=');
    if (eq == std::string::npos) throw ConfigError(place, "expected key=value, e.g. pipeline.stages=4");
    const std::string key = trim(text.substr(0, eq));
    const std::string raw = text.substr(eq + 1);
    auto parts = split(key, '.');
    for (const auto& part : parts)
      if (part.empty()) throw ConfigError(place, "expected key=value with a dotted key such as pipeline.stages");
    Json value;
    try {
      value = Json::parse(raw, [&](int depth, Json::parse_event_t ev, Json&) {
        if ((ev == Json::parse_event_t::object_start || ev == Json::parse_event_t::array_start) &&
            depth >= static_cast<int>(kMaxJsonDepth))
          throw ConfigError("--set " + trim(text.substr(0, eq)), "nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
        return true;
      });
    } catch (const Json::parse_error&) {
      value = raw;  // not JSON: a plain string (gpipe, cuda:0, ...)
    } catch (const Json::exception&) {
      // A number beyond double's range (found by tests/fuzz/fuzz_experiment).
      throw ConfigError(place, "number out of range: " + trim(raw));
    }
    Json* node = &j;
    std::string walked;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      walked += (walked.empty() ? "" : ".") + parts[i];
      Json& child = (*node)[parts[i]];
      if (child.is_null()) child = Json::object();
      if (!child.is_object())
        throw ConfigError(place, walked + " is not a section: it holds " + shown(child));
      node = &child;
    }
    (*node)[parts.back()] = std::move(value);
    paths.push_back(key);
  }
  // Report a problem an override caused as that override's; anything else is left to the caller's
  // validation, which names the experiment's own source.
  try {
    experimentFromJson(j, "--set");
  } catch (const FieldError& ex) {
    for (size_t i = overrides.size(); i-- > 0;)
      if (pathCovers(paths[i], ex.field()))
        throw ConfigError("--set " + overrides[i],
                          ex.field() == paths[i] ? ex.problem() : ex.field() + ": " + ex.problem());
  }
  return j;
}

}  // namespace pm
