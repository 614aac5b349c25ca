#pragma once
// Shows a run's progress on a stream: a redrawn bar on a terminal (step, epoch, loss,
// throughput, ETA), plain lines otherwise (at most one every `lineInterval` seconds).
#include <cstdio>
#include <mutex>

#include "core/events/event_sink.h"

namespace pm {

class ProgressPrinter : public EventSink {
 public:
  explicit ProgressPrinter(FILE* out, double lineInterval = 2.0);
  void emit(const Json& event) override;
  void flush() override;

 private:
  FILE* out_;
  bool tty_;
  double lineInterval_;
  double lastLine_ = -1e9;
  double lastLoss_ = 0, lastThroughput_ = 0;
  bool barShown_ = false;
  std::mutex mu_;
};

}  // namespace pm
