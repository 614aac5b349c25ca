#include "core/runner/local_run.h"

#include <unistd.h>

#include <climits>

#include "core/engine/pipeline_engine.h"
#include "core/runner/launcher.h"
#include "core/runner/store_recorder.h"
#include "core/util/errors.h"

namespace pm {

static std::string selfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "pipemare";
  buf[n] = 0;
  return buf;
}

LocalRunResult runLocally(RunStore& store, const LocalRunRequest& req, const std::atomic<bool>* stop) {
  Experiment e = req.experiment;
  LocalRunResult result;
  result.runId = store.createRun(req.runName.empty() ? e.name : req.runName, experimentToJson(e).dump(), e.tags, e.notes);
  store.markRunning(result.runId, static_cast<int64_t>(getpid()));

  auto recorder = std::make_shared<StoreRecorder>(store, result.runId);
  FanoutSink sink;
  sink.add(recorder);
  for (const auto& s : req.extraSinks) sink.add(s);
  {
    Json created = makeEvent(ev::kLog);
    created["level"] = "info";
    created["message"] = "run " + std::to_string(result.runId) + " created in " + store.path();
    created["run"] = result.runId;
    sink.emit(created);
  }

  try {
    EngineOptions opts;
    opts.saveStateDir = req.saveStateDir;
    if (e.execution.mode == "real") {
      // The partition is decided once, here, and handed to every worker as explicit boundaries.
      Partition part = resolvePartition(e);
      Json log = makeEvent(ev::kLog);
      log["level"] = "info";
      log["message"] = "partition (" + e.pipeline.partition.method + "): " + part.describe();
      sink.emit(log);
      e.pipeline.partition.method = "explicit";
      e.pipeline.partition.boundaries.assign(part.begin.begin() + 1, part.begin.end());
      LaunchRequest lr;
      lr.experiment = e;
      lr.workerBinary = req.workerBinary.empty() ? selfExe() : req.workerBinary;
      lr.saveStateDir = req.saveStateDir;
      result.outcome = launchWorkers(lr, sink, stop);
    } else {
      result.outcome = runSingleProcess(e, sink, stop, opts);
    }
  } catch (const Error& err) {
    result.outcome = RunOutcome{"failed", err.what(), Json::object()};
    Json ev = makeEvent(ev::kError);
    ev["message"] = err.problem();
    ev["place"] = err.place();
    sink.emit(ev);
  } catch (const std::exception& ex) {
    result.outcome = RunOutcome{"failed", ex.what(), Json::object()};
    Json ev = makeEvent(ev::kError);
    ev["message"] = ex.what();
    sink.emit(ev);
  }
  Json fin = makeEvent(ev::kRunFinished);
  fin["run"] = result.runId;
  fin["status"] = result.outcome.status;
  fin["message"] = result.outcome.message;
  fin["summary"] = result.outcome.summary;
  sink.emit(fin);
  sink.flush();
  store.setStatus(result.runId, result.outcome.status, result.outcome.message);
  return result;
}

}  // namespace pm
