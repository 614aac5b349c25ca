#include "core/runner/worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "core/comm/device_context.h"
#include "core/comm/gloo_comm.h"
#include "core/config/experiment.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/checkpoint_layout.h"
#include "core/engine/stage_plan.h"
#include "core/events/event_sink.h"
#include "core/events/run_status.h"
#include "core/util/errors.h"
#include "core/util/file_digest.h"
#include "core/util/net.h"
#include "core/util/process.h"
#include "core/util/system_info.h"

namespace pm {
namespace {

std::atomic<bool> gWorkerStop{false};
std::atomic<bool> gWorkerHalt{false};
extern "C" void onWorkerHalt(int) { gWorkerHalt.store(true); }

// An integer environment variable: `fallback` when unset or empty; anything but a whole decimal
// number in [lo, hi] is a usage error naming the variable ("RANK=abc" is refused, not read as 0).
int envInt(const char* name, int fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi)
    throw ConfigError(name, "expected a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) + ", found \"" + v + "\"");
  return static_cast<int>(x);
}

// The launcher's pid from the environment, or -1 (started by hand, or not a number).
pid_t launcherPid() {
  const char* v = std::getenv(kLauncherEnv);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (end == v || *end != '\0' || x <= 1) ? -1 : static_cast<pid_t>(x);
}

}  // namespace

void bindToLauncher() {
  const pid_t launcher = launcherPid();
  if (launcher < 0) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher died before the signal was set: this process was re-parented (to init or a
  // subreaper), and no parent-death signal will come.
  if (getppid() != launcher) std::_Exit(kLauncherGoneExit);
  if (const char* fd = std::getenv(kLifelineEnv); fd && *fd) watchLifeline(std::atoi(fd), kLauncherGoneExit);
}

int workerMain(const WorkerOptions& o) {
  // A worker of `pipemare run` ends with it (bindToLauncher, at the top of main); one started by
  // hand (srun, mpirun) ends with whatever started it.
  if (launcherPid() < 0) {
    const pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) return 1;
  } else {
    bindToLauncher();
  }
  // SIGTERM: default action (terminate) - a blocked receive cannot observe a flag anyway.
  // SIGUSR1 / SIGINT: stop every stage after one common minibatch (see StageWorker::runToEnd),
  // with a checkpoint there when the worker has a checkpoint directory. Set from the start: a
  // terminal's Ctrl-C reaches the workers with their launcher, and one arriving while the group
  // forms must not kill a worker (the launcher would then record a failure, not a stop).
  std::signal(SIGUSR1, onWorkerHalt);
  std::signal(SIGINT, onWorkerHalt);

  // Events go to the launcher through stdout: a broken pipe means it is gone.
  JsonLinesSink sink(stdout, launcherPid() > 0 ? [] { std::_Exit(kLauncherGoneExit); } : std::function<void()>());
  int rank = o.rank;
  auto finish = [&](RunStatus status, const std::string& message, const Json& summary, int64_t haltStep) {
    Json f = makeEvent(ev::kStageFinished);
    f["stage"] = rank;
    f["rank"] = rank;
    f["status"] = toString(status);
    f["message"] = message;
    f["summary"] = summary;
    if (haltStep > 0) f["halt_step"] = haltStep;
    sink.emit(f);
  };
  try {
    if (rank < 0) rank = envInt("RANK", -1, 0, 65535);
    const int world = o.worldSize > 0 ? o.worldSize : envInt("WORLD_SIZE", -1, 1, 65536);
    if (rank < 0 || world < 1 || rank >= world)
      throw ConfigError("worker", "rank and world size are required (--rank/--world-size or RANK/WORLD_SIZE), found rank " +
                                      std::to_string(rank) + " of " + std::to_string(world));
    Experiment e = loadExperimentFile(o.config);
    if (e.pipeline.stages != world)
      throw ConfigError(o.config + ": pipeline.stages", "is " + std::to_string(e.pipeline.stages) + " but the world size is " +
                                                            std::to_string(world));
    if (e.model.fromFile() && !o.modelSha256.empty()) {  // before anything connects: a usage error naming the host
      const FileDigest file = digestFile(e.model.path);
      if (file.sha256 != o.modelSha256)
        throw ConfigError(e.model.path, "the model file on " + hostName() + " (rank " + std::to_string(rank) + ") has SHA-256 " +
                                            file.sha256.substr(0, 16) + "..., the run's has " + o.modelSha256.substr(0, 16) +
                                            "... (the file changed since the run was recorded, or this node holds another copy)");
    }
    DistributedOptions d;
    d.rank = rank;
    d.worldSize = world;
    d.masterAddr = !o.masterAddr.empty() ? o.masterAddr : (std::getenv("MASTER_ADDR") ? std::getenv("MASTER_ADDR") : "127.0.0.1");
    d.masterPort = o.masterPort > 0 ? o.masterPort : envInt("MASTER_PORT", 29500, 1, 65535);  // 29500: PyTorch's default
    d.backend = choiceName(e.execution.backend == CommBackend::Local ? CommBackend::Gloo : e.execution.backend);
    d.timeoutS = e.execution.timeout_s;
    d.storeFile = o.storeFile;
    const char* agentStore = std::getenv("TORCHELASTIC_USE_AGENT_STORE");  // torchrun's workers
    d.joinAgentStore = agentStore && std::string(agentStore) == "True";
    // PIPEMARE_PAYLOAD_GROUPS=1: NCCL's message layout (headers apart, keyed payloads on a group
    // per channel) over Gloo, so that a CPU machine runs the protocol a GPU run uses.
    const char* payloadGroups = std::getenv("PIPEMARE_PAYLOAD_GROUPS");
    d.payloadChannelsOnGloo = payloadGroups && std::string(payloadGroups) == "1";
    d.payloadChannels = payloadChannels(e);
    if (d.storeFile.empty()) checkHostResolves(d.masterAddr, o.masterAddr.empty() ? "MASTER_ADDR" : "--master-addr");
    if (o.resumeStep > 0) {  // a missing checkpoint is a usage error, before anything connects
      const ScheduleParams place = stagePlacement(e);
      for (int c = 0; c < place.chunks; ++c) {
        const int stage = stageOfChunk(place, rank, c);
        const std::string file = CheckpointLayout(o.checkpointDir).stageFile(o.resumeStep, stage);
        if (o.checkpointDir.empty() || !std::filesystem::exists(file))
          throw ConfigError("--resume-step " + std::to_string(o.resumeStep),
                            "no checkpoint of stage " + std::to_string(stage) + " at " + (o.checkpointDir.empty() ? "(no --checkpoint-dir)" : file));
      }
    }
    // The stage's device, made current before the process group forms (NCCL's communicators and
    // streams follow the current device).
    std::string localSource;
    const int localRank = localRankFromEnv(rank, &localSource);
    const DeviceContext device = resolveDeviceContext(e.execution.devices, localRank, localSource);
    device.makeCurrent();
    d.cudaDevice = device.cuda() ? device.device.index() : -1;
    auto comm = makeDistributedComm(d);
    EngineOptions opts;
    opts.device = device.device.str();
    opts.saveStateDir = o.saveStateDir;
    opts.checkpointDir = o.checkpointDir;
    opts.resumeStep = o.resumeStep;
    opts.halt = &gWorkerHalt;
    RunOutcome out = runStageProcess(e, *comm, sink, &gWorkerStop, opts);
    try {
      comm->shutdown();  // NCCL's communicators end here, not in static destructors that _Exit skips
    } catch (const std::exception&) {
      // the outcome is already decided; a peer that left first is not a new failure
    }
    // Started by hand (srun, mpirun): the checkpoint is resumed by starting the workers again.
    if (!std::getenv(kLauncherEnv))
      if (const auto at = out.message.find(kResumeHint); at != std::string::npos)
        out.message.replace(at, std::string(kResumeHint).size(),
                            "(checkpoint written in " + o.checkpointDir + ": start the workers again with --resume-step " +
                                std::to_string(out.haltStep) + ")");
    finish(out.status, out.message, out.summary, out.haltStep);
    std::fflush(stdout);
    // Skip static destructors of the process group (they may wait on peers that are gone). A
    // stopped stage exits 130, as `pipemare run` does (a batch system sees it did not finish).
    std::_Exit(out.status == RunStatus::Stopped ? 130 : 0);
  } catch (const std::exception& ex) {
    Json ev = makeErrorEvent(ex);
    ev["stage"] = rank;
    ev["rank"] = rank;
    sink.emit(ev);
    finish(RunStatus::Failed, errorText(ex), Json::object(), 0);
    std::fflush(stdout);
    const auto* err = dynamic_cast<const Error*>(&ex);
    std::_Exit(err ? err->exitCode() : 1);
  }
}

}  // namespace pm
