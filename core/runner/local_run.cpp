#include "core/runner/local_run.h"

#include <unistd.h>

#include "core/runner/store_recorder.h"
#include "core/util/errors.h"

namespace pm {

LocalRunResult runLocally(RunStore& store, const LocalRunRequest& req, const std::atomic<bool>* stop) {
  const Experiment& e = req.experiment;
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
    Trainer trainer(e, sink, stop);
    result.outcome = trainer.run();
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
