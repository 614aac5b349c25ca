#include "core/runner/event_relay.h"

#include <sys/wait.h>

#include <algorithm>

#include "core/events/run_status.h"
#include "core/util/process.h"

namespace pm {

void EventRelay::forward(const Json& event) {
  sink_.emit(event);
  if (up_) up_->send(event);
}

void EventRelay::log(const std::string& message) {
  Json event = makeEvent(ev::kLog);
  event["level"] = "info";
  event["message"] = message;
  forward(event);
}

void EventRelay::onStdout(WorkerProcess& w, const std::string& line) {
  Json event;
  try {
    event = parseEventLine(line);
  } catch (const std::exception&) {
    log("rank " + std::to_string(w.rank) + ": " + line.substr(0, 500));
    return;
  }
  if (event.value("type", "") == ev::kStageFinished) w.noteStageFinished(event);
  forward(event);
}

void EventRelay::onStderr(WorkerProcess& w, const std::string& line) {
  log("rank " + std::to_string(w.rank) + " stderr: " + line.substr(0, 500));
}

void EventRelay::onExit(WorkerProcess& w) {
  RunVerdict& v = verdict_;
  const int st = w.status;
  // A stopped stage exits 130 (a worker's own stop; this launcher may not have asked).
  const bool clean = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || (WEXITSTATUS(st) == 130 && w.finishedStatus == RunStatus::Stopped));
  if (w.finishedStatus == RunStatus::Diverged) v.diverged(w.finishedMessage);
  if (clean && w.finishedStatus == RunStatus::Stopped && v.status == RunStatus::Finished && v.failure.empty()) {
    v.stopping = true;  // the stages halted together (a Ctrl-C that reached them directly)
    v.status = RunStatus::Stopped;
    v.message = w.finishedMessage;
  }
  // A worker ended by the user's Ctrl-C (it reached the whole process group, before the worker
  // could stop in order) is part of the stop, not a failure.
  if (clean || !v.undecided() || stopAsked() || v.status == RunStatus::Diverged) return;
  const std::string how = WIFSIGNALED(st) ? "was killed by " + signalName(WTERMSIG(st)) : "exited with code " + std::to_string(WEXITSTATUS(st));
  std::string failure = "stage " + std::to_string(w.rank) + " (rank " + std::to_string(w.rank) + ", pid " + std::to_string(w.pid) + ") " + how;
  if (!w.finishedMessage.empty()) failure += ": " + w.finishedMessage;
  else if (!w.errTail.empty()) failure += ": " + w.errTail;
  v.fail(failure);
}

RunOutcome settleOutcome(RunVerdict& v, const WorkerProcesses& workers, const RemoteNodes* remotes, bool stopAsked) {
  const auto& ws = workers.workers();
  // A Ctrl-C that reaches the workers before their own handlers are set (still loading) ends them
  // at once, possibly all of them before the launcher acts on the stop. Such a run is stopped, not
  // finished: a stage that did not report finishing was stopped.
  if (stopAsked && v.failure.empty() && v.status == RunStatus::Finished && !v.stopping &&
      std::any_of(ws.begin(), ws.end(), [](const WorkerProcess& w) { return w.finishedStatus != RunStatus::Finished; })) {
    v.stopping = true;
    v.status = RunStatus::Stopped;
    v.message = "stopped by request during start-up (the stages had not begun training: no checkpoint)";
  }
  if (!v.failure.empty() && v.status == RunStatus::Finished) {
    v.status = RunStatus::Failed;
    v.message = v.failure;
    if (remotes) v.message += remotes->missingNote();
  }
  RunOutcome out{v.status, v.message, Json::object()};
  if (v.stopping)
    for (const auto& w : ws)
      if (w.finishedStatus == RunStatus::Stopped && w.haltStep > 0) {  // halted at a common minibatch: its message names the step
        out.message = w.finishedMessage;
        out.haltStep = w.haltStep;
      }
  return out;
}

Json runSummary(const WorkerProcesses& workers, const std::map<int, Json>& remoteSummaries, int stages, double wallS) {
  Json each = Json::array();
  bool lastStageReported = false;
  // A worker's summary is its stage's, or (a rank holding several) theirs under "stages".
  auto add = [&](const Json& summary) {
    if (!summary.is_object()) return;
    const bool several = summary.contains("stages") && summary["stages"].is_array();
    for (const Json& s : several ? summary["stages"] : Json::array({summary})) {
      each.push_back(s);
      lastStageReported = lastStageReported || s.value("stage", -1) == stages - 1;
    }
  };
  for (const auto& w : workers.workers()) add(w.summary);
  for (const auto& [rank, summary] : remoteSummaries) add(summary);
  Json summary = combineStageSummaries(each);
  if (!lastStageReported) {  // no final metrics to report: keep only what the stages measured
    for (const char* key : {"final_loss", "final_eval_loss", "final_accuracy", "best_accuracy", "samples"}) summary.erase(key);
  }
  // The whole run's time, as single mode counts it (start-up and evaluation included): the last
  // stage's own wall time leaves out the workers' start-up.
  summary["wall_s"] = wallS;
  if (summary.contains("samples") && wallS > 0)
    summary["samples_per_s"] =
        static_cast<double>(summary.value("samples", int64_t{0}) - summary.value("resumed_samples", int64_t{0})) / wallS;
  return summary;
}

}  // namespace pm
