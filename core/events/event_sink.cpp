#include "core/events/event_sink.h"

#include <cerrno>

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
