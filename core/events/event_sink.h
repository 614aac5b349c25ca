#pragma once
// Where events go. emit() may be called from any thread; implementations serialise internally.
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/events/event.h"

namespace pm {

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void emit(const Json& event) = 0;
  virtual void flush() {}
};

// Writes each event as one line to a FILE* (not owned), flushing after each line.
class JsonLinesSink : public EventSink {
 public:
  // `onBrokenPipe`: called (under the sink's lock) when a write fails with EPIPE, the reader gone.
  explicit JsonLinesSink(FILE* out, std::function<void()> onBrokenPipe = {}) : out_(out), onBrokenPipe_(std::move(onBrokenPipe)) {}
  void emit(const Json& event) override;
  void flush() override;

 private:
  FILE* out_;
  std::function<void()> onBrokenPipe_;
  std::mutex mu_;
};

// Writes each event as one line to a file descriptor (not owned) from a thread of its own, so that
// emit() never waits on the reader: the run goes on whatever the client does (`--events stdout`
// read by a slow program, or one stopped with Ctrl-Z). Lines wait in memory up to `boundBytes`;
// beyond it the frequent events (step, stage, trace) are dropped for this client, and the next line
// it gets is a warning saying how many were dropped (the store records them all). Every other
// event is kept whatever the bound. flush() and the destructor wait up to `drainS` for the reader
// to take what is queued; after that the lines left are given up (a reader that is gone or
// stopped cannot hold the run's process for ever). A write that fails (EPIPE: the reader gone)
// ends the writing and calls `onBrokenPipe` once, from the writer thread.
class BoundedLinesSink : public EventSink {
 public:
  static constexpr size_t kDefaultBoundBytes = 8u << 20;
  BoundedLinesSink(int fd, size_t boundBytes = kDefaultBoundBytes, double drainS = 10.0,
                   std::function<void()> onBrokenPipe = {});
  ~BoundedLinesSink() override;
  BoundedLinesSink(const BoundedLinesSink&) = delete;
  BoundedLinesSink& operator=(const BoundedLinesSink&) = delete;
  void emit(const Json& event) override;
  void flush() override;
  // Events dropped so far because the reader fell behind (tests, the end of a run).
  size_t dropped() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the writer thread, which may outlive this sink (a reader that never reads)
  double drainS_;
};

// Forwards every event to each of its sinks, in order.
class FanoutSink : public EventSink {
 public:
  void add(std::shared_ptr<EventSink> sink) { sinks_.push_back(std::move(sink)); }
  void emit(const Json& event) override;
  void flush() override;

 private:
  std::vector<std::shared_ptr<EventSink>> sinks_;
};

// Keeps every event in memory (tests, fakes).
class MemorySink : public EventSink {
 public:
  void emit(const Json& event) override;
  std::vector<Json> events() const;
  std::vector<Json> ofType(const std::string& type) const;

 private:
  mutable std::mutex mu_;
  std::vector<Json> events_;
};

// Calls a function for every event.
class CallbackSink : public EventSink {
 public:
  explicit CallbackSink(std::function<void(const Json&)> fn) : fn_(std::move(fn)) {}
  void emit(const Json& event) override { fn_(event); }

 private:
  std::function<void(const Json&)> fn_;
};

}  // namespace pm
