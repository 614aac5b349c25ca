#pragma once
// The engine's one output: a versioned stream of JSON objects, one per line (see docs/events.md).
// Every event has "v" (schema version), "type" and "t" (wall-clock seconds since the epoch).
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

namespace pm {

using Json = nlohmann::json;

inline constexpr int kEventSchemaVersion = 1;

// Event type names (the "type" field).
namespace ev {
inline constexpr const char* kRunStarted = "run_started";    // config, partition, host, blas, threads
inline constexpr const char* kStep = "step";                 // step, epoch, samples, loss, lr, samples_per_s
inline constexpr const char* kEval = "eval";                 // step, epoch, loss, accuracy | perplexity
inline constexpr const char* kStage = "stage";               // per-stage utilization and memory at a step
inline constexpr const char* kTrace = "trace";               // stage, action, mb, start, end
inline constexpr const char* kTraceResumed = "trace_resumed";  // stage, from: a resumed stage's trace restarts at `from`
inline constexpr const char* kProgress = "progress";         // step, total_steps, epoch, eta_s
inline constexpr const char* kLog = "log";                   // level, message (for people); run, resume_step, partition, ...
inline constexpr const char* kWarning = "warning";           // message
inline constexpr const char* kError = "error";               // message, place, stage, rank
// A worker's end (real mode): stage, rank, status, message, summary, halt_step (the step a stop halted it after)
inline constexpr const char* kStageFinished = "stage_finished";
// `pipemare plan --events stdout`'s answer: result (the document --json prints)
inline constexpr const char* kResult = "result";
inline constexpr const char* kRunFinished = "run_finished";  // run, status, message, summary, halt_step (a stop checkpoint)
}  // namespace ev


// A new event of the given type with v and t filled in.
Json makeEvent(const std::string& type);

// An error event for an exception: its message, and for a pm::Error the problem and its place.
Json makeErrorEvent(const std::exception& ex);

// Serialise an event as one line (no trailing newline). Non-finite numbers become null and the
// field name is listed in "nonfinite" so readers can tell NaN from a missing value.
std::string eventToLine(const Json& event);

// Parse one line of the stream. Throws pm::Error (kind Engine) naming the problem on a malformed
// line or an event from a newer schema version.
Json parseEventLine(const std::string& line);

}  // namespace pm
