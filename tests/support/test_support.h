#pragma once
// Helpers shared by the test suites (library pipemare_test_support: GoogleTest and POSIX, no Qt
// and no project library, so core-only tests stay free of Qt): a temporary folder per test, whole
// files read and written, the paths of the source tree and of the built programs, and child
// processes run, waited for and watched.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace pm::test {

// ---- Files and folders --------------------------------------------------------------------------

// A fresh, empty folder for the running test under the system's temporary directory, removed
// with everything in it when this object goes. Its name holds this process's id, a count of the
// folders this process made and the running test's suite and name, so no two TempDirs share one;
// a folder of that name left by an earlier process is removed first. `dir` is the canonical path
// (symbolic links resolved), as /proc names the files opened in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path() const { return dir.string(); }
  // The path of `name` inside the folder (nothing is made).
  std::string file(const std::string& name) const { return (dir / name).string(); }

  std::filesystem::path dir;
};

// The whole content of the file at `path`, byte for byte; "" when it cannot be read.
std::string readFile(const std::string& path);

// The last `lines` lines of the file at `path` (a failure's message keeps what a log ended with:
// CI shows only so much of a test's output).
std::string tailOfFile(const std::string& path, size_t lines = 12);

// Makes `path` (or truncates it) and writes `bytes` as its whole content. A file that cannot be
// written is a test failure naming the path; returns whether it was written.
bool writeFile(const std::string& path, const std::string& bytes);

// ---- The source tree and the build --------------------------------------------------------------

// `relative` inside the source tree (PIPEMARE_SOURCE_DIR), e.g. "docs/experiment-format.md".
std::string sourcePath(const std::string& relative);

// The experiment file `name` of the source tree's experiments/ folder.
std::string experimentPath(const std::string& name);

// The program `name` in the build's folder of executables (PIPEMARE_BIN_DIR), e.g. "pipemare".
std::string binPath(const std::string& name);

// ---- Child processes ----------------------------------------------------------------------------

struct Result {
  int code;
  std::string out;  // stdout + stderr
};

// Runs a command line built from fixed, test-controlled parts (paths from the build and a temp dir)
// through the shell; its exit code (-1 when it did not exit normally) and output.
Result runCmd(const std::string& cmd);

// Starts a process in the background (argument vector, no shell); its output goes to `logFile`.
// With `ownGroup` it leads a process group of its own, as a terminal's foreground job: kill(-pid,
// SIGINT) then reaches it and its children, as Ctrl-C does.
// `extraEnv` ("NAME=value") is added to this process's environment for the child.
pid_t spawnBackground(const std::vector<std::string>& args, const std::string& logFile, bool ownGroup = false,
                      const std::vector<std::string>& extraEnv = {});

// Waits for a child; returns its exit code (128 + signal when killed), -1 on timeout (then kills it).
int waitExit(pid_t pid, double timeoutS);

// Polls `done` every 100 ms for at most `timeoutS` seconds.
bool waitUntil(const std::function<bool()>& done, double timeoutS);

// Whether a process exists and is not a zombie (an orphan's zombie may wait for a busy init).
bool processAlive(pid_t pid);

// The id of a child that has exited and been reaped: no process has it (a launcher that is gone).
// -1 when the child could not be made or reaped.
pid_t deadPid();

// Two consecutive free TCP ports on 127.0.0.1 (a multi-node run uses port and port + 1).
int freePortPair();

}  // namespace pm::test
