#pragma once
// Records the event stream of one run into the run store: step/eval events become metrics,
// stage events per-stage metrics, trace events trace rows, log/warning/error events log rows.
// Rows are written in batched transactions every `flushInterval` seconds, also when no event
// arrives (a background thread flushes what is buffered), and on run_finished / flush(), so a
// writer killed at any moment loses at most the last `flushInterval` seconds of rows.
// Thread-safe (one mutex). close() stops the flushing thread: call it before using the store
// from another thread again (the destructor calls it).
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/events/event_sink.h"
#include "core/store/run_store.h"

namespace pm {

class StoreRecorder : public EventSink {
 public:
  StoreRecorder(RunStore& store, int64_t runId, double flushInterval = 0.5);
  ~StoreRecorder() override;
  void emit(const Json& event) override;
  void flush() override;
  // Flushes and stops the background thread; the recorder must not be used afterwards.
  void close();
  int64_t runId() const { return run_; }

 private:
  void record(const Json& e);
  RunStore& store_;
  int64_t run_;
  double flushInterval_;
  double lastFlush_ = 0;
  std::mutex mu_;
  std::condition_variable wake_;
  bool closing_ = false;
  std::thread flusher_;
};

}  // namespace pm
