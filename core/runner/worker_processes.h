#pragma once
// The stage processes one launcher starts (`pipemare worker`, one per rank, argument vectors, never
// a shell): what they are given (the experiment file, the ranks' store), their start, their output
// pipes, their signals and their exit status. What their output means is the event relay's
// (event_relay.h).
#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/events/event.h"
#include "core/events/run_status.h"

namespace pm {

// Removes from `dir` the worker files of this user whose launcher process is gone; returns how
// many. Other users' files, links and names without a pid are left alone.
int removeLeftWorkerFiles(const std::string& dir);

// The files the workers of one run share: the experiment as a private temporary file (never on a
// command line) and, on a single node, a private (0700) directory for the ranks' c10d FileStore,
// so that no socket listens beyond Gloo's own on loopback (multi-node runs use the TCPStore on
// node 0). Removed by remove() or at destruction. Their names carry the launcher's pid
// (/tmp/pipemare-exp-<pid>-XXXXXX, /tmp/pipemare-store-<pid>-XXXXXX), so that the next launcher
// removes what a launcher killed with -9 left (removeLeftWorkerFiles).
class WorkerFiles {
 public:
  // Throws EngineError at "launcher" when a file cannot be made or written.
  WorkerFiles(const Experiment& e, bool fileStore);
  ~WorkerFiles();
  WorkerFiles(const WorkerFiles&) = delete;
  WorkerFiles& operator=(const WorkerFiles&) = delete;

  const std::string& configPath() const { return configPath_; }
  // The FileStore's directory; "" for a multi-node run.
  const std::string& storeDir() const { return storeDir_; }
  void remove();

 private:
  std::string configPath_, storeDir_;
};

// The command line of every worker: `<binary> worker --config ... --rank R ...`.
struct WorkerCommand {
  std::string binary;      // the `pipemare` executable
  std::string configPath;  // WorkerFiles::configPath
  int worldSize = 0;
  std::string masterAddr;
  int masterPort = 0;      // the TCPStore's, when storeDir is ""
  std::string storeDir;    // WorkerFiles::storeDir
  std::string saveStateDir, checkpointDir;
  int64_t resumeStep = 0;
  std::string modelSha256;  // a TorchScript model: the SHA-256 each worker checks its file against

  std::vector<std::string> args(int rank) const;
};

// One started worker.
struct WorkerProcess {
  int rank = 0;
  pid_t pid = -1;
  int outFd = -1, errFd = -1;
  int lifelineFd = -1;  // the worker's stdin: closed here (or by this process's death) ends it
  std::string outBuf, errBuf;
  std::string errTail;  // its last stderr line (500 characters at most)
  bool exited = false;
  int status = 0;       // waitpid's status once exited
  // From its stage_finished event (noteStageFinished).
  std::optional<RunStatus> finishedStatus;
  std::string finishedMessage;
  int64_t haltStep = 0;  // the step a stop halted it after (0: none)
  Json summary;

  void noteStageFinished(const Json& event);
};

// What the workers' output lines and their ends are handed to, worker by worker.
class WorkerListener {
 public:
  virtual ~WorkerListener() = default;
  virtual void onStdout(WorkerProcess& w, const std::string& line) = 0;  // a non-empty line
  virtual void onStderr(WorkerProcess& w, const std::string& line) = 0;  // a non-empty line, already w.errTail
  virtual void onExit(WorkerProcess& w) = 0;                            // w.exited and w.status are set
};

class WorkerProcesses {
 public:
  WorkerProcesses() = default;
  // Closes the lifelines: workers still running end themselves.
  ~WorkerProcesses();
  WorkerProcesses(const WorkerProcesses&) = delete;
  WorkerProcesses& operator=(const WorkerProcesses&) = delete;

  // Starts one worker per rank. The workers leave resume hints to this launcher (workers started
  // by hand say how to restart), and end themselves when it dies: they compare their parent with
  // this pid and watch their stdin, a pipe only this launcher writes to (see workerMain). When one
  // cannot be started, those already started are killed and reaped, and the error is rethrown.
  void start(const WorkerCommand& cmd, const std::vector<int>& ranks);

  const std::vector<WorkerProcess>& workers() const { return workers_; }
  // "pid, pid, ..."
  std::string pidList() const;
  bool runsRank(int rank) const;

  // The open output pipes, to wait on.
  void addPollFds(std::vector<pollfd>& fds) const;
  // Reads every worker's available output and reaps those that ended, without blocking.
  void service(WorkerListener& listener);

  bool allExited() const;
  // Whether a worker has exited without halting at a stop's common minibatch.
  bool anyEndedWithoutHalt() const;
  // Every output pipe has reached end of file.
  bool allClosed() const;

  // Sends `sig` to every worker not yet reaped.
  void signalAll(int sig);
  void closeLifelines();

 private:
  void readStdout(WorkerProcess& w, WorkerListener& listener);
  void readStderr(WorkerProcess& w, WorkerListener& listener);
  std::vector<WorkerProcess> workers_;
};

}  // namespace pm
