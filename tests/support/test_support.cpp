#include "tests/support/test_support.h"

#include "core/util/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <system_error>
#include <thread>

extern char** environ;

namespace pm::test {

namespace fs = std::filesystem;

// ---- Files and folders --------------------------------------------------------------------------

TempDir::TempDir() {
  static std::atomic<int> made{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("outside-a-test");
  for (char& c : test)  // a parameterised test's name holds '/'
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  dir = fs::temp_directory_path() /
        ("pipemare-test-" + std::to_string(::getpid()) + "-" + std::to_string(made++) + "-" + test);
  fs::remove_all(dir);
  fs::create_directories(dir);
  dir = fs::canonical(dir);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string tailOfFile(const std::string& path, size_t lines) {
  const std::string text = readFile(path);
  size_t at = text.size();
  if (at > 0 && text[at - 1] == '\n') --at;
  for (size_t n = 0; n < lines && at > 0; ++n) {
    const size_t nl = text.rfind('\n', at - 1);
    if (nl == std::string::npos) return text;
    at = nl;
  }
  return "[...]\n" + text.substr(at + 1);
}

bool writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (f) return true;
  ADD_FAILURE() << "cannot write " << path;
  return false;
}

// ---- The source tree and the build --------------------------------------------------------------

std::string sourcePath(const std::string& relative) { return std::string(PIPEMARE_SOURCE_DIR) + "/" + relative; }

std::string experimentPath(const std::string& name) { return sourcePath("experiments/" + name); }

std::string binPath(const std::string& name) { return std::string(PIPEMARE_BIN_DIR) + "/" + name; }

// ---- Child processes ----------------------------------------------------------------------------

Result runCmd(const std::string& cmd) {
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

pid_t spawnBackground(const std::vector<std::string>& args, const std::string& logFile, bool ownGroup,
                      const std::vector<std::string>& extraEnv) {
  std::vector<char*> argv = execArgv(args);
  std::vector<char*> envp = execEnvironment(extraEnv);
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

int waitExit(pid_t pid, double timeoutS) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  for (;;) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the poll interval of this deadline wait
  }
}

bool waitUntil(const std::function<bool()>& done, double timeoutS) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the poll interval of this deadline wait
  }
  return done();
}

bool processAlive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

pid_t deadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  if (child > 0 && waitpid(child, nullptr, 0) != child) return -1;
  return child;
}

int freePortPair() {
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

}  // namespace pm::test
