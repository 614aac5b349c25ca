#include "core/runner/worker_processes.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "core/runner/worker_main.h"
#include "core/util/errors.h"
#include "core/util/process.h"

namespace pm {

namespace {

constexpr const char* kTempPrefixes[] = {"pipemare-exp-", "pipemare-store-"};

// The launcher that made a temporary file or folder named "<prefix><pid>-XXXXXX"; 0 for another name.
pid_t makerOf(const std::string& name) {
  for (const char* prefix : kTempPrefixes) {
    const std::string p(prefix);
    if (name.rfind(p, 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + p.size(), &end, 10);
    return pid > 0 && end && *end == '-' ? static_cast<pid_t>(pid) : 0;
  }
  return 0;
}

}  // namespace

int removeLeftWorkerFiles(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const pid_t maker = makerOf(entry.path().filename().string());
    if (maker <= 0) continue;
    struct stat st {};
    // Only this user's own files (never through a link), of a launcher that is gone.
    if (::lstat(entry.path().c_str(), &st) != 0 || st.st_uid != ::geteuid() || S_ISLNK(st.st_mode)) continue;
    if (::kill(maker, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    std::filesystem::remove_all(entry.path(), rm);
    removed += rm ? 0 : 1;
  }
  return removed;
}

WorkerFiles::WorkerFiles(const Experiment& e, bool fileStore) {
  // A launcher killed with -9 cannot remove its files: the next one does (the names carry the pid).
  removeLeftWorkerFiles("/tmp");
  const std::string pid = std::to_string(::getpid());
  std::string tmpl = "/tmp/pipemare-exp-" + pid + "-XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) throw EngineError("launcher", "cannot create a temporary experiment file");
  configPath_ = tmpl;
  if (fileStore) {
    std::string dtmpl = "/tmp/pipemare-store-" + pid + "-XXXXXX";
    if (!mkdtemp(dtmpl.data())) {
      ::close(fd);
      remove();
      throw EngineError("launcher", "cannot create a private directory for the ranks' store");
    }
    storeDir_ = dtmpl;
  }
  const std::string text = experimentToJson(e).dump();
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) {
    const std::string path = configPath_;
    remove();
    throw EngineError("launcher", "cannot write " + path);
  }
}

WorkerFiles::~WorkerFiles() { remove(); }

void WorkerFiles::remove() {
  std::error_code ec;  // a destructor's cleanup must not throw
  if (!configPath_.empty()) std::filesystem::remove(configPath_, ec);
  if (!storeDir_.empty()) std::filesystem::remove_all(storeDir_, ec);
  configPath_.clear();
  storeDir_.clear();
}

std::vector<std::string> WorkerCommand::args(int rank) const {
  std::vector<std::string> a{binary, "worker", "--config", configPath, "--rank", std::to_string(rank),
                             "--world-size", std::to_string(worldSize), "--master-addr", masterAddr};
  if (storeDir.empty()) {
    a.push_back("--master-port");
    a.push_back(std::to_string(masterPort));
  } else {
    a.push_back("--store-file");
    a.push_back(storeDir + "/store");
  }
  if (!saveStateDir.empty()) {
    a.push_back("--save-state");
    a.push_back(saveStateDir);
  }
  if (!checkpointDir.empty()) {
    a.push_back("--checkpoint-dir");
    a.push_back(checkpointDir);
  }
  if (resumeStep > 0) {
    a.push_back("--resume-step");
    a.push_back(std::to_string(resumeStep));
  }
  if (!modelSha256.empty()) {
    a.push_back("--model-sha256");
    a.push_back(modelSha256);
  }
  return a;
}

void WorkerProcess::noteStageFinished(const Json& event) {
  finishedStatus = parseRunStatus(event.value("status", std::string()));
  finishedMessage = event.value("message", std::string());
  const auto halt = event.find("halt_step");
  haltStep = halt != event.end() && halt->is_number_integer() ? halt->get<int64_t>() : 0;
  if (event.contains("summary")) summary = event["summary"];
}

WorkerProcesses::~WorkerProcesses() { closeLifelines(); }

void WorkerProcesses::start(const WorkerCommand& cmd, const std::vector<int>& ranks) {
  try {
    for (size_t i = 0; i < ranks.size(); ++i) {
      // LOCAL_RANK: the worker's place among this node's stages, as torchrun sets it; it picks the
      // worker's entry of execution.devices (DeviceContext).
      const std::vector<std::string> env{std::string(kLauncherEnv) + "=" + std::to_string(getpid()),
                                         std::string(kLifelineEnv) + "=0", "LOCAL_RANK=" + std::to_string(i)};
      const int r = ranks[i];
      WorkerProcess w;
      w.rank = r;
      w.pid = spawnProcess(cmd.args(r), w.outFd, w.errFd, "launcher", &w.lifelineFd, env);
      workers_.push_back(std::move(w));
    }
  } catch (...) {
    signalAll(SIGKILL);
    for (auto& w : workers_) waitpid(w.pid, nullptr, 0);
    closeLifelines();
    throw;
  }
}

std::string WorkerProcesses::pidList() const {
  std::string pids;
  for (const auto& w : workers_) pids += (pids.empty() ? "" : ", ") + std::to_string(w.pid);
  return pids;
}

bool WorkerProcesses::runsRank(int rank) const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const WorkerProcess& w) { return w.rank == rank; });
}

void WorkerProcesses::addPollFds(std::vector<pollfd>& fds) const {
  for (const auto& w : workers_) {
    if (w.outFd >= 0) fds.push_back({w.outFd, POLLIN, 0});
    if (w.errFd >= 0) fds.push_back({w.errFd, POLLIN, 0});
  }
}

void WorkerProcesses::readStdout(WorkerProcess& w, WorkerListener& listener) {
  if (w.outFd < 0) return;
  bool eof = false;
  for (const auto& line : drainLines(w.outFd, w.outBuf, eof)) {
    if (line.empty()) continue;
    listener.onStdout(w, line);
  }
  if (eof) {
    ::close(w.outFd);
    w.outFd = -1;
  }
}

void WorkerProcesses::readStderr(WorkerProcess& w, WorkerListener& listener) {
  if (w.errFd < 0) return;
  bool eof = false;
  for (const auto& line : drainLines(w.errFd, w.errBuf, eof)) {
    if (line.empty()) continue;
    w.errTail = line.substr(0, 500);
    listener.onStderr(w, line);
  }
  if (eof) {
    ::close(w.errFd);
    w.errFd = -1;
  }
}

void WorkerProcesses::service(WorkerListener& listener) {
  for (auto& w : workers_) {
    readStdout(w, listener);
    readStderr(w, listener);
    if (w.exited) continue;
    int st = 0;
    if (waitpid(w.pid, &st, WNOHANG) == w.pid) {
      w.exited = true;
      w.status = st;
      listener.onExit(w);
    }
  }
}

bool WorkerProcesses::anyEndedWithoutHalt() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const WorkerProcess& w) { return w.exited && w.haltStep == 0; });
}

bool WorkerProcesses::allExited() const {
  return std::all_of(workers_.begin(), workers_.end(), [](const WorkerProcess& w) { return w.exited; });
}

bool WorkerProcesses::allClosed() const {
  return std::all_of(workers_.begin(), workers_.end(), [](const WorkerProcess& w) { return w.outFd < 0 && w.errFd < 0; });
}

void WorkerProcesses::signalAll(int sig) {
  for (auto& w : workers_)
    if (!w.exited && w.pid > 0) ::kill(w.pid, sig);
}

void WorkerProcesses::closeLifelines() {
  for (auto& w : workers_)
    if (w.lifelineFd >= 0) {
      ::close(w.lifelineFd);
      w.lifelineFd = -1;
    }
}

}  // namespace pm
