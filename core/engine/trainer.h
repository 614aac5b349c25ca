#pragma once
// Single-process, single-stage training of an experiment (the P = 1 engine): minibatches split
// into N microbatches with gradient accumulation, evaluation, divergence guard, and the event
// stream (run_started, step, eval, stage, progress, warning, run_finished).
// Threading: run() executes on the calling thread; `stop` may be set from any thread.
#include <atomic>
#include <string>

#include "core/config/experiment.h"
#include "core/events/event_sink.h"

namespace pm {

struct RunOutcome {
  std::string status;   // finished | stopped | diverged | failed
  std::string message;
  Json summary;         // final/best metrics, steps, samples, wall_s, samples_per_s
};

class Trainer {
 public:
  Trainer(Experiment e, EventSink& sink, const std::atomic<bool>* stop = nullptr);
  RunOutcome run();

 private:
  Experiment e_;
  EventSink& sink_;
  const std::atomic<bool>* stop_;
};

// Applies the configured threads to LibTorch (intra-op) and BLAS, and reports the loaded BLAS:
// returns the fields for run_started; emits a warning event when it is the reference BLAS.
Json configureThreadsAndBlas(int threads, EventSink& sink);

}  // namespace pm
