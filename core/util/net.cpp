#include "core/util/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {
namespace {

// An IPv4 address literal or a host name: 0 and *out set, or getaddrinfo's error code.
int lookupIPv4(const std::string& host, in_addr* out) {
  if (inet_pton(AF_INET, host.c_str(), out) == 1) return 0;
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc == 0 && res) *out = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  if (res) freeaddrinfo(res);
  return rc == 0 && !res ? EAI_NONAME : rc;
}

sockaddr_in resolve(const std::string& addr, int port, const std::string& where) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  const std::string host = addr.empty() ? "127.0.0.1" : addr;
  if (lookupIPv4(host, &sa.sin_addr) != 0) throw EngineError(where, "cannot resolve host \"" + host + "\"");
  return sa;
}

}  // namespace

void checkHostResolves(const std::string& host, const std::string& place) {
  if (host.empty()) return;
  in_addr a{};
  const int rc = lookupIPv4(host, &a);
  // Only a name that cannot exist is refused: a temporary failure (EAI_AGAIN, a resolver not up
  // yet) is left to the rendezvous, which retries until execution.timeout_s.
  if (rc == EAI_NONAME || rc == EAI_FAIL
#ifdef EAI_NODATA
      || rc == EAI_NODATA
#endif
  )
    throw ConfigError(place, "cannot resolve host \"" + host + "\" (" + gai_strerror(rc) +
                                 "): give the IPv4 address or host name of the node that runs rank 0");
}

int listenTcp(const std::string& addr, int port) {
  const std::string where = "listen " + addr + ":" + std::to_string(port);
  sockaddr_in sa = resolve(addr, port, where);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw EngineError(where, "cannot create a socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 16) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    throw EngineError(where, "cannot listen: " + err);
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

int connectTcp(const std::string& addr, int port, double timeoutS) {
  const std::string where = "connect " + addr + ":" + std::to_string(port);
  sockaddr_in sa = resolve(addr, port, where);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  std::string err;
  for (;;) {
    // Non-blocking, each attempt bounded by the time left: a blocking connect() to an address
    // that drops packets waits for the kernel's SYN retries (minutes), past the timeout.
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw EngineError(where, "cannot create a socket");
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno == EINPROGRESS) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(left, 1000)))) == 1) {
        int soErr = 0;
        socklen_t len = sizeof soErr;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &len);
        rc = soErr == 0 ? 0 : -1;
        errno = soErr;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) return fd;  // non-blocking: sendAll waits for room, readers poll
    err = std::strerror(errno);
    ::close(fd);
    if (std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw EngineError(where, "no answer within " + std::to_string(static_cast<int>(timeoutS)) + " s (" + err +
                               "); is the node-rank 0 launcher running?");
}

int acceptTcp(int listenFd) {
  int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  return fd;
}

bool sendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking socket that is full: wait for room
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 30000) != 1) return false;  // a peer that reads nothing for 30 s is gone
      continue;
    }
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string> awaitLine(int fd, std::string& buf, double timeoutS, size_t maxLine) {
  const double deadline = monotonicSeconds() + timeoutS;
  for (;;) {
    if (const auto at = buf.find('\n'); at != std::string::npos) {
      std::string line = buf.substr(0, at);
      buf.erase(0, at + 1);
      return line;
    }
    if (maxLine > 0 && buf.size() > maxLine) return std::nullopt;
    const double left = deadline - monotonicSeconds();
    if (left <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
    char tmp[4096];
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n == 0) return std::nullopt;
    if (n > 0) buf.append(tmp, static_cast<size_t>(n));
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return std::nullopt;
  }
}

std::string peerAddress(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET) return "an unknown address";
  char ip[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
}

}  // namespace pm
