#pragma once
// Child processes without a shell: argument vectors only, output read through non-blocking pipes.
#include <sys/types.h>

#include <string>
#include <vector>

namespace pm {

// Starts args[0] (a path) with args; its stdout and stderr go to two new non-blocking pipes whose
// read ends are returned. Throws EngineError naming `who` when it cannot be started.
pid_t spawnProcess(const std::vector<std::string>& args, int& outFd, int& errFd, const std::string& who = "launcher");

// Reads what is available on a non-blocking fd into `buf`; returns the complete lines (and the
// rest once the writer has closed: `eof` becomes true).
std::vector<std::string> drainLines(int fd, std::string& buf, bool& eof);

// "signal 9 (SIGKILL)"
std::string signalName(int sig);

// Path of the running executable (/proc/self/exe), "pipemare" when unknown.
std::string selfExecutable();

}  // namespace pm
