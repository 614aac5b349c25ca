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
