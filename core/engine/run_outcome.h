#pragma once
// How a run (or one stage of it) ended, and the thread/BLAS set-up every engine entry point does.
#include <cstdint>
#include <string>

#include "core/events/event_sink.h"
#include "core/events/run_status.h"

namespace pm {

// A run stopped at a checkpoint ends its message with this hint. The engine does not know the
// run's id; withRunId, called where the id is known (runLocally), completes the hint with it.
inline constexpr const char* kResumeHint = "(checkpoint written: resume with pipemare run --resume)";
inline std::string withRunId(std::string message, int64_t run) {
  const std::string hint = kResumeHint;
  if (const auto at = message.find(hint); at != std::string::npos) message.insert(at + hint.size() - 1, " " + std::to_string(run));
  return message;
}

struct RunOutcome {
  RunStatus status = RunStatus::Finished;  // Finished | Stopped | Diverged | Failed (sent and stored as toString(status))
  std::string message;
  Json summary;         // final/best metrics, samples, wall_s, samples_per_s, per-stage figures
  int64_t haltStep = 0; // stopped at a common checkpoint: the step it was taken after (0: none)
};

// The run's summary from its stages' (`stage` numbered): the last stage's final metrics and
// samples; compute_s and wait_s summed over the stages; peak_memory, inflight_max, tau_max,
// tau_expected and versions_max their maxima; `stages` the per-stage summaries in stage order.
Json combineStageSummaries(Json stages);

// LibTorch's intra-op threads and the BLAS library's threads, both set to one stage's count
// (the engine's stages, the time profile of a partition, the non-pipelined reference); false
// when the BLAS thread count could not be set.
bool setStageThreads(int threads);

// Applies the configured threads to LibTorch (intra-op) and BLAS, and reports the loaded BLAS:
// returns the fields for run_started; emits a warning event when it is the reference BLAS.
Json configureThreadsAndBlas(int threads, EventSink& sink);

}  // namespace pm
