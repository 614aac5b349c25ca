#pragma once
// Helpers for the end-to-end tests that drive the real executables.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace pmtest {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out;  // stdout + stderr
};

// Runs a command line built from fixed, test-controlled parts (paths from the build and a temp dir).
inline Result runCmd(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Starts a process in the background (argument vector, no shell); its output goes to `logFile`.
// With `ownGroup` it leads a process group of its own, as a terminal's foreground job: kill(-pid,
// SIGINT) then reaches it and its children, as Ctrl-C does.
// `extraEnv` ("NAME=value") is added to this process's environment for the child.
inline pid_t spawnBackground(const std::vector<std::string>& args, const std::string& logFile, bool ownGroup = false,
                             const std::vector<std::string>& extraEnv = {}) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  for (const auto& e : extraEnv) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (ownGroup) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits for a child; returns its exit code (128 + signal when killed), -1 on timeout (then kills it).
inline int waitExit(pid_t pid, double timeoutS) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  for (;;) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Polls `done` every 100 ms for at most `timeoutS` seconds.
inline bool waitUntil(const std::function<bool()>& done, double timeoutS) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

inline std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Whether a process exists and is not a zombie (an orphan's zombie may wait for a busy init).
inline bool processAlive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

// Two consecutive free TCP ports on 127.0.0.1 (a multi-node run uses port and port + 1).
inline int freePortPair() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    ::close(fd);
    const int port = ntohs(sa.sin_port);
    int fd2 = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sb = sa;
    sb.sin_port = htons(static_cast<uint16_t>(port + 1));
    const bool ok = port < 65535 && ::bind(fd2, reinterpret_cast<sockaddr*>(&sb), sizeof sb) == 0;
    ::close(fd2);
    if (ok) return port;
  }
  return 29650;
}

// A fresh directory per test, removed afterwards.
class AppTest : public ::testing::Test {
 public:
  static std::string bin() { return std::string(PIPEMARE_BIN_DIR) + "/pipemare"; }
  static std::string exp(const std::string& name) { return std::string(PIPEMARE_SOURCE_DIR) + "/experiments/" + name; }

 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pm_app_" + std::to_string(getpid()) + "_" +
            std::to_string(std::hash<std::string>{}(::testing::UnitTest::GetInstance()->current_test_info()->name())));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "runs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string db_;
};

}  // namespace pmtest
