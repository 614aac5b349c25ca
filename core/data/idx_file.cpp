// IDX reader/writer (http://yann.lecun.com/exdb/mnist/ format), unsigned-byte arrays only.
// Gzipped files are recognised by their magic bytes (1f 8b), not by their name, and are inflated
// as a stream (several concatenated gzip members are accepted, as gzip(1) does). The header is
// validated before the payload is read, and the payload buffer grows only with the bytes actually
// present, so a corrupt header cannot trigger a huge allocation.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "core/data/datasets.h"
#include "core/util/errors.h"

namespace pm {
namespace {

constexpr uint8_t kIdxUnsignedByte = 0x08;
constexpr int kMaxRank = 4;
// Largest payload accepted (and written): 2 GiB. Fashion-MNIST's largest file is 47 MB.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 31;
constexpr size_t kReadChunk = size_t{1} << 20;

std::string hexByte(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", v & 0xFFu);
  return buf;
}

std::string hexWord(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(v));
  return buf;
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Reads the bytes of a file, transparently inflating gzip. read() returns fewer bytes than asked
// only at the end of the data; every problem throws DataError(path, ...).
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw DataError(path_, "cannot open: is a directory");
    errno = 0;
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) throw DataError(path_, std::string("cannot open: ") + std::strerror(errno ? errno : ENOENT));
    // Sniff the gzip magic (1f 8b); whatever was read stays at the front of the input buffer.
    in_.resize(64 * 1024);
    inLen_ = rawRead(in_.data(), 2);
    gzip_ = inLen_ == 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      std::memset(&zs_, 0, sizeof zs_);
      if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw DataError(path_, "cannot initialise zlib");
      zsInit_ = true;
      zs_.next_in = in_.data();
      zs_.avail_in = static_cast<uInt>(inLen_);
      inMember_ = true;
    }
  }
  ~ByteSource() {
    if (zsInit_) inflateEnd(&zs_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  bool gzip() const { return gzip_; }

  size_t read(uint8_t* dst, size_t n) {
    if (n == 0) return 0;
    return gzip_ ? readGzip(dst, n) : readPlain(dst, n);
  }

 private:
  size_t rawRead(uint8_t* dst, size_t n) {
    if (inputEof_) return 0;
    size_t got = std::fread(dst, 1, n, file_.get());
    if (got < n) {
      if (std::ferror(file_.get())) throw DataError(path_, std::string("read error: ") + std::strerror(errno));
      inputEof_ = true;
    }
    return got;
  }

  size_t readPlain(uint8_t* dst, size_t n) {
    size_t got = 0;
    if (inPos_ < inLen_) {  // the sniffed bytes come first
      got = std::min(n, inLen_ - inPos_);
      std::memcpy(dst, in_.data() + inPos_, got);
      inPos_ += got;
    }
    if (got < n) got += rawRead(dst + got, n - got);
    return got;
  }

  // Refills the input buffer when it is empty; returns false at the end of the file.
  bool refill() {
    if (zs_.avail_in > 0) return true;
    size_t got = rawRead(in_.data(), in_.size());
    zs_.next_in = in_.data();
    zs_.avail_in = static_cast<uInt>(got);
    return got > 0;
  }

  size_t readGzip(uint8_t* dst, size_t n) {
    size_t got = 0;
    while (got < n && !outputEof_) {
      if (!inMember_) {
        // Between gzip members: the end of the file, or the start of another member.
        if (!refill()) {
          outputEof_ = true;
          break;
        }
        if (zs_.next_in[0] != 0x1f) throw DataError(path_, "trailing garbage after gzip stream");
        inflateReset(&zs_);
        inMember_ = true;
      }
      if (zs_.avail_in == 0 && !refill()) throw DataError(path_, "truncated gzip stream");
      size_t want = std::min<size_t>(n - got, UINT_MAX);
      zs_.next_out = dst + got;
      zs_.avail_out = static_cast<uInt>(want);
      int rc = inflate(&zs_, Z_NO_FLUSH);
      got += want - zs_.avail_out;
      switch (rc) {
        case Z_OK:
          break;
        case Z_STREAM_END:
          inMember_ = false;
          break;
        case Z_BUF_ERROR:  // no progress: needs more input, which the next iteration provides
          if (zs_.avail_in == 0) break;
          throw DataError(path_, "corrupt gzip stream");
        case Z_MEM_ERROR:
          throw DataError(path_, "out of memory while inflating");
        default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
          throw DataError(path_, std::string("corrupt gzip stream: ") + (zs_.msg ? zs_.msg : "inflate failed"));
      }
    }
    return got;
  }

  std::string path_;
  FilePtr file_;
  std::vector<uint8_t> in_;
  size_t inLen_ = 0, inPos_ = 0;  // plain files: the sniffed prefix
  bool gzip_ = false;
  z_stream zs_{};
  bool zsInit_ = false;
  bool inMember_ = false;
  bool inputEof_ = false;
  bool outputEof_ = false;
};

uint32_t bigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

IdxArray readIdxFile(const std::string& path) {
  ByteSource src(path);

  uint8_t magic[4];
  size_t got = src.read(magic, 4);
  if (got < 4)
    throw DataError(path, "too short for an IDX header: " + std::to_string(got) + " bytes, need at least 4");
  if (magic[0] != 0 || magic[1] != 0)
    throw DataError(path, "bad magic number " + hexWord(bigEndian32(magic)) +
                              ": not an IDX file (the first two bytes must be zero)");
  if (magic[2] != kIdxUnsignedByte)
    throw DataError(path, "unsupported IDX data type " + hexByte(magic[2]) + "; only unsigned byte (" +
                              hexByte(kIdxUnsignedByte) + ") is supported");
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxRank)
    throw DataError(path, "unsupported IDX rank " + std::to_string(rank) + "; expected 1 to " +
                              std::to_string(kMaxRank));

  uint8_t dimBytes[4 * kMaxRank];
  const size_t dimLen = 4 * static_cast<size_t>(rank);
  got = src.read(dimBytes, dimLen);
  if (got < dimLen)
    throw DataError(path, "truncated header: expected " + std::to_string(rank) + " dimensions (" +
                              std::to_string(dimLen) + " bytes), found " + std::to_string(got) + " bytes");

  IdxArray out;
  uint64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    uint32_t d = bigEndian32(dimBytes + 4 * i);
    if (d == 0) throw DataError(path, "dimension " + std::to_string(i) + " is 0");
    out.dims.push_back(static_cast<int64_t>(d));
    total *= d;  // each factor < 2^32 and we stop once past 2^31, so no overflow
    if (total > kMaxPayloadBytes)
      throw DataError(path, "dimensions " + dimsText(out.dims) + (i + 1 < rank ? " x ..." : "") +
                                " exceed the limit of " + std::to_string(kMaxPayloadBytes) + " bytes");
  }

  // Read the payload in chunks so the buffer only grows with data that is really there.
  const size_t expected = static_cast<size_t>(total);
  out.data.reserve(std::min<size_t>(expected, size_t{64} << 20));
  size_t have = 0;
  while (have < expected) {
    size_t chunk = std::min(kReadChunk, expected - have);
    out.data.resize(have + chunk);
    size_t n = src.read(out.data.data() + have, chunk);
    have += n;
    if (n < chunk) break;
  }
  if (have < expected)
    throw DataError(path, "truncated: expected " + std::to_string(expected) + " data bytes, found " +
                              std::to_string(have));
  uint8_t extra;
  if (src.read(&extra, 1) != 0) throw DataError(path, "trailing bytes after data");
  return out;
}

void writeIdxFile(const std::string& path, const IdxArray& array) {
  const size_t rank = array.dims.size();
  if (rank < 1 || rank > static_cast<size_t>(kMaxRank))
    throw DataError(path, "cannot write an IDX array of rank " + std::to_string(rank) + "; expected 1 to " +
                              std::to_string(kMaxRank));
  uint64_t total = 1;
  std::vector<uint8_t> header{0, 0, kIdxUnsignedByte, static_cast<uint8_t>(rank)};
  for (int64_t d : array.dims) {
    if (d <= 0 || d > int64_t{UINT32_MAX})
      throw DataError(path, "cannot write an IDX array with dimension " + std::to_string(d));
    total *= static_cast<uint64_t>(d);
    if (total > kMaxPayloadBytes)
      throw DataError(path, "cannot write an IDX array larger than " + std::to_string(kMaxPayloadBytes) + " bytes");
    uint32_t v = static_cast<uint32_t>(d);
    for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<uint8_t>(v >> shift));
  }
  if (total != array.data.size())
    throw DataError(path, "cannot write: dimensions " + dimsText(array.dims) + " describe " + std::to_string(total) +
                              " bytes but the array holds " + std::to_string(array.data.size()));

  if (endsWith(path, ".gz")) {
    errno = 0;
    gzFile gz = gzopen(path.c_str(), "wb");
    if (!gz)
      throw DataError(path, std::string("cannot open for writing: ") + (errno ? std::strerror(errno) : "gzopen failed"));
    auto write = [&](const uint8_t* p, size_t n) {
      while (n > 0) {
        unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, size_t{1} << 30));
        if (gzwrite(gz, p, chunk) != static_cast<int>(chunk)) {
          int zerr = 0;
          std::string msg = gzerror(gz, &zerr);
          gzclose(gz);
          throw DataError(path, "write error: " + msg);
        }
        p += chunk;
        n -= chunk;
      }
    };
    write(header.data(), header.size());
    write(array.data.data(), array.data.size());
    if (gzclose(gz) != Z_OK) throw DataError(path, "write error while closing the gzip stream");
    return;
  }

  errno = 0;
  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) throw DataError(path, std::string("cannot open for writing: ") + std::strerror(errno ? errno : EIO));
  if (std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      std::fwrite(array.data.data(), 1, array.data.size(), f.get()) != array.data.size())
    throw DataError(path, std::string("write error: ") + std::strerror(errno ? errno : EIO));
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0) throw DataError(path, std::string("write error: ") + std::strerror(errno ? errno : EIO));
}

}  // namespace pm
