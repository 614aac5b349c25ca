#include "core/events/node_link.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util/errors.h"

namespace pm {
namespace {

constexpr size_t kMinSecretBytes = 16;
constexpr size_t kMacHexLength = 64;  // SHA-256

std::string toHex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

bool isLowerHex(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string hmacHex(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), out, &len))
    throw EngineError("node link", "HMAC-SHA256 failed (OpenSSL)");
  return toHex(out, len);
}

bool sameMac(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string trimTrailingSpace(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

std::string defaultSecretPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/pipemare/run-secret";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.config/pipemare/run-secret";
}

// Reads a secret file that only its owner may read.
std::string readSecretFile(const std::string& path, const std::string& place) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ConfigError(place, "cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw ConfigError(place, path + " is not a regular file");
  if (st.st_mode & 077) throw ConfigError(place, path + " can be read by other users (make it private: chmod 600 " + path + ")");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError(place, "cannot read " + path);
  std::ostringstream text;
  text << f.rdbuf();
  return trimTrailingSpace(text.str());
}

// The folders of the user's secret file (its own and the one above) must be this user's (or
// root's) and writable by nobody else: with HOME unset the file is /tmp/.config/pipemare/run-secret,
// and another local user who made /tmp/.config first would otherwise choose (or read) the secret.
void requirePrivateFolders(const std::string& secretPath) {
  const std::filesystem::path dir = std::filesystem::path(secretPath).parent_path();
  for (const std::filesystem::path& d : {dir, dir.parent_path()}) {
    struct stat st {};
    if (d.empty() || ::stat(d.c_str(), &st) != 0) continue;
    const std::string hint = "; set XDG_CONFIG_HOME (or HOME) to a folder of your own, or give --secret-file";
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
      throw ConfigError(kRunSecretEnv, "the run secret's folder " + d.string() + " belongs to another user (uid " +
                                           std::to_string(st.st_uid) + ")" + hint);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
      throw ConfigError(kRunSecretEnv, "the run secret's folder " + d.string() + " can be written by other users (mode " +
                                           [&] {
                                             char m[8];
                                             std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(st.st_mode & 07777));
                                             return std::string(m);
                                           }() + ")" + hint);
  }
}

// The user's secret file, made (mode 0600, 32 random bytes as hex) when absent. Two launchers
// making it at once agree: the file appears whole through link(), and the loser reads the winner's.
std::string userSecret(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    requirePrivateFolders(path);  // before anything is made in them
    std::filesystem::create_directories(dir, ec);
    ::chmod(dir.c_str(), 0700);
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw ConfigError(kRunSecretEnv, "no run secret given, and cannot make " + path + ": " + std::strerror(errno));
    const std::string secret = randomNonce() + randomNonce() + "\n";
    const bool written = ::write(fd, secret.data(), secret.size()) == static_cast<ssize_t>(secret.size());
    ::close(fd);
    if (written && ::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      ::unlink(tmp.c_str());
      throw ConfigError(kRunSecretEnv, "no run secret given, and cannot make " + path + ": " + std::strerror(errno));
    }
    ::unlink(tmp.c_str());
  }
  requirePrivateFolders(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid())
    throw ConfigError(kRunSecretEnv, "the run secret " + path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  return readSecretFile(path, kRunSecretEnv);
}

}  // namespace

RunSecret loadRunSecret(const std::string& secretFile) {
  RunSecret s;
  if (!secretFile.empty()) {
    s.source = "--secret-file " + secretFile;
    s.bytes = readSecretFile(secretFile, "--secret-file");
  } else if (const char* env = std::getenv(kRunSecretEnv); env && *env) {
    s.source = kRunSecretEnv;
    s.bytes = env;
  } else {
    s.source = defaultSecretPath();
    s.bytes = userSecret(s.source);
  }
  if (s.bytes.size() < kMinSecretBytes)
    throw ConfigError(s.source, "the run secret is " + std::to_string(s.bytes.size()) + " bytes long; it needs at least " +
                                    std::to_string(kMinSecretBytes));
  return s;
}

std::string randomNonce() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw EngineError("node link", "no random bytes from OpenSSL");
  return toHex(b, sizeof b);
}

NodeLinkSession::NodeLinkSession(const std::string& secret, const std::string& challenge, const std::string& nonce, bool node0)
    : key_(hmacHex(secret, "pipemare node link 1\n" + challenge + "\n" + nonce)), node0_(node0) {}

std::string NodeLinkSession::mac(const std::string& direction, uint64_t seq, const std::string& text) const {
  return hmacHex(key_, direction + "\n" + std::to_string(seq) + "\n" + text);
}

std::string NodeLinkSession::seal(const Json& msg) {
  const std::string text = msg.dump();
  return mac(node0_ ? "down" : "up", sent_++, text) + " " + text + "\n";
}

std::optional<Json> NodeLinkSession::open(const std::string& line) {
  if (line.size() < kMacHexLength + 2 || line[kMacHexLength] != ' ') return std::nullopt;
  const std::string text = line.substr(kMacHexLength + 1);
  if (!sameMac(line.substr(0, kMacHexLength), mac(node0_ ? "up" : "down", received_, text))) return std::nullopt;
  Json msg = Json::parse(text, nullptr, false);
  if (msg.is_discarded() || !msg.is_object()) return std::nullopt;
  ++received_;
  return msg;
}

std::optional<NodeLinkSession> acceptHello(const std::string& secret, const std::string& challenge, const std::string& line,
                                           Json& hello, std::string& why) {
  const Json claimed = line.size() > kMacHexLength + 1 ? Json::parse(line.substr(kMacHexLength + 1), nullptr, false) : Json();
  if (!claimed.is_object() || claimed.value("type", "") != node_msg::kHello) {
    why = "its first line is not a node hello";
    return std::nullopt;
  }
  const std::string nonce = claimed.value("nonce", std::string());
  if (nonce.size() != 32 || !isLowerHex(nonce)) {
    why = "its hello has no valid nonce";
    return std::nullopt;
  }
  NodeLinkSession session(secret, challenge, nonce, /*node0=*/true);
  auto msg = session.open(line);
  if (!msg) {
    why = "authentication failed (its run secret differs from this node's: give every node the same " +
          std::string(kRunSecretEnv) + " or --secret-file)";
    return std::nullopt;
  }
  hello = *msg;
  return session;
}

}  // namespace pm
