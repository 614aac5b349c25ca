#include "core/util/file_digest.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "core/util/errors.h"

namespace pm {
namespace {

// An EVP SHA-256 context fed in pieces.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw EngineError("sha256", "OpenSSL could not start a SHA-256 digest");
  }
  void update(const char* data, size_t n) {
    if (n > 0 && EVP_DigestUpdate(ctx_.get(), data, n) != 1) throw EngineError("sha256", "OpenSSL SHA-256 update failed");
  }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), md, &len) != 1) throw EngineError("sha256", "OpenSSL SHA-256 final failed");
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      out.push_back(digits[md[i] >> 4]);
      out.push_back(digits[md[i] & 15]);
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace

std::string sha256Hex(const std::string& bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

FileDigest digestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, std::string("cannot open: ") + std::strerror(errno));
  FileDigest d;
  d.path = path;
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = in.gcount();
    if (n <= 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
    d.size += n;
  }
  if (in.bad()) throw ConfigError(path, "read error");
  d.sha256 = h.hex();
  return d;
}

}  // namespace pm
