#include "core/runner/worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>

#include "core/comm/gloo_comm.h"
#include "core/config/experiment.h"
#include "core/engine/pipeline_engine.h"
#include "core/events/event_sink.h"
#include "core/util/errors.h"

namespace pm {
namespace {

std::atomic<bool> gWorkerStop{false};
std::atomic<bool> gWorkerHalt{false};
extern "C" void onWorkerHalt(int) { gWorkerHalt.store(true); }

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::atoi(v) : fallback;
}

}  // namespace

int workerMain(const WorkerOptions& o) {
  // End with the launcher: a parent that dies takes its workers with it.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 1;
  // SIGTERM: default action (terminate) - a blocked receive cannot observe a flag anyway.
  // SIGUSR1 / SIGINT: stop at the next common checkpoint (see StageWorker::runToEnd), once the
  // group is formed (before that they end the worker: there is nothing to keep yet).

  JsonLinesSink sink(stdout);
  int rank = o.rank >= 0 ? o.rank : envInt("RANK", -1);
  auto finish = [&](const std::string& status, const std::string& message, const Json& summary) {
    Json f = makeEvent("stage_finished");
    f["stage"] = rank;
    f["rank"] = rank;
    f["status"] = status;
    f["message"] = message;
    f["summary"] = summary;
    sink.emit(f);
  };
  try {
    const int world = o.worldSize > 0 ? o.worldSize : envInt("WORLD_SIZE", -1);
    if (rank < 0 || world < 1 || rank >= world)
      throw ConfigError("worker", "rank and world size are required (--rank/--world-size or RANK/WORLD_SIZE), found rank " +
                                      std::to_string(rank) + " of " + std::to_string(world));
    Experiment e = loadExperimentFile(o.config);
    if (e.pipeline.stages != world)
      throw ConfigError(o.config + ": pipeline.stages", "is " + std::to_string(e.pipeline.stages) + " but the world size is " +
                                                            std::to_string(world));
    DistributedOptions d;
    d.rank = rank;
    d.worldSize = world;
    d.masterAddr = !o.masterAddr.empty() ? o.masterAddr : (std::getenv("MASTER_ADDR") ? std::getenv("MASTER_ADDR") : "127.0.0.1");
    d.masterPort = o.masterPort > 0 ? o.masterPort : envInt("MASTER_PORT", 29500);
    d.backend = e.execution.backend == "local" ? "gloo" : e.execution.backend;
    d.timeoutS = e.execution.timeout_s;
    d.storeFile = o.storeFile;
    auto comm = makeDistributedComm(d);
    std::signal(SIGUSR1, onWorkerHalt);
    std::signal(SIGINT, onWorkerHalt);
    EngineOptions opts;
    opts.saveStateDir = o.saveStateDir;
    opts.checkpointDir = o.checkpointDir;
    opts.resumeStep = o.resumeStep;
    opts.halt = &gWorkerHalt;
    RunOutcome out = runStageProcess(e, *comm, sink, &gWorkerStop, opts);
    finish(out.status, out.message, out.summary);
    std::fflush(stdout);
    // Skip static destructors of the process group (they may wait on peers that are gone).
    std::_Exit(0);
  } catch (const std::exception& ex) {
    Json ev = makeErrorEvent(ex);
    ev["stage"] = rank;
    ev["rank"] = rank;
    sink.emit(ev);
    finish("failed", ex.what(), Json::object());
    std::fflush(stdout);
    const auto* err = dynamic_cast<const Error*>(&ex);
    std::_Exit(err ? err->exitCode() : 1);
  }
}

}  // namespace pm
