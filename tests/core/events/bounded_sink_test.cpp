// BoundedLinesSink: the `--events stdout` writer that never holds a run on its reader.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/events/event.h"
#include "core/events/event_sink.h"

namespace {

// Every line the read end gives until the write end is closed.
std::vector<pm::Json> readLines(int fd) {
  std::string all;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<size_t>(n));
  std::vector<pm::Json> out;
  size_t start = 0;
  for (size_t nl; (nl = all.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(pm::Json::parse(all.substr(start, nl - start)));
  return out;
}

pm::Json stepEvent(int64_t step) {
  pm::Json e = pm::makeEvent(pm::ev::kStep);
  e["step"] = step;
  e["loss"] = 1.0 / static_cast<double>(step);
  e["padding"] = std::string(200, 'x');
  return e;
}

}  // namespace

// Nobody reads the pipe while 5000 step events (about 1.3 MB, far over the pipe's 64 KiB and the
// sink's 64 KiB bound) and the run's end are emitted: every emit returns at once. The reader then
// gets, in order, the steps that fitted, warnings naming how many step events were dropped since
// the last line it got (one at least, right before the run's end), and the run's end; the steps it
// got plus those the warnings count are all 5000.
TEST(BoundedLinesSink, AReaderThatDoesNotReadNeverHoldsTheEmitterAndIsToldWhatItMissed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto sink = std::make_unique<pm::BoundedLinesSink>(fds[1], 64 * 1024, /*drainS=*/30.0);
  const int kSteps = 5000;
  auto emitted = std::async(std::launch::async, [&] {
    pm::Json started = pm::makeEvent(pm::ev::kRunStarted);
    sink->emit(started);
    for (int64_t k = 1; k <= kSteps; ++k) sink->emit(stepEvent(k));
    pm::Json finished = pm::makeEvent(pm::ev::kRunFinished);
    finished["status"] = "finished";
    sink->emit(finished);
  });
  ASSERT_EQ(emitted.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "emit() waited on the reader";
  const size_t dropped = sink->dropped();
  EXPECT_GT(dropped, 0u);
  auto reader = std::async(std::launch::async, [&] { return readLines(fds[0]); });
  sink.reset();  // drains to the reader, then stops writing
  ::close(fds[1]);
  const auto lines = reader.get();
  ::close(fds[0]);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines.front().value("type", ""), pm::ev::kRunStarted);
  EXPECT_EQ(lines.back().value("type", ""), pm::ev::kRunFinished);
  size_t steps = 0, warnings = 0, warned = 0;
  int64_t last = 0;
  for (const auto& e : lines) {
    const std::string type = e.value("type", "");
    if (type == pm::ev::kStep) {
      ++steps;
      EXPECT_GT(e.value("step", int64_t{0}), last) << "steps out of order";
      last = e.value("step", int64_t{0});
    } else if (type == pm::ev::kWarning) {
      ++warnings;
      warned += e.value("dropped_events", size_t{0});
      EXPECT_NE(e.value("message", std::string()).find("fell behind"), std::string::npos);
    }
  }
  EXPECT_GE(warnings, 1u);
  EXPECT_EQ(lines[lines.size() - 2].value("type", ""), pm::ev::kWarning) << "the last drops were not told before the end";
  EXPECT_EQ(warned, dropped);
  EXPECT_EQ(steps + dropped, static_cast<size_t>(kSteps));
}

// A reader that reads keeps up: nothing is dropped and every line arrives.
TEST(BoundedLinesSink, AReaderThatKeepsUpGetsEveryLine) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto reader = std::async(std::launch::async, [&] { return readLines(fds[0]); });
  {
    pm::BoundedLinesSink sink(fds[1]);
    for (int64_t k = 1; k <= 2000; ++k) sink.emit(stepEvent(k));
    sink.flush();
    EXPECT_EQ(sink.dropped(), 0u);
  }
  ::close(fds[1]);
  const auto lines = reader.get();
  ::close(fds[0]);
  EXPECT_EQ(lines.size(), 2000u);
}

// The reader gone (the pipe's read end closed): writing ends, the callback says so once, and
// later emits return without writing.
TEST(BoundedLinesSink, AReaderThatIsGoneEndsTheWriting) {
  std::signal(SIGPIPE, SIG_IGN);  // as pipemare does: a write to a pipe nobody reads fails with EPIPE
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  std::promise<void> told;
  std::atomic<int> calls{0};
  {
    pm::BoundedLinesSink sink(fds[1], pm::BoundedLinesSink::kDefaultBoundBytes, 5.0, [&] {
      if (++calls == 1) told.set_value();
    });
    sink.emit(stepEvent(1));
    ASSERT_EQ(told.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
    for (int64_t k = 2; k <= 100; ++k) sink.emit(stepEvent(k));
    sink.flush();
  }
  EXPECT_EQ(calls, 1);
  ::close(fds[1]);
}
