#pragma once
#include <string>

// The names of the metrics a run's events are stored under, declared once: the recorder
// (core/runner/store_recorder.cpp) writes a step event's fields as "train/<field>" and an eval
// event's as "eval/<field>"; analysis, the CLI, the report and the workbench read them by these
// names. Per-stage metrics are "stage<s>/<field>" (core/analysis/run_data.h).
namespace pm::metric {

inline constexpr const char* kTrainPrefix = "train/";
inline constexpr const char* kEvalPrefix = "eval/";
// The fields of a step event ("step") the recorder keeps, and of an eval event ("eval").
inline constexpr const char* kStepFields[] = {"loss", "lr", "samples_per_s", "epoch", "samples"};
inline constexpr const char* kEvalFields[] = {"loss", "accuracy", "perplexity"};

inline constexpr const char* kTrainLoss = "train/loss";
inline constexpr const char* kTrainSamples = "train/samples";
inline constexpr const char* kTrainSamplesPerS = "train/samples_per_s";
inline constexpr const char* kEvalLoss = "eval/loss";
inline constexpr const char* kEvalAccuracy = "eval/accuracy";
inline constexpr const char* kEvalPerplexity = "eval/perplexity";
// A resumed run's pauses: at each resume, one point at the checkpoint step it continued from,
// stamped with the resume's wall time, whose value is the seconds the run has been paused in all
// so far (from each session's end to the resume that continued it). Written by the launcher
// (core/runner/local_run.cpp), read by trainingTime (core/analysis/run_data.h) and the store's
// RunRecord::paused_s; not a training curve.
inline constexpr const char* kTimePaused = "time/paused_s";

// A stage's field of its stage events, as analysis keys it: "stage<s>/<field>".
inline std::string stageKey(int stage, const std::string& field) { return "stage" + std::to_string(stage) + "/" + field; }
// The stage's delay in optimizer steps over the last window (its largest), a stage event's "tau".
inline constexpr const char* kStageTau = "tau";

}  // namespace pm::metric
