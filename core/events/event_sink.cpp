#include "core/events/event_sink.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <string>
#include <thread>

namespace pm {

void JsonLinesSink::emit(const Json& event) {
  std::string line = eventToLine(event);
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fputc('\n', out_);
  errno = 0;
  if (std::fflush(out_) != 0 && errno == EPIPE && onBrokenPipe_) onBrokenPipe_();
}

void JsonLinesSink::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fflush(out_);
}

struct BoundedLinesSink::State {
  int fd = -1;
  size_t bound = 0;
  std::function<void()> onBrokenPipe;
  std::mutex mu;
  std::condition_variable wake, drained;
  std::deque<std::string> lines;
  size_t bytes = 0;         // queued or being written
  size_t dropped = 0;       // dropped since the last warning was queued
  size_t droppedTotal = 0;  // dropped in all
  bool writing = false;     // the writer holds lines taken from the queue
  bool closing = false;
  bool broken = false;

  // Writes `data` whole; false when the reader is gone (or another error ends the stream).
  bool writeAll(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      wake.wait(lock, [&] { return closing || !lines.empty(); });
      if (lines.empty()) break;  // closing, nothing left
      std::string batch;
      while (!lines.empty()) {
        batch += lines.front();
        lines.pop_front();
      }
      writing = true;
      lock.unlock();
      const bool ok = writeAll(batch);
      lock.lock();
      writing = false;
      bytes -= batch.size();  // counted until written: the bound covers the batch in flight too
      if (!ok) {
        broken = true;
        lines.clear();
        bytes = 0;
        drained.notify_all();
        lock.unlock();
        if (onBrokenPipe) onBrokenPipe();
        return;
      }
      if (lines.empty()) drained.notify_all();
    }
    drained.notify_all();
  }
};

namespace {
// What a client can miss without missing what happened: the per-step figures (the store keeps them).
bool droppable(const std::string& type) { return type == ev::kStep || type == ev::kStage || type == ev::kTrace; }
}  // namespace

BoundedLinesSink::BoundedLinesSink(int fd, size_t boundBytes, double drainS, std::function<void()> onBrokenPipe)
    : state_(std::make_shared<State>()), drainS_(drainS) {
  state_->fd = fd;
  state_->bound = boundBytes;
  state_->onBrokenPipe = std::move(onBrokenPipe);
  std::thread([s = state_] { s->run(); }).detach();  // owns its state; ends when closed and drained, or broken
}

BoundedLinesSink::~BoundedLinesSink() {
  flush();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->closing = true;
  state_->wake.notify_all();
}

void BoundedLinesSink::emit(const Json& event) {
  const std::string type = event.value("type", "");
  std::string line = eventToLine(event) + "\n";
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.broken || s.closing) return;
  if (s.bytes + line.size() > s.bound && droppable(type)) {
    ++s.dropped;
    ++s.droppedTotal;
    return;
  }
  if (s.dropped > 0) {
    Json warning = makeEvent(ev::kWarning);
    warning["message"] = std::to_string(s.dropped) +
                         " step, stage or trace event(s) were not sent to this reader: it fell behind (the run went on, "
                         "and the run store has every one)";
    warning["dropped_events"] = s.dropped;
    std::string w = eventToLine(warning) + "\n";
    s.bytes += w.size();
    s.lines.push_back(std::move(w));
    s.dropped = 0;
  }
  s.bytes += line.size();
  s.lines.push_back(std::move(line));
  s.wake.notify_one();
}

void BoundedLinesSink::flush() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.drained.wait_for(lock, std::chrono::duration<double>(drainS_), [&] { return s.broken || (s.lines.empty() && !s.writing); });
}

size_t BoundedLinesSink::dropped() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->droppedTotal;
}

void FanoutSink::emit(const Json& event) {
  for (auto& s : sinks_) s->emit(event);
}

void FanoutSink::flush() {
  for (auto& s : sinks_) s->flush();
}

void MemorySink::emit(const Json& event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(event);
}

std::vector<Json> MemorySink::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<Json> MemorySink::ofType(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  for (const auto& e : events_)
    if (e.value("type", "") == type) out.push_back(e);
  return out;
}

}  // namespace pm
