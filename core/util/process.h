#pragma once
// Child processes without a shell: argument vectors only, output read through non-blocking pipes.
#include <sys/types.h>

#include <string>
#include <vector>

namespace pm {

// An exec argument vector: each string's characters, then nullptr (valid while `args` lives).
std::vector<char*> execArgv(const std::vector<std::string>& args);
// This process's environment with `extra` ("NAME=value") added, then nullptr (valid while `extra` lives).
std::vector<char*> execEnvironment(const std::vector<std::string>& extra);

// Starts args[0] (a path) with args and this process's environment plus `extraEnv` ("NAME=value");
// its stdout and stderr go to two new non-blocking pipes whose read ends are returned. With
// `lifelineFd`, the child's stdin is the read end of a pipe whose write end is returned there
// (close-on-exec, so no other child holds it): the child sees end-of-file on stdin exactly when
// this process has closed it or died (see watchLifeline). Throws EngineError naming `who` when
// the child cannot be started.
pid_t spawnProcess(const std::vector<std::string>& args, int& outFd, int& errFd, const std::string& who = "launcher",
                   int* lifelineFd = nullptr, const std::vector<std::string>& extraEnv = {});

// The child's side of the lifeline: a detached thread blocks reading `fd` and ends the process
// with _exit(exitCode) at end-of-file or on a read error (the parent is gone).
void watchLifeline(int fd, int exitCode);

// Reads what is available on a non-blocking fd into `buf`; returns the complete lines (and the
// rest once the writer has closed: `eof` becomes true). With `maxLine` > 0, reading stops once more
// than `maxLine` bytes have come without a line end (`*tooLong` becomes true): a peer cannot make
// the reader buffer without bound.
std::vector<std::string> drainLines(int fd, std::string& buf, bool& eof, size_t maxLine = 0, bool* tooLong = nullptr);

// "signal 9 (SIGKILL)"
std::string signalName(int sig);

// Path of the running executable (/proc/self/exe), "pipemare" when unknown.
std::string selfExecutable();

}  // namespace pm
