#include "core/runner/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/comm/gloo_comm.h"
#include "core/util/errors.h"
#include "core/util/process.h"
#include "core/util/system_info.h"

namespace pm {
namespace {

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int outFd = -1, errFd = -1;
  std::string outBuf, errBuf, errTail;
  bool exited = false;
  int status = 0;
  std::string finishedStatus;  // from its stage_finished event
  std::string finishedMessage;
  Json summary;
};

}  // namespace

RunOutcome launchWorkers(const LaunchRequest& req, EventSink& sink, const std::atomic<bool>* stop) {
  const Experiment& e = req.experiment;
  const int P = e.pipeline.stages;
  std::vector<int> ranks = req.localRanks;
  if (ranks.empty())
    for (int r = 0; r < P; ++r) ranks.push_back(r);
  const int port = req.masterPort > 0 ? req.masterPort : findFreePort(req.masterAddr);

  // The experiment travels as a private temporary file (never on a command line).
  char tmpl[] = "/tmp/pipemare-exp-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw EngineError("launcher", "cannot create a temporary experiment file");
  const std::string cfgPath = tmpl;
  {
    std::string text = experimentToJson(e).dump();
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      ::close(fd);
      throw EngineError("launcher", "cannot write " + cfgPath);
    }
    ::close(fd);
  }

  std::vector<Worker> workers;
  auto terminateAll = [&](int sig) {
    for (auto& w : workers)
      if (!w.exited && w.pid > 0) ::kill(w.pid, sig);
  };
  try {
    for (int r : ranks) {
      Worker w;
      w.rank = r;
      std::vector<std::string> args{req.workerBinary, "worker", "--config", cfgPath, "--rank", std::to_string(r),
                                    "--world-size", std::to_string(P), "--master-addr", req.masterAddr,
                                    "--master-port", std::to_string(port)};
      if (!req.saveStateDir.empty()) {
        args.push_back("--save-state");
        args.push_back(req.saveStateDir);
      }
      if (!req.checkpointDir.empty()) {
        args.push_back("--checkpoint-dir");
        args.push_back(req.checkpointDir);
      }
      if (req.resumeStep > 0) {
        args.push_back("--resume-step");
        args.push_back(std::to_string(req.resumeStep));
      }
      w.pid = spawnProcess(args, w.outFd, w.errFd);
      workers.push_back(std::move(w));
    }
  } catch (...) {
    terminateAll(SIGKILL);
    for (auto& w : workers) waitpid(w.pid, nullptr, 0);
    std::filesystem::remove(cfgPath);
    throw;
  }
  {
    Json log = makeEvent(ev::kLog);
    log["level"] = "info";
    std::string pids;
    for (const auto& w : workers) pids += (pids.empty() ? "" : ", ") + std::to_string(w.pid);
    log["message"] = "started " + std::to_string(workers.size()) + " worker(s) (pids " + pids + "), store at " +
                     req.masterAddr + ":" + std::to_string(port);
    sink.emit(log);
  }

  RunOutcome out{"finished", "", Json::object()};
  std::string failure;
  double killDeadline = -1;  // when set: SIGKILL whatever is left at this time
  bool stopping = false;
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& w : workers) {
      if (w.outFd >= 0) fds.push_back({w.outFd, POLLIN, 0});
      if (w.errFd >= 0) fds.push_back({w.errFd, POLLIN, 0});
    }
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    else ::usleep(50 * 1000);

    for (auto& w : workers) {
      bool eof = false;
      if (w.outFd >= 0) {
        for (const auto& line : drainLines(w.outFd, w.outBuf, eof)) {
          if (line.empty()) continue;
          Json ev;
          try {
            ev = parseEventLine(line);
          } catch (const std::exception&) {
            Json log = makeEvent(ev::kLog);
            log["level"] = "info";
            log["message"] = "rank " + std::to_string(w.rank) + ": " + line.substr(0, 500);
            sink.emit(log);
            continue;
          }
          if (ev.value("type", "") == "stage_finished") {
            w.finishedStatus = ev.value("status", std::string());
            w.finishedMessage = ev.value("message", std::string());
            if (ev.contains("summary")) w.summary = ev["summary"];
          }
          sink.emit(ev);
        }
        if (eof) {
          ::close(w.outFd);
          w.outFd = -1;
        }
      }
      eof = false;
      if (w.errFd >= 0) {
        for (const auto& line : drainLines(w.errFd, w.errBuf, eof)) {
          if (line.empty()) continue;
          w.errTail = line.substr(0, 500);
          Json log = makeEvent(ev::kLog);
          log["level"] = "info";
          log["message"] = "rank " + std::to_string(w.rank) + " stderr: " + line.substr(0, 500);
          sink.emit(log);
        }
        if (eof) {
          ::close(w.errFd);
          w.errFd = -1;
        }
      }
      if (!w.exited) {
        int st = 0;
        pid_t r = waitpid(w.pid, &st, WNOHANG);
        if (r == w.pid) {
          w.exited = true;
          w.status = st;
          const bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
          if (w.finishedStatus == "diverged" && out.status == "finished") {
            out.status = "diverged";
            out.message = w.finishedMessage;
          }
          if (!clean && failure.empty() && !stopping && out.status != "diverged") {
            std::string how = WIFSIGNALED(st) ? "was killed by " + signalName(WTERMSIG(st))
                                              : "exited with code " + std::to_string(WEXITSTATUS(st));
            failure = "stage " + std::to_string(w.rank) + " (rank " + std::to_string(w.rank) + ", pid " +
                      std::to_string(w.pid) + ") " + how;
            if (!w.finishedMessage.empty()) failure += ": " + w.finishedMessage;
            else if (!w.errTail.empty()) failure += ": " + w.errTail;
          }
        }
      }
    }

    bool allExited = true;
    for (const auto& w : workers) allExited = allExited && w.exited;
    const bool allClosed = std::all_of(workers.begin(), workers.end(), [](const Worker& w) { return w.outFd < 0 && w.errFd < 0; });
    if (allExited && allClosed) break;
    if (allExited) {
      // Drain what is left without blocking.
      continue;
    }
    const bool endOthers = !failure.empty() || out.status == "diverged" || (stop && stop->load());
    if (endOthers && killDeadline < 0) {
      if (stop && stop->load() && failure.empty() && out.status == "finished") {
        stopping = true;
        out.status = "stopped";
        out.message = "stopped by request";
      }
      terminateAll(SIGTERM);
      killDeadline = monotonicSeconds() + req.killGraceS;
    }
    if (killDeadline > 0 && monotonicSeconds() > killDeadline) {
      terminateAll(SIGKILL);
      killDeadline = monotonicSeconds() + 3600;
    }
  }
  std::filesystem::remove(cfgPath);

  if (!failure.empty() && out.status == "finished") {
    out.status = "failed";
    out.message = failure;
  }
  // Summary: the last stage's figures plus every stage's.
  Json stages = Json::array();
  for (const auto& w : workers) {
    if (w.summary.is_object()) stages.push_back(w.summary);
    if (w.rank == P - 1 && w.summary.is_object()) out.summary = w.summary;
  }
  if (!out.summary.is_object()) out.summary = Json::object();
  out.summary["stages"] = stages;
  return out;
}

}  // namespace pm
