#pragma once
// Records the event stream of one run into the run store: step/eval events become metrics,
// stage events per-stage metrics, trace events trace rows, log/warning/error events log rows.
// Rows are written in batched transactions at most every `flushInterval` seconds and on
// run_finished / flush(). Thread-safe (one mutex); owns no thread.
#include <mutex>

#include "core/events/event_sink.h"
#include "core/store/run_store.h"

namespace pm {

class StoreRecorder : public EventSink {
 public:
  StoreRecorder(RunStore& store, int64_t runId, double flushInterval = 0.5);
  ~StoreRecorder() override;
  void emit(const Json& event) override;
  void flush() override;
  int64_t runId() const { return run_; }

 private:
  void record(const Json& e);
  RunStore& store_;
  int64_t run_;
  double flushInterval_;
  double lastFlush_ = 0;
  std::mutex mu_;
};

}  // namespace pm
