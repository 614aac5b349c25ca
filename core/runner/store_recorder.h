#pragma once
// Records the event stream of one run into the run store: step/eval events become metrics,
// stage events per-stage metrics, trace events trace rows, log/warning/error events log rows, and
// the structured fields of the run (`partition` of run_started and of the launcher's partition
// log event, `halt_step` of run_finished) the run's fields (RunRecord::partition, halt_step).
// Rows are written in batched transactions every `flushInterval` seconds, also when no event
// arrives (a background thread flushes what is buffered), and on run_finished / flush(), so a
// writer killed at any moment loses at most the last `flushInterval` seconds of rows.
// Thread-safe (one mutex). close() stops the flushing thread: call it before using the store
// from another thread again (the destructor calls it).
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
  // Why rows were lost: the first write the store refused (a full disk, an I/O error), with the
  // store's message; "" while every write went in. The run's end reports it (runLocally).
  std::string failure() const;

 private:
  void record(const Json& e);
  // Writes the run fields not yet written. finalAttempt = false: a failed write keeps them for the
  // next attempt; true: a failed write drops them (the error propagates), as a failed flush drops
  // buffered rows.
  void writeRunFields(bool finalAttempt);
  void tryRunFields();  // writeRunFields(false), a failure left to the next flush
  // The buffered rows, then the run fields; the first failure is rethrown once both were tried.
  void writeAll(bool finalFields);
  RunStore& store_;
  int64_t run_;
  double flushInterval_;
  double lastFlush_ = 0;
  mutable std::mutex mu_;
  std::string failure_;
  std::condition_variable wake_;
  bool closing_ = false;
  std::thread flusher_;
  std::vector<std::pair<int, int>> partition_;  // run fields not yet written (empty / 0: none)
  std::vector<int> stageRanks_;                  // the rank of each stage of partition_
  int64_t haltStep_ = 0;
};

}  // namespace pm
