#pragma once
// Plain TCP for the launchers of a multi-node run (event streams of remote nodes). IPv4 and
// host names; no shell, no external tools.
#include <cstddef>
#include <optional>
#include <string>

namespace pm {

// Throws ConfigError (exit 2) at `place` when `host` is neither an IPv4 address nor a name that
// resolves to one (a typo in MASTER_ADDR would otherwise read as a rendezvous timeout).
void checkHostResolves(const std::string& host, const std::string& place);
// A listening socket bound to addr:port (addr "" = loopback). Throws EngineError naming it.
int listenTcp(const std::string& addr, int port);
// Connects to addr:port, retrying until timeoutS passes. Throws EngineError naming it.
// Returns a non-blocking socket (each attempt bounded by the time left, retried until the timeout).
int connectTcp(const std::string& addr, int port, double timeoutS);
// Accepts a pending connection (non-blocking fd) or returns -1.
int acceptTcp(int listenFd);
// Writes all of `data`; false when the peer has gone.
// Blocking or not: waits (up to 30 s at a time) for room in a full socket.
bool sendAll(int fd, const std::string& data);
// Waits up to `timeoutS` for one complete line on the non-blocking `fd` (the rest stays in `buf`);
// nothing on timeout or end of file.
// With `maxLine` > 0, more than that many bytes without a line end is nothing too.
std::optional<std::string> awaitLine(int fd, std::string& buf, double timeoutS, size_t maxLine = 0);

// "ADDR:PORT" of a connected socket's peer, "an unknown address" when it cannot be told.
std::string peerAddress(int fd);

}  // namespace pm
