#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/field_spec.h"
#include "core/config/field_table.h"
#include "core/config/model_catalog.h"
#include "core/util/errors.h"
#include "core/util/strings.h"

// The cross-field rules: what no single field's range says. Checked after every field passed its
// own range, in the order of docs/experiment-format.md's table; the first broken rule is reported
// at the first field it names.

namespace pm::config_detail {

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& field, const std::string& problem) {
  throw FieldError(source, field, problem);
}

// The task the dataset implies (Auto for tensors: the labels decide when the file is read).
ModelTask datasetTask(const DataConfig& d) {
  switch (d.dataset) {
    case DatasetKind::FashionMnist: return ModelTask::Classification;
    case DatasetKind::Text: return ModelTask::LanguageModel;
    case DatasetKind::Synthetic:
      return d.synthetic_task == SyntheticTask::Regression ? ModelTask::Regression : ModelTask::Classification;
    case DatasetKind::Tensors: return ModelTask::Auto;
  }
  return ModelTask::Auto;
}

void checkModelFile(const Experiment& e, const std::string& source) {
  if (e.model.fromFile()) {
    if (trim(e.model.path).empty())
      fail(source, "model.path",
           "model torchscript reads its network from a file: set model.path to a file saved by torch.jit.save "
           "(scripts/export-model.py shows how)");
    if (!e.model.options.empty())
      fail(source, "model.options", "model torchscript takes no options");
  } else if (!e.model.path.empty()) {
    fail(source, "model.path",
         "model.path applies only to model.name=torchscript (the zoo builds model " + e.model.name + "), found " +
             inQuotes(e.model.path));
  }
}

void checkModelData(const Experiment& e, const std::string& source) {
  checkModelFile(e, source);
  const auto& d = e.data;
  if (d.dataset == DatasetKind::Tensors && trim(d.path).empty())
    fail(source, "data.path",
         "data.dataset=tensors reads the training tensors from a file: set data.path to a file saved by "
         "torch.save({\"x\": x, \"y\": y}, path)");
  if (d.dataset != DatasetKind::Tensors && !d.eval_path.empty())
    fail(source, "data.eval_path",
         "data.eval_path applies only to data.dataset=tensors, found data.dataset=" + choiceName(d.dataset));
  const ModelTask implied = datasetTask(d);
  if (e.model.task != ModelTask::Auto && implied != ModelTask::Auto && e.model.task != implied)
    fail(source, "model.task",
         "data.dataset=" + choiceName(d.dataset) + " trains with the " + choiceName(implied) + " loss, found model.task=" +
             choiceName(e.model.task) + " (set model.task to auto or " + choiceName(implied) + ")");
  const ModelInfo* model = findModel(e.model.name);
  if (!model) return;  // torchscript: its input is checked against the data when the file is read
  std::vector<DatasetKind> ok;
  if (model->input == "tokens")
    ok = {DatasetKind::Text, DatasetKind::Tensors};
  else if (model->input == "image224")
    ok = {DatasetKind::Synthetic, DatasetKind::Tensors};
  else
    ok = {DatasetKind::FashionMnist, DatasetKind::Synthetic, DatasetKind::Tensors};
  if (std::find(ok.begin(), ok.end(), e.data.dataset) != ok.end()) return;
  std::string names;  // "a, b or c"
  for (size_t i = 0; i < ok.size(); ++i) names += (i == 0 ? "" : i + 1 == ok.size() ? " or " : ", ") + choiceName(ok[i]);
  fail(source, "data.dataset", "model " + e.model.name + " (model.name) needs data.dataset " + names +
                                   ", found data.dataset=" + choiceName(e.data.dataset));
}

void checkPartition(const Experiment& e, const std::string& source) {
  const auto& p = e.pipeline;
  const int units = modelUnits(e.model.name);  // 0 for torchscript: checked against the file when it is read
  const auto& b = p.partition.boundaries;
  if (p.partition.method != PartitionMethod::Explicit) {
    if (!b.empty())
      fail(source, "pipeline.partition.boundaries",
           "boundaries apply only to pipeline.partition.method=explicit, found pipeline.partition.method=" +
               choiceName(p.partition.method));
    return;
  }
  const int stages = modelStages(e);
  const std::string counted = stages == p.stages ? "pipeline.stages-1" : "pipeline.chunks x pipeline.stages - 1";
  if (static_cast<int>(b.size()) != stages - 1)
    fail(source, "pipeline.partition.boundaries",
         "the explicit partition needs " + counted + " = " + std::to_string(stages - 1) +
             " boundaries (the first unit of stages 2.." + std::to_string(stages) + "), found " +
             std::to_string(b.size()) + ": " + shown(Json(b)));
  for (size_t i = 0; i < b.size(); ++i) {
    if (units > 0 && (b[i] < 1 || b[i] > units - 1))
      fail(source, "pipeline.partition.boundaries[" + std::to_string(i) + "]",
           "expected an integer 1.." + std::to_string(units - 1) + " (model " + e.model.name + " has " +
               std::to_string(units) + " units), found " + std::to_string(b[i]));
    if (i > 0 && b[i] <= b[i - 1])
      fail(source, "pipeline.partition.boundaries[" + std::to_string(i) + "]",
           "boundaries must be strictly increasing, found " + std::to_string(b[i]) + " after " +
               std::to_string(b[i - 1]));
  }
}

void checkSchedule(const Experiment& e, const std::string& source) {
  const auto& p = e.pipeline;
  const ScheduleDecl& d = scheduleDecl(p.schedule);
  const std::string schedule = d.name;
  if (d.weights == WeightFamily::TwoVersions) {
    if (p.update_interval < p.stages)
      fail(source, "pipeline.update_interval",
           schedule + " accumulates gradients over m >= P microbatches: expected an integer >= " +
               std::to_string(p.stages) + " (pipeline.stages), found " + std::to_string(p.update_interval) +
               "; set pipeline.update_interval to at least " + std::to_string(p.stages));
  } else if (!d.takesUpdateInterval && p.update_interval != 1) {
    fail(source, "pipeline.update_interval",
         "update_interval applies only to the " + scheduleNamesWhere([](const ScheduleDecl& x) { return x.takesUpdateInterval; }, "and") +
             " schedules (expected 1), found pipeline.schedule=" + schedule);
  }
  if (d.chunks != 0 && p.chunks != PipelineConfig{}.chunks)
    fail(source, "pipeline.chunks",
         "chunks applies only to the " + scheduleNamesWhere([](const ScheduleDecl& x) { return x.chunks == 0; }) + " schedule (expected " +
             std::to_string(PipelineConfig{}.chunks) + "), found pipeline.schedule=" + schedule +
             (d.chunks > 1 ? " (which holds " + std::to_string(d.chunks) + " chunks per rank by itself)" : std::string()));
  if (const int units = modelUnits(e.model.name); d.chunks != 1 && units > 0 && modelStages(e) > units)
    fail(source, d.chunks == 0 ? "pipeline.chunks" : "pipeline.stages",
         schedule + " cuts the model into chunks x stages = " + std::to_string(pipelineChunks(e)) + " x " + std::to_string(p.stages) +
             " = " + std::to_string(modelStages(e)) + " stages, but model " + e.model.name + " has " + std::to_string(units) +
             " partitionable units");
  // Megatron-LM's rule for the interleaved schedule: microbatches come in groups of P, one per rank.
  if (d.chunks == 0 && p.microbatches % p.stages != 0)
    fail(source, "pipeline.microbatches",
         schedule + " runs microbatches in groups of pipeline.stages (as Megatron-LM): expected a multiple of " +
             std::to_string(p.stages) + ", found " + std::to_string(p.microbatches));
  if (p.timing == PipelineTiming::Paper && !d.takesTiming)
    fail(source, "pipeline.timing",
         "the paper's timing (forwards 2(P-1-s) ahead) applies only to the " +
             scheduleNamesWhere([](const ScheduleDecl& x) { return x.takesTiming; }, "and") + " schedules, found pipeline.schedule=" +
             schedule);
  if (e.pipemare.anneal_steps > 0 && e.pipemare.anneal_epochs > 0)
    fail(source, "pipemare.anneal_epochs",
         "T1's anneal length K is set twice: give pipemare.anneal_steps or pipemare.anneal_epochs, not both; found "
         "anneal_steps=" + std::to_string(e.pipemare.anneal_steps) + ", anneal_epochs=" + number(e.pipemare.anneal_epochs));
  if (!d.takesPipeMare) {
    const std::string only = " applies only to the " + scheduleNamesWhere([](const ScheduleDecl& x) { return x.takesPipeMare; }) +
                             " schedule, found pipeline.schedule=" + schedule;
    if (e.pipemare.t1) fail(source, "pipemare.t1", "T1 (pipemare.t1)" + only);
    if (e.pipemare.t2) fail(source, "pipemare.t2", "T2 (pipemare.t2)" + only);
    if (e.pipemare.warmup_epochs > 0) fail(source, "pipemare.warmup_epochs", "warm-up (pipemare.warmup_epochs)" + only);
  }
}

void checkOptimizer(const Experiment& e, const std::string& source) {
  const auto& o = e.optimizer;
  const bool sgd = o.name == OptimizerType::Sgd;
  if (!sgd && o.momentum > 0)
    fail(source, "optimizer.momentum",
         "momentum applies only to sgd (adam and adamw use beta1), found optimizer.name=" + choiceName(o.name));
  if (o.nesterov && !sgd)
    fail(source, "optimizer.nesterov", "nesterov applies only to sgd, found optimizer.name=" + choiceName(o.name));
  if (o.nesterov && o.momentum <= 0)
    fail(source, "optimizer.nesterov",
         "nesterov requires optimizer.momentum > 0, found optimizer.momentum=" + number(o.momentum));
  if (o.schedule.name == LrScheduleType::LinearWarmup && o.schedule.warmup_steps < 1)
    fail(source, "optimizer.schedule.warmup_steps",
         "the linear-warmup schedule needs warmup_steps >= 1, found " + std::to_string(o.schedule.warmup_steps));
}

void checkTrainingLength(const Experiment& e, const std::string& source) {
  const auto& p = e.pipeline;
  // The fields are in range here (microbatches and stages at least 1, their product at most
  // 65536 x 2^31): the division needs no overflow check.
  if (e.training.steps == 0 && !(e.training.epochs > 0))
    fail(source, "training.epochs",
         "expected a number in (0, 1000] when training.steps is 0, found " + number(e.training.epochs));
  const int64_t perStep = static_cast<int64_t>(p.microbatches) * p.stages;
  if (e.training.steps > kMaxRunMicrobatches / perStep)
    fail(source, "training.steps",
         "a run has at most " + std::to_string(kMaxRunMicrobatches) +
             " microbatches over all its stages (training.steps x pipeline.microbatches x pipeline.stages: "
             "the engine lays out each stage's schedule for the whole run before the first step), found " +
             std::to_string(e.training.steps) + " x " + std::to_string(p.microbatches) + " x " + std::to_string(p.stages));
}

// NCCL on one node: every stage needs a GPU of its own. Returns "" when the placement is fine,
// else the problem; `stagesOnNode` stages share the node.
std::string ncclPlacementProblem(const std::vector<std::string>& devices, int stagesOnNode) {
  if (stagesOnNode <= 1) return "";
  if (devices.size() == 1)
    return "backend nccl gives each stage a GPU of its own, but one entry (\"" + devices[0] + "\") puts all " +
           std::to_string(stagesOnNode) + " stages of this node on it: list one device per stage";
  std::map<std::string, size_t> first;
  const size_t n = std::min(devices.size(), static_cast<size_t>(stagesOnNode));
  for (size_t i = 0; i < n; ++i) {
    auto [it, fresh] = first.emplace(devices[i], i);
    if (!fresh)
      return "backend nccl gives each stage a GPU of its own, but entries " + std::to_string(it->second) + " and " +
             std::to_string(i) + " are both \"" + devices[i] + "\" (stages of one node on the same GPU)";
  }
  return "";
}

void checkExecution(const Experiment& e, const std::string& source) {
  const auto& x = e.execution;
  if (x.mode == ExecutionMode::Real && x.backend == CommBackend::Local)
    fail(source, "execution.backend",
         "backend local (in-process channels) needs execution.mode=single, found execution.mode=real; use gloo or nccl");
  if (x.devices.size() != 1 && static_cast<int>(x.devices.size()) != e.pipeline.stages)
    fail(source, "execution.devices",
         "expected 1 entry or one per stage (pipeline.stages=" + std::to_string(e.pipeline.stages) + "), found " +
             std::to_string(x.devices.size()) + " entries");
  if (x.backend == CommBackend::Nccl)
    for (size_t i = 0; i < x.devices.size(); ++i)
      if (x.devices[i].compare(0, 5, "cuda:") != 0)
        fail(source, "execution.devices[" + std::to_string(i) + "]",
             "backend nccl (execution.backend) needs cuda devices, found " + inQuotes(x.devices[i]));
  // NCCL refuses two ranks on one GPU. A node's workers take the entries of their local ranks, so a
  // list of distinct devices, one per stage, serves one node and many alike.
  if (x.backend == CommBackend::Nccl && x.mode == ExecutionMode::Real)
    if (const std::string problem = ncclPlacementProblem(x.devices, e.pipeline.stages); !problem.empty())
      fail(source, "execution.devices", problem);
}

}  // namespace

void checkCrossFieldRules(const Experiment& e, const std::string& source) {
  checkModelData(e, source);
  checkPartition(e, source);
  checkSchedule(e, source);
  checkOptimizer(e, source);
  checkTrainingLength(e, source);
  checkExecution(e, source);
}

}  // namespace pm::config_detail
