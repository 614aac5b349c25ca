#include "core/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "core/util/errors.h"

namespace pm {

namespace {

std::string randomSuffix() {
  static thread_local std::mt19937_64 gen{std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(gen()));
  return buf;
}

}  // namespace

std::string writeTemporaryBeside(const std::string& path, std::string_view bytes, mode_t mode) {
  int fd = -1;
  std::string tmp;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + randomSuffix();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) throw FileError(path, std::string("cannot create a temporary file beside it: ") + std::strerror(errno));
  }
  if (fd < 0) throw FileError(path, "cannot create a temporary file beside it (16 names taken)");
  auto fail = [&](const char* what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw FileError(path, std::string(what) + ": " + std::strerror(err));
  };
  // The mode exactly as asked, whatever the umask.
  if (::fchmod(fd, mode) != 0) fail("cannot set its mode", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write it", n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot write it", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw FileError(path, std::string("cannot write it: ") + std::strerror(err));
  }
  return tmp;
}

void writeFileAtomically(const std::string& path, std::string_view bytes, mode_t mode) {
  const std::string tmp = writeTemporaryBeside(path, bytes, mode);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw FileError(path, std::string("cannot put it in place: ") + std::strerror(err));
  }
}

}  // namespace pm
