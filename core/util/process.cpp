#include "core/util/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string_view>
#include <thread>

#include "core/util/errors.h"

extern char** environ;

namespace pm {

std::vector<char*> execArgv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// The inherited environment with `extra` ("NAME=value") added; an inherited variable of the same
// name is left out (getenv reads the first one, so an inherited LOCAL_RANK would otherwise win).
std::vector<char*> execEnvironment(const std::vector<std::string>& extra) {
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    bool replaced = false;
    for (const auto& x : extra)
      if (eq != std::string_view::npos && x.size() > eq && x.compare(0, eq + 1, entry.substr(0, eq + 1)) == 0) replaced = true;
    if (!replaced) envp.push_back(*e);
  }
  for (const auto& e : extra) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  return envp;
}

pid_t spawnProcess(const std::vector<std::string>& args, int& outFd, int& errFd, const std::string& who, int* lifelineFd,
                   const std::vector<std::string>& extraEnv) {
  int out[2], err[2], life[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0) throw EngineError(who, "cannot create pipes");
  if (pipe2(err, O_CLOEXEC) != 0 || (lifelineFd && pipe2(life, O_CLOEXEC) != 0)) {
    for (int fd : {out[0], out[1], err[0], err[1], life[0], life[1]})
      if (fd >= 0) ::close(fd);
    throw EngineError(who, "cannot create pipes");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  if (lifelineFd) posix_spawn_file_actions_adddup2(&fa, life[0], 0);
  std::vector<char*> argv = execArgv(args);
  std::vector<char*> envp = execEnvironment(extraEnv);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  if (life[0] >= 0) ::close(life[0]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    if (life[1] >= 0) ::close(life[1]);
    throw EngineError(who, "cannot start " + args[0] + ": " + std::strerror(rc));
  }
  if (lifelineFd) *lifelineFd = life[1];
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  outFd = out[0];
  errFd = err[0];
  return pid;
}

void watchLifeline(int fd, int exitCode) {
  std::thread([fd, exitCode] {
    char c[64];
    for (;;) {
      const ssize_t n = ::read(fd, c, sizeof c);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      ::_exit(exitCode);
    }
  }).detach();
}

std::vector<std::string> drainLines(int fd, std::string& buf, bool& eof, size_t maxLine, bool* tooLong) {
  std::vector<std::string> lines;
  char tmp[65536];
  for (;;) {
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, static_cast<size_t>(n));
      if (maxLine > 0) {
        const size_t end = buf.rfind('\n');
        const size_t open = end == std::string::npos ? buf.size() : buf.size() - end - 1;
        if (open > maxLine) {
          if (tooLong) *tooLong = true;
          buf.resize(end == std::string::npos ? 0 : end + 1);  // the complete lines stay; the overlong one goes
          break;
        }
      }
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
