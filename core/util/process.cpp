#include "core/util/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "core/util/errors.h"

extern char** environ;

namespace pm {

pid_t spawnProcess(const std::vector<std::string>& args, int& outFd, int& errFd, const std::string& who) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw EngineError(who, "cannot create pipes");
  if (pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw EngineError(who, "cannot create pipes");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw EngineError(who, "cannot start " + args[0] + ": " + std::strerror(rc));
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  outFd = out[0];
  errFd = err[0];
  return pid;
}

std::vector<std::string> drainLines(int fd, std::string& buf, bool& eof) {
  std::vector<std::string> lines;
  char tmp[65536];
  for (;;) {
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) eof = true;
    break;
  }
  size_t pos;
  while ((pos = buf.find('\n')) != std::string::npos) {
    lines.push_back(buf.substr(0, pos));
    buf.erase(0, pos + 1);
  }
  if (eof && !buf.empty()) {
    lines.push_back(buf);
    buf.clear();
  }
  return lines;
}

std::string signalName(int sig) {
  const char* s = sigabbrev_np(sig);
  return std::string("signal ") + std::to_string(sig) + (s ? std::string(" (SIG") + s + ")" : std::string());
}

std::string selfExecutable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "pipemare";
  buf[n] = 0;
  return buf;
}

}  // namespace pm
