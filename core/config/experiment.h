#pragma once
// The experiment: everything a run needs, as loaded from a JSON experiment file
// (docs/experiment-format.md documents every field, default and range). Fields with a fixed set of
// values are enums (core/config/choices.h), parsed once here; files spell them by name.
// experiment_fields.h describes every field (type, accepted values, help) for editors.
// Pure data + validation; no LibTorch, no Qt.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/choices.h"

namespace pm {

using Json = nlohmann::json;

// The name of the model that is read from a TorchScript file (model.path) rather than built from
// the zoo.
inline constexpr const char* kTorchScriptModel = "torchscript";

struct ModelConfig {
  std::string name = "mlp";  // mlp | cnn | resnet20 | charlm | resnet50 | torchscript
  std::string path;          // torchscript: the scripted nn.Sequential's file ("" for the zoo)
  ModelTask task = ModelTask::Auto;  // the loss; auto = the dataset's
  Json options = Json::object();  // model-specific options (reserved; must be an object)
  bool fromFile() const { return name == kTorchScriptModel; }
};

struct DataConfig {
  DatasetKind dataset = DatasetKind::FashionMnist;
  std::string path;                        // "" = the dataset's default location; tensors: the training file
  std::string eval_path;                   // tensors: the held-out file ("" = the last eval_fraction of path's samples)
  int batch_size = 64;                     // samples per minibatch, 1..65536
  EvalSplit eval_split = EvalSplit::Test;  // fashion-mnist: the split evaluated; text: eval_fraction
  double eval_fraction = 0.1;             // text, tensors without eval_path: share held out for validation, (0, 0.5]
  int64_t train_limit = 0;                // use only the first K training samples (0 = all)
  int64_t eval_limit = 0;                 // evaluate on only the first K held-out samples (0 = all)
  int context = 128;                      // text: sequence length in bytes, 8..4096
  int64_t synthetic_samples = 2048;       // synthetic: number of training samples
  SyntheticTask synthetic_task = SyntheticTask::Classification;
  bool shuffle = true;
};

struct PartitionConfig {
  PartitionMethod method = PartitionMethod::Parameters;
  std::vector<int> boundaries;  // explicit: first unit index of stages 2..P (P-1 increasing values)
};

struct PipelineConfig {
  int stages = 1;          // P, 1..number of partitionable units of the model
  int microbatches = 1;    // N, 1..batch_size
  PartitionConfig partition;
  ScheduleKind schedule = ScheduleKind::GPipe;
  bool recompute = false;   // gpipe: recompute activations in the backward
  int update_interval = 1;  // pipedream: microbatches per optimizer step; 2bw: m >= P
  // pipedream, pipemare: 1f1b (P-1-s forwards ahead) | paper (2(P-1-s))
  PipelineTiming timing = PipelineTiming::Software1F1B;
  // interleaved-1f1b: v, the model chunks each rank holds (the model is cut into v x stages
  // stages, placed in a loop); zb-v holds 2 whatever it says; the others 1.
  int chunks = 2;
};

struct PipeMareConfig {
  bool t1 = false;             // learning-rate rescheduling
  int64_t anneal_steps = 0;    // K in optimizer steps; 0 = anneal_epochs, or one epoch of updates
  double anneal_epochs = 0;    // K in epochs of updates (not with anneal_steps); 0 = anneal_steps
  bool t2 = false;             // discrepancy correction
  double decay = 0.1;          // D, in (0, 1)
  double warmup_epochs = 0;    // synchronous warm-up epochs, >= 0
  WarmupSchedule warmup_schedule = WarmupSchedule::GPipe;
  MomentumMode momentum_mode = MomentumMode::Same;  // delay-scaled: momentum reduced with the stage's delay
};

struct LrScheduleConfig {
  LrScheduleType name = LrScheduleType::Constant;
  int64_t warmup_steps = 0;       // linear-warmup / inverse-sqrt: steps of linear ramp
  int64_t step_size = 1000;       // step: decay every step_size optimizer steps
  double gamma = 0.1;             // step: multiplicative decay
  double min_lr = 0.0;            // cosine: floor
};

struct OptimizerConfig {
  OptimizerType name = OptimizerType::Sgd;
  double lr = 0.01;          // > 0
  double momentum = 0.0;     // sgd: [0, 1)
  bool nesterov = false;     // sgd: requires momentum > 0
  double weight_decay = 0.0; // >= 0
  double beta1 = 0.9;        // adam/adamw: [0, 1)
  double beta2 = 0.999;      // adam/adamw: [0, 1)
  double eps = 1e-8;         // adam/adamw: > 0
  LrScheduleConfig schedule;
};

struct DivergenceGuard {
  bool enabled = true;
  double max_loss = 1e6;  // a loss above this (or non-finite) ends the run as "diverged"
};

struct TrainingConfig {
  double epochs = 1;          // > 0 when steps == 0
  int64_t steps = 0;          // minibatch steps; 0 = derived from epochs
  int64_t eval_interval = 0;  // evaluate every K steps; 0 = at the end of each epoch only
  int64_t log_interval = 10;  // emit a step event every K steps (>= 1)
  int64_t trace_steps = 20;   // record the schedule trace of the first K minibatches (-1 = all, 0 = none)
  int64_t checkpoint_every = 0;  // per-stage checkpoints every K steps (0 = only when a single-mode run stops)
  uint64_t seed = 1;
  DivergenceGuard divergence_guard;
};

struct ExecutionConfig {
  ExecutionMode mode = ExecutionMode::Single;  // real: one process per stage; single: one process
  CommBackend backend = CommBackend::Gloo;
  int threads_per_stage = 1;      // LibTorch intra-op + BLAS threads per stage, 1..256
  double timeout_s = 60;          // every blocking communication call (seconds, 1..3600)
  std::vector<std::string> devices{"cpu"};  // "cpu" or "cuda:K", one entry or one per stage
};

struct Experiment {
  std::string name = "experiment";
  std::vector<std::string> tags;
  std::string notes;
  ModelConfig model;
  DataConfig data;
  PipelineConfig pipeline;
  PipeMareConfig pipemare;
  OptimizerConfig optimizer;
  TrainingConfig training;
  ExecutionConfig execution;
};

// Parse and validate an experiment from JSON. `source` names the file for messages.
// Throws ConfigError("<source>: <field.path>", "expected ..., found ...") on the first problem;
// unknown keys are errors with a did-you-mean suggestion.
Experiment experimentFromJson(const Json& j, const std::string& source = "experiment");

// Read, parse and validate a file. JSON syntax errors name the line and column.
// A field's problem names the file, the line and the field: "<path>:<line>: pipeline.stages"
// (a missing field: the line of its section).
Experiment loadExperimentFile(const std::string& path);
// The same with `key=value` overrides applied (see applyOverrides): a problem an override causes
// names the override; any other names the file's line, "<path>:<line> (with --set): <field>".
Experiment loadExperimentFile(const std::string& path, const std::vector<std::string>& overrides);

// The file paths an experiment file names relative to itself (model.path; data.path and
// data.eval_path of tensor data) made absolute against the directory of `experimentPath`. The
// loaders above apply it; a client that builds an experiment for a file applies it too.
void resolveFilePaths(Experiment& e, const std::string& experimentPath);

// Read and parse a file without validating it (for applying --set overrides before validation).
// Missing file: ConfigError(path, "cannot open: ..."); syntax error: ConfigError("<path>:<line>:<col>", ...);
// a key given twice in one object: ConfigError("<path>: <field.path>", "duplicate key ...").
Json loadExperimentJson(const std::string& path);

// Parse experiment JSON text (not validated). `name` is the file name used in messages: syntax
// errors throw ConfigError("<name>:<line>:<col>", ...), duplicate keys ConfigError("<name>:<line>: <path>", ...) (the line of the second one).
Json parseExperimentText(const std::string& text, const std::string& name);

// The line (1-based) on which each field of valid JSON text is written, by field path as errors
// name them: "pipeline.stages", "execution.devices[1]" (an array element: where it starts).
// `repeated`, when given, receives the line of each field written a second time in one object.
std::map<std::string, int> fieldLines(const std::string& text, std::map<std::string, int>* repeated = nullptr);

// Apply `key=value` overrides (dotted paths, e.g. "pipeline.stages=4"; values parsed as JSON
// when they are valid JSON, else taken as strings) to the raw JSON, then validate it all again.
// A problem an override causes (bad value, unknown key) throws ConfigError("--set <text>", ...);
// the caller still validates the result with experimentFromJson, which reports any other problem.
Json applyOverrides(Json j, const std::vector<std::string>& overrides);

// The full, normalised JSON of an experiment (every field present, defaults filled in).
Json experimentToJson(const Experiment& e);

// Cross-field and range validation of an already-parsed experiment; throws ConfigError.
void validateExperiment(const Experiment& e, const std::string& source = "experiment");

// The model chunks each rank holds (pipeline.chunks for interleaved-1f1b, 2 for zb-v, else 1)
// and the stages the model is cut into: pipeline.stages (the ranks) times that.
int pipelineChunks(const Experiment& e);
int modelStages(const Experiment& e);

// The model names the format accepts (the model catalog's, in its order).
const std::vector<std::string>& modelNames();

}  // namespace pm
