#include "core/runner/store_recorder.h"
#include "core/events/metric_keys.h"

#include <chrono>
#include <exception>
#include <utility>
#include <vector>

#include "core/util/system_info.h"

namespace pm {

StoreRecorder::StoreRecorder(RunStore& store, int64_t runId, double flushInterval)
    : store_(store), run_(runId), flushInterval_(flushInterval), lastFlush_(monotonicSeconds()) {
  flusher_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!closing_) {
      wake_.wait_for(lock, std::chrono::duration<double>(flushInterval_ / 2));
      if (closing_) break;
      if (monotonicSeconds() - lastFlush_ >= flushInterval_) {
        try {
          writeAll(/*finalFields=*/false);  // a busy store keeps the rows buffered for the next attempt
        } catch (...) {
        }
        lastFlush_ = monotonicSeconds();
      }
    }
  });
}

StoreRecorder::~StoreRecorder() {
  try {
    close();
  } catch (...) {
  }
}

void StoreRecorder::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  std::lock_guard<std::mutex> lock(mu_);
  writeAll(/*finalFields=*/true);
  lastFlush_ = monotonicSeconds();
}

void StoreRecorder::writeAll(bool finalFields) {
  std::exception_ptr failed;
  try {
    store_.flush();
  } catch (...) {
    failed = std::current_exception();
  }
  try {
    writeRunFields(finalFields);
  } catch (...) {
    if (!failed) failed = std::current_exception();
  }
  if (!failed) return;
  if (failure_.empty()) {
    try {
      std::rethrow_exception(failed);
    } catch (const std::exception& e) {
      failure_ = e.what();
    } catch (...) {
      failure_ = store_.path() + ": unknown error while saving rows";
    }
  }
  std::rethrow_exception(failed);
}

std::string StoreRecorder::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void StoreRecorder::tryRunFields() {
  try {
    writeRunFields(/*finalAttempt=*/false);
  } catch (const std::exception&) {
    // A busy store: the flushing thread writes them with the rows.
  }
}

void StoreRecorder::writeRunFields(bool finalAttempt) {
  if (!partition_.empty()) {
    const auto part = finalAttempt ? std::exchange(partition_, {}) : partition_;
    store_.setPartition(run_, part, stageRanks_);
    partition_.clear();
  }
  if (haltStep_ > 0) {
    const int64_t step = finalAttempt ? std::exchange(haltStep_, 0) : haltStep_;
    store_.setHaltStep(run_, step);
    haltStep_ = 0;
  }
}

static double num(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nan("");
  return it->is_number() ? it->get<double>() : std::nan("");
}

// The stages' [begin, end) units and ranks of an event's `partition` array ([{"stage", "units":
// [b, e], "rank"}, ...] in stage order; without "rank", stage s ran on rank s); empty when it has
// none or it is malformed.
static std::vector<std::pair<int, int>> partitionOf(const Json& e, std::vector<int>& ranks) {
  std::vector<std::pair<int, int>> out;
  ranks.clear();
  const auto it = e.find("partition");
  if (it == e.end() || !it->is_array()) return out;
  for (const auto& s : *it) {
    const auto u = s.find("units");  // end() for anything but an object
    if (u == s.end() || !u->is_array() || u->size() != 2 || !(*u)[0].is_number_integer() || !(*u)[1].is_number_integer())
      return {};
    out.emplace_back((*u)[0].get<int>(), (*u)[1].get<int>());
    const auto r = s.find("rank");
    ranks.push_back(r != s.end() && r->is_number_integer() ? r->get<int>() : static_cast<int>(out.size()) - 1);
  }
  return out;
}

void StoreRecorder::record(const Json& e) {
  const std::string type = e.value("type", "");
  const double t = e.value("t", wallClockSeconds());
  // The partition, as the launcher decided it (a log event) or the stages trained with it
  // (run_started): a field of the run.
  if (type == ev::kRunStarted || type == ev::kLog)
    if (auto part = partitionOf(e, stageRanks_); !part.empty()) {
      partition_ = std::move(part);
      tryRunFields();
    }
  if (type == ev::kRunStarted) {
    store_.appendLog(run_, t, "info", "run started on " + e.value("host", std::string("?")));
    if (e.contains("partition_text"))
      store_.appendLog(run_, t, "info", "partition: " + e.value("partition_text", std::string()));
    if (const auto b = e.find("build"); b != e.end() && b->is_object()) store_.setBuild(run_, engineBuildFromJson(*b));
    if (e.contains("blas"))
      store_.appendLog(run_, t, "info", "BLAS: " + e["blas"].value("kind", std::string("?")) + " (" +
                                            e["blas"].value("library", std::string("")) + ")");
  } else if (type == ev::kStep) {
    const int64_t step = e.value("step", int64_t{0});
    for (const char* k : metric::kStepFields)
      if (e.contains(k)) store_.appendMetric(run_, std::string(metric::kTrainPrefix) + k, step, t, num(e, k));
  } else if (type == ev::kEval) {
    const int64_t step = e.value("step", int64_t{0});
    for (const char* k : metric::kEvalFields)
      if (e.contains(k)) store_.appendMetric(run_, std::string(metric::kEvalPrefix) + k, step, t, num(e, k));
  } else if (type == ev::kStage) {
    const int stage = e.value("stage", 0);
    const int64_t step = e.value("step", int64_t{0});
    for (const char* k : {"compute_s", "wait_s", "idle_s", "utilization", "rss", "tau", "lr", "weight_gap",
                          "weight_gap_t2", "versions", "recomputed"})
      if (e.contains(k)) store_.appendStageMetric(run_, stage, step, k, num(e, k));
    // The accounted memory by category, and on a GPU the CUDA caching allocator's own figures for
    // the stage's device (allocated, its peak, reserved), which the CPU meter cannot see.
    for (const auto& [group, prefix] : {std::pair{"memory", "mem/"}, std::pair{"cuda", "cuda/"}})
      if (const auto g = e.find(group); g != e.end() && g->is_object())
        for (auto it = g->begin(); it != g->end(); ++it)
          if (it->is_number()) store_.appendStageMetric(run_, stage, step, prefix + it.key(), it->get<double>());
  } else if (type == ev::kTrace) {
    store_.appendTrace(run_, TraceRecord{e.value("stage", 0), e.value("action", std::string("?")), e.value("mb", -1),
                                         e.value("start", 0.0), e.value("end", 0.0)});
  } else if (type == ev::kTraceResumed) {
    store_.deleteTraceFrom(run_, e.value("stage", 0), e.value("from", 0.0));
  } else if (type == ev::kLog) {
    store_.appendLog(run_, t, e.value("level", std::string("info")), e.value("message", std::string()));
  } else if (type == ev::kWarning) {
    store_.appendLog(run_, t, "warning", e.value("message", std::string()));
  } else if (type == ev::kError) {
    std::string msg = e.value("message", std::string());
    if (e.contains("place") && e["place"].is_string() && !e["place"].get<std::string>().empty())
      msg = e["place"].get<std::string>() + ": " + msg;
    store_.appendLog(run_, t, "error", msg);
  } else if (type == ev::kStageFinished) {
    store_.appendLog(run_, t, parseRunStatus(e.value("status", std::string())) == RunStatus::Failed ? "error" : "info",
                     "stage " + std::to_string(e.value("stage", -1)) + " " + e.value("status", std::string()) +
                         (e.value("message", std::string()).empty() ? "" : ": " + e.value("message", std::string())));
  } else if (type == ev::kRunFinished) {
    if (e.contains("summary") && e["summary"].is_object()) {
      store_.appendLog(run_, t, "info", "summary " + e["summary"].dump());
    }
    const auto halt = e.find("halt_step");
    if (halt != e.end() && halt->is_number_integer() && halt->get<int64_t>() > 0) {
      haltStep_ = halt->get<int64_t>();
      tryRunFields();
    }
  }
}

void StoreRecorder::emit(const Json& event) {
  std::lock_guard<std::mutex> lock(mu_);
  record(event);
  // Rows are written by the flushing thread every flushInterval_; the run's end at once, and a
  // stage's checkpoint too: what that stage recorded before its cut is never recorded again by a
  // resume from it, so it must not be lost with a crash right after.
  const std::string type = event.value("type", "");
  const bool checkpoint = type == ev::kLog && event.contains("checkpoint_step");
  if (type != ev::kRunFinished && !checkpoint) return;
  try {
    writeAll(/*finalFields=*/!checkpoint);
    lastFlush_ = monotonicSeconds();
  } catch (const std::exception&) {
    // Kept in failure() for the run's end; the other sinks (a client of --events) still get the
    // event, and the run goes on to its end.
  }
}

void StoreRecorder::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  writeAll(/*finalFields=*/true);
  lastFlush_ = monotonicSeconds();
}

}  // namespace pm
