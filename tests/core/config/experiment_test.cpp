#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

#include "core/config/experiment.h"
#include "core/config/model_catalog.h"
#include "core/util/errors.h"

using namespace pm;

namespace {

// Runs `fn`, which must throw ConfigError with exactly `place` and a problem containing `part`.
template <class F>
::testing::AssertionResult throwsConfigError(F&& fn, const std::string& place, const std::string& part) {
  try {
    fn();
  } catch (const ConfigError& e) {
    if (e.place() != place)
      return ::testing::AssertionFailure() << "place \"" << e.place() << "\", wanted \"" << place
                                           << "\" (problem: " << e.problem() << ")";
    if (e.problem().find(part) == std::string::npos)
      return ::testing::AssertionFailure() << "problem \"" << e.problem() << "\" lacks \"" << part << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a different exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// experimentFromJson(j) must fail at field `field` (place "experiment: <field>").
::testing::AssertionResult rejects(const Json& j, const std::string& field, const std::string& part) {
  return throwsConfigError([&] { experimentFromJson(j); }, "experiment: " + field, part);
}

// A valid JSON experiment to start from: cnn on fashion-mnist, 2 stages.
Json cnn() {
  return Json::parse(R"({"model": {"name": "cnn"}, "data": {"batch_size": 32},
                         "pipeline": {"stages": 2, "microbatches": 4}})");
}

// An experiment with every field away from its default (and valid).
Experiment everythingSet() {
  Experiment e;
  e.name = "all fields";
  e.tags = {"a", "b"};
  e.notes = "notes\nwith a newline";
  e.model.name = kTorchScriptModel;
  e.model.path = "/tmp/model.pt";
  e.model.task = ModelTask::Regression;
  e.data.dataset = DatasetKind::Tensors;
  e.data.path = "/tmp/data";
  e.data.eval_path = "/tmp/eval";
  e.data.batch_size = 96;
  e.data.eval_split = EvalSplit::Train;
  e.data.eval_fraction = 0.25;
  e.data.train_limit = 1000;
  e.data.eval_limit = 200;
  e.data.context = 64;
  e.data.synthetic_samples = 4096;
  e.data.synthetic_task = SyntheticTask::Regression;
  e.data.shuffle = false;
  e.pipeline.stages = 3;
  e.pipeline.microbatches = 6;
  e.pipeline.partition.method = PartitionMethod::Explicit;
  e.pipeline.partition.boundaries = {4, 8};
  e.pipeline.schedule = ScheduleKind::PipeMare;
  e.pipeline.recompute = false;
  e.pipeline.timing = PipelineTiming::Paper;
  e.pipemare.t1 = true;
  e.pipemare.anneal_steps = 500;
  e.pipemare.t2 = true;
  e.pipemare.decay = 0.3;
  e.pipemare.warmup_epochs = 0.5;
  e.pipemare.warmup_schedule = WarmupSchedule::OneFOneB;
  e.pipemare.momentum_mode = MomentumMode::DelayScaled;
  e.optimizer.name = OptimizerType::Sgd;
  e.optimizer.lr = 0.2;
  e.optimizer.momentum = 0.8;
  e.optimizer.nesterov = true;
  e.optimizer.weight_decay = 5e-4;
  e.optimizer.beta1 = 0.8;
  e.optimizer.beta2 = 0.99;
  e.optimizer.eps = 1e-6;
  e.optimizer.schedule.name = LrScheduleType::Cosine;
  e.optimizer.schedule.warmup_steps = 10;
  e.optimizer.schedule.step_size = 50;
  e.optimizer.schedule.gamma = 0.5;
  e.optimizer.schedule.min_lr = 0.001;
  e.training.epochs = 2.5;
  e.training.steps = 300;
  e.training.eval_interval = 25;
  e.training.log_interval = 3;
  e.training.trace_steps = -1;
  e.training.checkpoint_every = 25;
  e.training.seed = 1234567890123ULL;
  e.training.divergence_guard.enabled = false;
  e.training.divergence_guard.max_loss = 50;
  e.execution.mode = ExecutionMode::Real;
  e.execution.backend = CommBackend::Nccl;
  e.execution.threads_per_stage = 4;
  e.execution.timeout_s = 15;
  e.execution.devices = {"cuda:0", "cuda:1", "cuda:2"};
  return e;
}

// Collects the dotted paths of all leaves.
void leaves(const Json& j, const std::string& prefix, std::set<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string p = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && it.key() != "options")
      leaves(*it, p, out);
    else
      out.insert(p);
  }
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("pipemare_config_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".json"))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

// --- Defaults and round trip ---------------------------------------------------------------------

TEST(Experiment, EmptyObjectGivesTheDefaults) {
  Experiment e = experimentFromJson(Json::object());
  Experiment d;
  EXPECT_EQ(e.name, "experiment");
  EXPECT_EQ(e.model.name, "mlp");
  EXPECT_EQ(e.data.dataset, DatasetKind::FashionMnist);
  EXPECT_EQ(e.data.batch_size, 64);
  EXPECT_EQ(e.pipeline.stages, 1);
  EXPECT_EQ(e.pipeline.microbatches, 1);
  EXPECT_EQ(e.pipeline.schedule, ScheduleKind::GPipe);
  EXPECT_EQ(e.pipeline.partition.method, PartitionMethod::Parameters);
  EXPECT_DOUBLE_EQ(e.pipemare.decay, 0.1);
  EXPECT_EQ(e.optimizer.name, OptimizerType::Sgd);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.01);
  EXPECT_EQ(e.training.log_interval, 10);
  EXPECT_EQ(e.training.seed, 1u);
  EXPECT_TRUE(e.training.divergence_guard.enabled);
  EXPECT_EQ(e.execution.mode, ExecutionMode::Single);
  EXPECT_EQ(e.execution.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(experimentToJson(e), experimentToJson(d));
  EXPECT_NO_THROW(validateExperiment(d));
}

TEST(Experiment, ToJsonHasEveryField) {
  Json j = experimentToJson(Experiment{});
  std::set<std::string> got;
  leaves(j, "", got);
  const std::set<std::string> want = {
      "name", "tags", "notes", "model.name", "model.path", "model.task", "model.options", "data.dataset", "data.path",
      "data.eval_path", "data.batch_size",
      "data.eval_split", "data.eval_fraction", "data.train_limit", "data.eval_limit", "data.context",
      "data.synthetic_samples", "data.synthetic_task", "data.shuffle", "pipeline.stages", "pipeline.microbatches",
      "pipeline.partition.method", "pipeline.partition.boundaries", "pipeline.schedule", "pipeline.recompute",
      "pipeline.update_interval", "pipeline.timing", "pipeline.chunks", "pipemare.t1", "pipemare.anneal_steps", "pipemare.anneal_epochs",
      "pipemare.t2", "pipemare.decay", "pipemare.warmup_epochs", "pipemare.warmup_schedule", "pipemare.momentum_mode", "optimizer.name",
      "optimizer.lr", "optimizer.momentum", "optimizer.nesterov", "optimizer.weight_decay", "optimizer.beta1",
      "optimizer.beta2", "optimizer.eps", "optimizer.schedule.name", "optimizer.schedule.warmup_steps",
      "optimizer.schedule.step_size", "optimizer.schedule.gamma", "optimizer.schedule.min_lr", "training.epochs",
      "training.steps", "training.eval_interval", "training.log_interval", "training.trace_steps",
      "training.checkpoint_every", "training.seed",
      "training.divergence_guard.enabled", "training.divergence_guard.max_loss", "execution.mode",
      "execution.backend", "execution.threads_per_stage", "execution.timeout_s", "execution.devices"};
  EXPECT_EQ(got, want);
}

TEST(Experiment, FullRoundTrip) {
  const Experiment e = everythingSet();
  ASSERT_NO_THROW(validateExperiment(e));
  const Json j = experimentToJson(e);
  // Through the struct and through text.
  EXPECT_EQ(experimentToJson(experimentFromJson(j)), j);
  EXPECT_EQ(experimentToJson(experimentFromJson(Json::parse(j.dump(2)))), j);
  Experiment back = experimentFromJson(j);
  EXPECT_EQ(back.training.seed, 1234567890123ULL);
  EXPECT_EQ(back.pipeline.partition.boundaries, (std::vector<int>{4, 8}));
  EXPECT_EQ(back.execution.devices.size(), 3u);
  EXPECT_EQ(back.notes, "notes\nwith a newline");
  EXPECT_DOUBLE_EQ(back.optimizer.weight_decay, 5e-4);
  // Every field differs from the default, so the round trip really carried each one.
  std::set<std::string> paths;
  leaves(j, "", paths);
  const Json d = experimentToJson(Experiment{});
  for (const auto& p : paths) {
    // model.options is reserved; update_interval pipedream-only; chunks interleaved-only (round-trips
    // in ExperimentCrossField.ChunksPerRank); nesterov needs sgd; T1's K is anneal_steps here
    // (anneal_epochs, its alternative, round-trips in ExperimentCrossField.PipeMareTechniquesNeedThePipeMareSchedule).
    if (p == "model.options" || p == "pipeline.recompute" || p == "pipeline.update_interval" || p == "pipeline.chunks" ||
        p == "optimizer.name" || p == "pipemare.anneal_epochs")
      continue;
    std::string s = "/" + p;
    for (auto& c : s)
      if (c == '.') c = '/';
    EXPECT_NE(j.at(Json::json_pointer(s)), d.at(Json::json_pointer(s))) << p << " is still at its default";
  }
}

TEST(Experiment, IntegersMayBeWrittenAsWholeFloats) {
  Json j = cnn();
  j["pipeline"]["stages"] = 2.0;
  j["data"]["batch_size"] = 32.0;
  Experiment e = experimentFromJson(j);
  EXPECT_EQ(e.pipeline.stages, 2);
  EXPECT_EQ(e.data.batch_size, 32);
  j["pipeline"]["stages"] = 2.5;
  EXPECT_TRUE(rejects(j, "pipeline.stages", "expected an integer 1..6 (model cnn has 6 partitionable units), found 2.5"));
}

// --- Type errors -----------------------------------------------------------------------------------

TEST(ExperimentErrors, StringWhereIntegerExpected) {
  Json j = {{"pipeline", {{"stages", "four"}}}};
  EXPECT_TRUE(throwsConfigError([&] { experimentFromJson(j, "exp.json"); }, "exp.json: pipeline.stages",
                                "expected an integer 1.."));
  EXPECT_TRUE(rejects(j, "pipeline.stages", "found \"four\""));
}

TEST(ExperimentErrors, WrongTypes) {
  EXPECT_TRUE(rejects({{"optimizer", {{"lr", "fast"}}}}, "optimizer.lr", "expected a number in (0, 10], found \"fast\""));
  EXPECT_TRUE(rejects({{"data", {{"shuffle", 1}}}}, "data.shuffle", "expected true or false, found 1"));
  EXPECT_TRUE(rejects({{"pipeline", 3}}, "pipeline", "expected an object"));
  EXPECT_TRUE(rejects({{"pipeline", {{"partition", "explicit"}}}}, "pipeline.partition", "expected an object"));
  EXPECT_TRUE(rejects({{"name", 5}}, "name", "found 5"));
  EXPECT_TRUE(rejects({{"tags", "fast"}}, "tags", "expected an array of strings"));
  EXPECT_TRUE(rejects({{"tags", {"ok", 7}}}, "tags[1]", "found 7"));
  EXPECT_TRUE(rejects({{"execution", {{"devices", "cpu"}}}}, "execution.devices", "expected an array"));
  EXPECT_TRUE(rejects({{"model", {{"options", 1}}}}, "model.options", "expected an object"));
  EXPECT_TRUE(rejects({{"pipeline", {{"stages", nullptr}}}}, "pipeline.stages", "found null"));
  EXPECT_TRUE(rejects({{"pipeline", {{"stages", true}}}}, "pipeline.stages", "found true"));
  EXPECT_TRUE(rejects({{"training", {{"seed", -1}}}}, "training.seed", "expected an integer >= 0, found -1"));
  EXPECT_TRUE(rejects({{"pipeline", {{"partition", {{"boundaries", {1.5}}}}}}}, "pipeline.partition.boundaries[0]",
                      "found 1.5"));
}

TEST(ExperimentErrors, TopLevelMustBeAnObject) {
  EXPECT_TRUE(throwsConfigError([] { experimentFromJson(Json::array({1, 2}), "x.json"); }, "x.json",
                                "expected a JSON object at the top level, found [1,2]"));
}

// --- Unknown keys and enumerations ---------------------------------------------------------------

TEST(ExperimentErrors, UnknownKeyWithDidYouMean) {
  EXPECT_TRUE(rejects({{"pipeline", {{"microbatch", 4}}}}, "pipeline.microbatch",
                      "unknown key \"microbatch\"; did you mean \"microbatches\"?"));
  EXPECT_TRUE(rejects({{"pipline", {{"stages", 1}}}}, "pipline", "unknown key \"pipline\"; did you mean \"pipeline\"?"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"warmup_step", 1}}}}}}, "optimizer.schedule.warmup_step",
                      "did you mean \"warmup_steps\"?"));
  // No close match: the message lists the keys the section takes.
  EXPECT_TRUE(rejects({{"execution", {{"zzzzzzzz", 1}}}}, "execution.zzzzzzzz", "execution has: mode, backend"));
  EXPECT_TRUE(rejects({{"model", {{"options", {{"dropout", 0.1}}}}}}, "model.options.dropout",
                      "model mlp takes no options"));
}

TEST(ExperimentErrors, EnumerationsListTheAllowedValues) {
  EXPECT_TRUE(rejects({{"pipeline", {{"schedule", "gpip"}}}}, "pipeline.schedule",
                      "expected one of gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, pipedream, pipedream-2bw, pipemare, found \"gpip\"; "
                      "did you mean \"gpipe\"?"));
  EXPECT_TRUE(rejects({{"model", {{"name", "resnet"}}}}, "model.name", "expected one of mlp, cnn, resnet20"));
  EXPECT_TRUE(rejects({{"optimizer", {{"name", "adamm"}}}}, "optimizer.name", "did you mean \"adam\"?"));
  EXPECT_TRUE(rejects({{"data", {{"dataset", "cifar10"}}}}, "data.dataset",
                      "expected one of fashion-mnist, text, synthetic, tensors, found \"cifar10\""));
  EXPECT_TRUE(rejects({{"execution", {{"backend", "mpi"}}}}, "execution.backend", "expected one of gloo, nccl, local"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"name", "cos"}}}}}}, "optimizer.schedule.name", "one of constant"));
  EXPECT_TRUE(rejects({{"pipeline", {{"partition", {{"method", "even"}}}}}}, "pipeline.partition.method",
                      "expected one of parameters, time, explicit"));
  EXPECT_TRUE(rejects({{"pipemare", {{"momentum_mode", "scaled"}}}}, "pipemare.momentum_mode", "one of same, delay-scaled"));
}

// --- Ranges ------------------------------------------------------------------------------------------

// Step counts are bounded by what the engine can lay out before the first step (10^7 microbatches
// in all), so that an over-long run is refused by validation instead of running out of memory.
TEST(ExperimentErrors, StepCountsAreBoundedByWhatTheEngineCanRun) {
  EXPECT_TRUE(rejects({{"training", {{"steps", 9223372036854775807LL}}}}, "training.steps",
                      "expected an integer 0..10000000 (0 = derived from epochs), found 9223372036854775807"));
  EXPECT_TRUE(rejects({{"training", {{"steps", 10000001}}}}, "training.steps", "found 10000001"));
  EXPECT_NO_THROW(experimentFromJson({{"training", {{"steps", 10000000}}}}));
  // The bound is on microbatches over all stages: steps x pipeline.microbatches x pipeline.stages.
  Json j = cnn();  // 4 microbatches, 2 stages
  j["training"] = {{"steps", 1250001}};
  EXPECT_TRUE(rejects(j, "training.steps",
                      "a run has at most 10000000 microbatches over all its stages (training.steps x pipeline.microbatches x "
                      "pipeline.stages"));
  EXPECT_TRUE(rejects(j, "training.steps", "found 1250001 x 4 x 2"));
  j["training"]["steps"] = 1250000;
  EXPECT_NO_THROW(experimentFromJson(j));
  for (const char* field : {"eval_interval", "log_interval", "trace_steps", "checkpoint_every"}) {
    SCOPED_TRACE(field);
    EXPECT_TRUE(rejects({{"training", {{field, 9223372036854775807LL}}}}, std::string("training.") + field, "..10000000"));
    EXPECT_TRUE(rejects({{"training", {{field, 10000001}}}}, std::string("training.") + field, "found 10000001"));
    EXPECT_NO_THROW(experimentFromJson({{"training", {{field, 10000000}}}}));
  }
  EXPECT_TRUE(rejects({{"pipemare", {{"anneal_steps", 10000001}}}}, "pipemare.anneal_steps", "0..10000000"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"warmup_steps", 10000001}}}}}}, "optimizer.schedule.warmup_steps",
                      "0..10000000"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"step_size", 10000001}}}}}}, "optimizer.schedule.step_size", "1..10000000"));
  // An experiment built in code is held to the same bounds.
  Experiment e;
  e.training.steps = 9223372036854775807LL;
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e); }, "experiment: training.steps", "expected an integer 0..10000000"));
}

// Names and tags are measured in characters (UTF-8 code points), not bytes, and an error shows a
// long value shortened without cutting a character.
TEST(ExperimentErrors, LengthsCountCharactersNotBytes) {
  std::string tag;
  for (int i = 0; i < 32; ++i) tag += "\xC3\xBC\xF0\x9F\x9A\x80";  // 64 characters, 192 bytes
  EXPECT_NO_THROW(experimentFromJson({{"tags", {tag}}}));
  const std::string longer = tag + std::string(20, 'x');  // 84 characters: refused, and shown shortened
  try {
    experimentFromJson({{"tags", {longer}}});
    ADD_FAILURE() << "an 84-character tag was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.place(), "experiment: tags[0]");
    const std::string p = e.problem();
    const size_t found = p.find("found \"");
    ASSERT_NE(found, std::string::npos) << p;
    EXPECT_NE(p.find("...", found), std::string::npos) << p;  // shortened
    // Every multi-byte character of the shortened value is whole.
    for (size_t i = found; i < p.size();) {
      const unsigned char c = static_cast<unsigned char>(p[i]);
      const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      ASSERT_NE(c & 0xC0, 0x80) << "a continuation byte starts a character at " << i << ": " << p;
      ASSERT_LE(i + len, p.size()) << "a character cut at the end: " << p;
      for (size_t k = 1; k < len; ++k) ASSERT_EQ(static_cast<unsigned char>(p[i + k]) & 0xC0, 0x80) << p;
      i += len;
    }
  }
}

TEST(ExperimentErrors, Ranges) {
  EXPECT_TRUE(rejects({{"name", ""}}, "name", "non-empty string of at most 200 characters"));
  EXPECT_TRUE(rejects({{"name", std::string(201, 'x')}}, "name", "at most 200 characters"));
  EXPECT_TRUE(rejects({{"tags", {""}}}, "tags[0]", "non-empty string"));
  EXPECT_TRUE(rejects({{"data", {{"batch_size", 0}}}}, "data.batch_size", "expected an integer 1..65536, found 0"));
  EXPECT_TRUE(rejects({{"data", {{"batch_size", 70000}}}}, "data.batch_size", "found 70000"));
  EXPECT_TRUE(rejects({{"data", {{"eval_fraction", 0.6}}}}, "data.eval_fraction", "expected a number in (0, 0.5]"));
  EXPECT_TRUE(rejects({{"data", {{"eval_fraction", 0}}}}, "data.eval_fraction", "found 0"));
  EXPECT_TRUE(rejects({{"data", {{"train_limit", -1}}}}, "data.train_limit", "expected an integer >= 0"));
  EXPECT_TRUE(rejects({{"data", {{"eval_limit", -5}}}}, "data.eval_limit", "found -5"));
  EXPECT_TRUE(rejects({{"data", {{"context", 4}}}}, "data.context", "expected an integer 8..4096"));
  EXPECT_TRUE(rejects({{"data", {{"context", 5000}}}}, "data.context", "found 5000"));
  EXPECT_TRUE(rejects({{"data", {{"synthetic_samples", 0}}}}, "data.synthetic_samples", "expected an integer 1.."));
  EXPECT_TRUE(rejects({{"pipeline", {{"stages", 0}}}}, "pipeline.stages", "expected an integer 1..3"));
  EXPECT_TRUE(rejects({{"pipeline", {{"update_interval", 0}}}}, "pipeline.update_interval", "found 0"));
  EXPECT_TRUE(rejects({{"pipemare", {{"decay", 1}}}}, "pipemare.decay", "expected a number in (0, 1), found 1"));
  EXPECT_TRUE(rejects({{"pipemare", {{"decay", 0}}}}, "pipemare.decay", "found 0"));
  EXPECT_TRUE(rejects({{"pipemare", {{"warmup_epochs", -1}}}}, "pipemare.warmup_epochs", "found -1"));
  EXPECT_TRUE(rejects({{"pipemare", {{"anneal_steps", -1}}}}, "pipemare.anneal_steps", "found -1"));
  EXPECT_TRUE(rejects({{"pipemare", {{"anneal_epochs", -1}}}}, "pipemare.anneal_epochs", "found -1"));
  EXPECT_TRUE(rejects({{"optimizer", {{"lr", 0}}}}, "optimizer.lr", "expected a number in (0, 10], found 0"));
  EXPECT_TRUE(rejects({{"optimizer", {{"lr", 11}}}}, "optimizer.lr", "found 11"));
  EXPECT_TRUE(rejects({{"optimizer", {{"momentum", 1}}}}, "optimizer.momentum", "expected a number in [0, 1), found 1"));
  EXPECT_TRUE(rejects({{"optimizer", {{"momentum", -0.1}}}}, "optimizer.momentum", "found -0.1"));
  EXPECT_TRUE(rejects({{"optimizer", {{"weight_decay", -1}}}}, "optimizer.weight_decay", "found -1"));
  EXPECT_TRUE(rejects({{"optimizer", {{"beta1", 1}}}}, "optimizer.beta1", "[0, 1)"));
  EXPECT_TRUE(rejects({{"optimizer", {{"beta2", 1.5}}}}, "optimizer.beta2", "[0, 1)"));
  EXPECT_TRUE(rejects({{"optimizer", {{"eps", 0}}}}, "optimizer.eps", "found 0"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"step_size", 0}}}}}}, "optimizer.schedule.step_size", "found 0"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"gamma", 0}}}}}}, "optimizer.schedule.gamma", "(0, 1]"));
  EXPECT_TRUE(rejects({{"optimizer", {{"lr", 0.05}, {"schedule", {{"min_lr", 0.1}}}}}}, "optimizer.schedule.min_lr",
                      "expected a number in [0, 0.05] (at most optimizer.lr), found 0.1"));
  EXPECT_TRUE(rejects({{"training", {{"epochs", 1001}}}}, "training.epochs", "found 1001"));
  EXPECT_TRUE(rejects({{"training", {{"steps", -1}}}}, "training.steps", "found -1"));
  EXPECT_TRUE(rejects({{"training", {{"log_interval", 0}}}}, "training.log_interval", "expected an integer 1..10000000"));
  EXPECT_TRUE(rejects({{"training", {{"eval_interval", -1}}}}, "training.eval_interval", "found -1"));
  EXPECT_TRUE(rejects({{"training", {{"divergence_guard", {{"max_loss", 0}}}}}}, "training.divergence_guard.max_loss",
                      "expected a number > 0"));
  EXPECT_TRUE(rejects({{"execution", {{"threads_per_stage", 0}}}}, "execution.threads_per_stage", "1..256"));
  EXPECT_TRUE(rejects({{"execution", {{"threads_per_stage", 257}}}}, "execution.threads_per_stage", "found 257"));
  EXPECT_TRUE(rejects({{"execution", {{"devices", {"gpu"}}}}}, "execution.devices[0]",
                      "expected \"cpu\" or \"cuda:K\""));
  EXPECT_TRUE(rejects({{"execution", {{"devices", {"cuda"}}}}}, "execution.devices[0]", "found \"cuda\""));
  EXPECT_TRUE(rejects({{"execution", {{"devices", {"cuda:x"}}}}}, "execution.devices[0]", "found \"cuda:x\""));
  EXPECT_NO_THROW(experimentFromJson({{"execution", {{"devices", {"cuda:12"}}}}}));
}

TEST(ExperimentErrors, EpochsMustBePositiveOnlyWithoutSteps) {
  EXPECT_TRUE(rejects({{"training", {{"epochs", 0}}}}, "training.epochs", "when training.steps is 0"));
  EXPECT_NO_THROW(experimentFromJson({{"training", {{"epochs", 0}, {"steps", 10}}}}));
}

// --- Cross-field rules --------------------------------------------------------------------------

TEST(ExperimentCrossField, MicrobatchesAtMostBatchSize) {
  Json j = cnn();
  j["pipeline"]["microbatches"] = 64;
  EXPECT_TRUE(rejects(j, "pipeline.microbatches", "expected an integer 1..32 (at most data.batch_size=32), found 64"));
  j["pipeline"]["microbatches"] = 32;
  EXPECT_NO_THROW(experimentFromJson(j));
}

TEST(ExperimentCrossField, StagesAtMostTheModelsUnits) {
  Json j = {{"model", {{"name", "resnet20"}}}, {"pipeline", {{"stages", 12}}}};
  EXPECT_TRUE(rejects(j, "pipeline.stages", "expected an integer 1..11 (model resnet20 has 11 partitionable units)"));
  j["pipeline"]["stages"] = 11;
  EXPECT_NO_THROW(experimentFromJson(j));
  EXPECT_TRUE(rejects({{"pipeline", {{"stages", 4}}}}, "pipeline.stages", "model mlp has 3 partitionable units"));
}

TEST(ExperimentCrossField, ExplicitPartition) {
  Json j = cnn();
  j["pipeline"]["stages"] = 3;
  j["pipeline"]["partition"] = {{"method", "explicit"}, {"boundaries", {2, 4}}};
  Experiment e = experimentFromJson(j);
  EXPECT_EQ(e.pipeline.partition.boundaries, (std::vector<int>{2, 4}));

  j["pipeline"]["partition"]["boundaries"] = {2};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries", "needs pipeline.stages-1 = 2 boundaries"));
  j["pipeline"]["partition"]["boundaries"] = {4, 2};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries[1]", "strictly increasing, found 2 after 4"));
  j["pipeline"]["partition"]["boundaries"] = {2, 2};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries[1]", "strictly increasing"));
  j["pipeline"]["partition"]["boundaries"] = {0, 2};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries[0]", "expected an integer 1..5"));
  j["pipeline"]["partition"]["boundaries"] = {2, 6};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries[1]", "model cnn has 6 units"));

  j["pipeline"]["partition"] = {{"method", "parameters"}, {"boundaries", {2, 4}}};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries",
                      "boundaries apply only to pipeline.partition.method=explicit, found pipeline.partition.method=parameters"));
}

TEST(ExperimentCrossField, PipeMareTechniquesNeedThePipeMareSchedule) {
  Json j = cnn();
  j["pipemare"] = {{"t1", true}};
  EXPECT_TRUE(rejects(j, "pipemare.t1",
                      "T1 (pipemare.t1) applies only to the pipemare schedule, found pipeline.schedule=gpipe"));
  j["pipemare"] = {{"t2", true}};
  EXPECT_TRUE(rejects(j, "pipemare.t2", "T2 (pipemare.t2) applies only to the pipemare schedule"));
  j["pipemare"] = {{"warmup_epochs", 0.5}};
  j["pipeline"]["schedule"] = "1f1b";
  EXPECT_TRUE(rejects(j, "pipemare.warmup_epochs", "applies only to the pipemare schedule, found pipeline.schedule=1f1b"));
  j["pipeline"]["schedule"] = "pipemare";
  j["pipemare"] = {{"t1", true}, {"t2", true}, {"warmup_epochs", 0.5}};
  EXPECT_NO_THROW(experimentFromJson(j));
  j["pipemare"] = {{"t1", true}, {"anneal_epochs", 2.5}};
  EXPECT_EQ(experimentFromJson(experimentToJson(experimentFromJson(j))).pipemare.anneal_epochs, 2.5);
  j["pipemare"] = {{"t1", true}, {"anneal_steps", 100}, {"anneal_epochs", 3}};
  EXPECT_TRUE(rejects(j, "pipemare.anneal_epochs", "give pipemare.anneal_steps or pipemare.anneal_epochs, not both; "
                                                   "found anneal_steps=100, anneal_epochs=3"));
}

TEST(ExperimentCrossField, UpdateInterval) {
  Json j = cnn();
  j["pipeline"]["stages"] = 4;
  j["pipeline"]["schedule"] = "pipedream-2bw";
  EXPECT_TRUE(rejects(j, "pipeline.update_interval",
                      "m >= P microbatches: expected an integer >= 4 (pipeline.stages), found 1; set "
                      "pipeline.update_interval to at least 4"));
  j["pipeline"]["update_interval"] = 4;
  EXPECT_NO_THROW(experimentFromJson(j));
  j["pipeline"]["schedule"] = "pipedream";
  j["pipeline"]["update_interval"] = 3;
  EXPECT_NO_THROW(experimentFromJson(j));
  j["pipeline"]["schedule"] = "gpipe";
  EXPECT_TRUE(rejects(j, "pipeline.update_interval",
                      "applies only to the pipedream and pipedream-2bw schedules (expected 1), found pipeline.schedule=gpipe"));
}

// Several chunks per rank: interleaved-1f1b takes pipeline.chunks (v >= 2) and Megatron's rule for
// N (a multiple of the ranks); zb-v holds 2 by itself; chunks x stages must fit the model's units;
// the other schedules keep the default; NCCL is refused (its messages carry no tag).
TEST(ExperimentCrossField, ChunksPerRank) {
  Json j = cnn();  // 6 units
  j["pipeline"]["stages"] = 2;
  j["pipeline"]["microbatches"] = 4;
  j["pipeline"]["schedule"] = "interleaved-1f1b";
  j["pipeline"]["chunks"] = 3;
  Experiment e = experimentFromJson(j);
  EXPECT_EQ(pipelineChunks(e), 3);
  EXPECT_EQ(modelStages(e), 6);
  EXPECT_EQ(experimentFromJson(experimentToJson(e)).pipeline.chunks, 3);
  j["pipeline"]["chunks"] = 4;
  EXPECT_TRUE(rejects(j, "pipeline.chunks", "cuts the model into chunks x stages = 4 x 2 = 8 stages, but model cnn has 6"));
  j["pipeline"]["chunks"] = 1;
  EXPECT_TRUE(rejects(j, "pipeline.chunks", "expected an integer 2..64"));
  j["pipeline"]["chunks"] = 2;
  j["pipeline"]["microbatches"] = 3;
  EXPECT_TRUE(rejects(j, "pipeline.microbatches", "in groups of pipeline.stages (as Megatron-LM): expected a multiple of 2, found 3"));
  j["pipeline"]["microbatches"] = 4;
  j["pipeline"]["schedule"] = "zb-v";
  j["pipeline"]["microbatches"] = 3;  // any N
  EXPECT_EQ(modelStages(experimentFromJson(j)), 4);
  j["pipeline"]["chunks"] = 3;
  EXPECT_TRUE(rejects(j, "pipeline.chunks", "applies only to the interleaved-1f1b schedule (expected 2), found pipeline.schedule=zb-v "
                                            "(which holds 2 chunks per rank by itself)"));
  j["pipeline"]["schedule"] = "1f1b";
  EXPECT_TRUE(rejects(j, "pipeline.chunks", "applies only to the interleaved-1f1b schedule (expected 2), found pipeline.schedule=1f1b"));
  j["pipeline"]["chunks"] = 2;
  EXPECT_EQ(modelStages(experimentFromJson(j)), 2);
  j["pipeline"]["schedule"] = "zb-v";
  j["pipeline"]["stages"] = 4;
  EXPECT_TRUE(rejects(j, "pipeline.stages", "zb-v cuts the model into chunks x stages = 2 x 4 = 8 stages"));
  j["pipeline"]["stages"] = 3;
  j["pipeline"]["partition"] = {{"method", "explicit"}, {"boundaries", {1, 2}}};
  EXPECT_TRUE(rejects(j, "pipeline.partition.boundaries", "needs pipeline.chunks x pipeline.stages - 1 = 5 boundaries"));
  j["pipeline"]["partition"]["boundaries"] = {1, 2, 3, 4, 5};
  EXPECT_NO_THROW(experimentFromJson(j));
  // NCCL carries each link's messages on a channel of their own (gloo_comm.cpp), so chunks may use it.
  j["execution"] = {{"mode", "real"}, {"backend", "nccl"}, {"devices", {"cuda:0", "cuda:1", "cuda:2"}}};
  EXPECT_EQ(experimentFromJson(j).execution.backend, CommBackend::Nccl);
}

TEST(ExperimentCrossField, PaperTimingOnlyForPipeDreamAndPipeMare) {
  Json j = cnn();
  j["pipeline"]["timing"] = "paper";
  for (const char* s : {"pipedream", "pipemare"}) {
    j["pipeline"]["schedule"] = s;
    EXPECT_EQ(experimentFromJson(j).pipeline.timing, PipelineTiming::Paper) << s;
  }
  for (const char* s : {"gpipe", "1f1b"}) {
    j["pipeline"]["schedule"] = s;
    EXPECT_TRUE(rejects(j, "pipeline.timing", std::string("applies only to the pipedream and pipemare schedules, found pipeline.schedule=") + s));
  }
  j["pipeline"]["schedule"] = "pipemare";
  j["pipeline"]["timing"] = "fast";
  EXPECT_TRUE(rejects(j, "pipeline.timing", "expected one of 1f1b, paper, found \"fast\""));
}

TEST(ExperimentCrossField, RecomputeForEverySchedule) {
  Json j = cnn();
  j["pipeline"]["recompute"] = true;
  for (const char* s : {"gpipe", "1f1b", "pipedream", "pipemare"}) {
    j["pipeline"]["schedule"] = s;
    EXPECT_NO_THROW(experimentFromJson(j)) << s;
  }
  j["pipeline"]["recompute"] = "yes";
  EXPECT_TRUE(rejects(j, "pipeline.recompute", "expected true or false"));
}

TEST(ExperimentCrossField, Optimizer) {
  EXPECT_TRUE(rejects({{"optimizer", {{"nesterov", true}}}}, "optimizer.nesterov",
                      "nesterov requires optimizer.momentum > 0, found optimizer.momentum=0"));
  EXPECT_NO_THROW(experimentFromJson({{"optimizer", {{"nesterov", true}, {"momentum", 0.9}}}}));
  EXPECT_TRUE(rejects({{"optimizer", {{"name", "adam"}, {"momentum", 0.9}}}}, "optimizer.momentum",
                      "momentum applies only to sgd (adam and adamw use beta1), found optimizer.name=adam"));
  EXPECT_TRUE(rejects({{"optimizer", {{"name", "adamw"}, {"nesterov", true}}}}, "optimizer.nesterov",
                      "found optimizer.name=adamw"));
  EXPECT_TRUE(rejects({{"optimizer", {{"schedule", {{"name", "linear-warmup"}}}}}}, "optimizer.schedule.warmup_steps",
                      "linear-warmup schedule needs warmup_steps >= 1, found 0"));
  EXPECT_NO_THROW(experimentFromJson({{"optimizer", {{"schedule", {{"name", "cosine"}}}}}}));
  EXPECT_NO_THROW(experimentFromJson({{"optimizer", {{"schedule", {{"name", "inverse-sqrt"}}}}}}));
}

TEST(ExperimentCrossField, ModelAndDataset) {
  EXPECT_TRUE(rejects({{"model", {{"name", "charlm"}}}}, "data.dataset",
                      "model charlm (model.name) needs data.dataset text or tensors, found data.dataset=fashion-mnist"));
  EXPECT_TRUE(rejects({{"data", {{"dataset", "text"}}}}, "data.dataset",
                      "model mlp (model.name) needs data.dataset fashion-mnist, synthetic or tensors, found data.dataset=text"));
  EXPECT_TRUE(rejects({{"model", {{"name", "resnet50"}}}}, "data.dataset",
                      "model resnet50 (model.name) needs data.dataset synthetic or tensors, found data.dataset=fashion-mnist"));
  for (const char* m : {"mlp", "cnn", "resnet20"})
    for (const char* d : {"fashion-mnist", "synthetic"})
      EXPECT_NO_THROW(experimentFromJson({{"model", {{"name", m}}}, {"data", {{"dataset", d}}}})) << m << " " << d;
  EXPECT_NO_THROW(experimentFromJson({{"model", {{"name", "charlm"}}}, {"data", {{"dataset", "text"}}}}));
  EXPECT_NO_THROW(experimentFromJson({{"model", {{"name", "resnet50"}}}, {"data", {{"dataset", "synthetic"}}}}));
}

TEST(ExperimentCrossField, ModelFilesAndTensorData) {
  // A TorchScript model needs its file; the zoo's models take none.
  EXPECT_TRUE(rejects({{"model", {{"name", "torchscript"}}}}, "model.path", "model torchscript reads its network from a file"));
  EXPECT_TRUE(rejects({{"model", {{"name", "cnn"}, {"path", "m.pt"}}}}, "model.path",
                      "model.path applies only to model.name=torchscript (the zoo builds model cnn), found \"m.pt\""));
  // Tensor data needs its file; eval_path is tensor data's.
  EXPECT_TRUE(rejects({{"data", {{"dataset", "tensors"}}}}, "data.path", "data.dataset=tensors reads the training tensors"));
  EXPECT_TRUE(rejects({{"data", {{"eval_path", "e.pt"}}}}, "data.eval_path",
                      "data.eval_path applies only to data.dataset=tensors, found data.dataset=fashion-mnist"));
  // The task follows the dataset where the dataset says it.
  EXPECT_TRUE(rejects({{"model", {{"task", "regression"}}}}, "model.task",
                      "data.dataset=fashion-mnist trains with the classification loss, found model.task=regression"));
  EXPECT_TRUE(rejects({{"model", {{"name", "torchscript"}, {"path", "m.pt"}, {"task", "classification"}}},
                       {"data", {{"dataset", "text"}}}},
                      "model.task", "data.dataset=text trains with the language-model loss"));
  // Any stage count and boundaries for a model file: its units are counted when it is read.
  const Experiment e = experimentFromJson({{"model", {{"name", "torchscript"}, {"path", "/m.pt"}, {"task", "regression"}}},
                                           {"data", {{"dataset", "tensors"}, {"path", "/t.pt"}, {"eval_path", "/e.pt"}}},
                                           {"pipeline", {{"stages", 3}, {"partition", {{"method", "explicit"}, {"boundaries", {40, 90}}}}}}});
  EXPECT_EQ(e.pipeline.partition.boundaries, (std::vector<int>{40, 90}));
  EXPECT_EQ(e.model.task, ModelTask::Regression);
  EXPECT_NO_THROW(experimentFromJson({{"model", {{"name", "mlp"}}}, {"data", {{"dataset", "tensors"}, {"path", "/t.pt"}}}}));
}

TEST(ExperimentCrossField, CharLmContext) {
  Json j = {{"model", {{"name", "charlm"}}}, {"data", {{"dataset", "text"}, {"context", 256}}}};
  EXPECT_TRUE(rejects(j, "data.context", "expected an integer 8..128 (model charlm reads at most 128 bytes), found 256"));
  j["data"]["context"] = 128;
  EXPECT_NO_THROW(experimentFromJson(j));
}

TEST(ExperimentCrossField, Execution) {
  Json j = cnn();
  j["execution"] = {{"mode", "real"}, {"backend", "local"}};
  EXPECT_TRUE(rejects(j, "execution.backend", "needs execution.mode=single, found execution.mode=real"));
  j["execution"] = {{"mode", "single"}, {"backend", "local"}};
  EXPECT_NO_THROW(experimentFromJson(j));
  j["execution"] = {{"mode", "real"}, {"backend", "nccl"}};
  EXPECT_TRUE(rejects(j, "execution.devices[0]", "backend nccl (execution.backend) needs cuda devices, found \"cpu\""));
  j["execution"]["devices"] = {"cuda:0", "cpu"};
  EXPECT_TRUE(rejects(j, "execution.devices[1]", "needs cuda devices"));
  j["execution"]["devices"] = {"cuda:0", "cuda:1"};
  EXPECT_NO_THROW(experimentFromJson(j));
  j["execution"]["devices"] = {"cuda:0", "cuda:1", "cuda:2"};
  EXPECT_TRUE(rejects(j, "execution.devices",
                      "expected 1 entry or one per stage (pipeline.stages=2), found 3 entries"));
  j["execution"]["devices"] = Json::array();
  EXPECT_TRUE(rejects(j, "execution.devices", "found 0 entries"));
  j["execution"] = {{"mode", "real"}, {"backend", "gloo"}, {"devices", {"cpu", "cuda:0"}}};
  EXPECT_NO_THROW(experimentFromJson(j));
}

// --- Validation of experiments built in code ---------------------------------------------------------

TEST(ExperimentValidate, RangesAndRulesApplyToStructs) {
  Experiment e;
  e.pipeline.stages = 0;
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e, "gui"); }, "gui: pipeline.stages", "found 0"));
  e = Experiment{};
  e.pipeline.schedule = static_cast<ScheduleKind>(99);  // only a cast makes a value outside the table
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e); }, "experiment: pipeline.schedule",
                                "expected one of gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, pipedream, pipedream-2bw, pipemare, found 99"));
  e = Experiment{};
  e.training.seed = ~0ULL;
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e); }, "experiment: training.seed", "expected an integer >= 0"));
  e = Experiment{};
  e.model.options = {{"width", 3}};
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e); }, "experiment: model.options.width", "takes no options"));
  e = Experiment{};
  e.optimizer.lr = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e); }, "experiment: optimizer.lr", "found nan"));
  e = Experiment{};
  e.pipemare.t1 = true;
  EXPECT_TRUE(throwsConfigError([&] { validateExperiment(e); }, "experiment: pipemare.t1", "pipeline.schedule=gpipe"));
}

// --- --set overrides ------------------------------------------------------------------------------

TEST(ExperimentOverrides, ValidOverrides) {
  Json j = applyOverrides(cnn(), {"pipeline.stages=3", "pipeline.schedule=pipemare", "pipemare.t1=true",
                                  "optimizer.lr=1e-3", "tags=[\"a\",\"b\"]", "name=my run", "notes=\"4\"",
                                  "execution.devices=[\"cpu\"]", "optimizer.schedule.name=cosine"});
  Experiment e = experimentFromJson(j);
  EXPECT_EQ(e.pipeline.stages, 3);
  EXPECT_EQ(e.pipeline.schedule, ScheduleKind::PipeMare);
  EXPECT_TRUE(e.pipemare.t1);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 1e-3);
  EXPECT_EQ(e.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(e.name, "my run");
  EXPECT_EQ(e.notes, "4");  // JSON string
  EXPECT_EQ(e.optimizer.schedule.name, LrScheduleType::Cosine);
  // Intermediate sections are created; the last override of a key wins.
  Json k = applyOverrides(Json::object(), {"training.divergence_guard.max_loss=100", "data.batch_size=8",
                                           "data.batch_size=16"});
  EXPECT_EQ(k["training"]["divergence_guard"]["max_loss"], 100);
  EXPECT_EQ(experimentFromJson(k).data.batch_size, 16);
  // A default-constructed (null) JSON is treated as an empty experiment.
  EXPECT_EQ(applyOverrides(Json(), {"name=x"})["name"], "x");
}

TEST(ExperimentOverrides, InvalidValueNamesTheOverride) {
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipeline.stages=four"}); }, "--set pipeline.stages=four",
                                "expected an integer 1..6 (model cnn has 6 partitionable units), found \"four\""));
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipeline.stages=99"}); }, "--set pipeline.stages=99",
                                "found 99"));
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipeline.schedule=gpip"}); },
                                "--set pipeline.schedule=gpip", "did you mean \"gpipe\"?"));
  // A cross-field rule broken by the override is reported as the override's.
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipemare.t1=true"}); }, "--set pipemare.t1=true",
                                "applies only to the pipemare schedule"));
}

TEST(ExperimentOverrides, UnknownKeyHasDidYouMean) {
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipeline.microbatch=4"}); },
                                "--set pipeline.microbatch=4", "unknown key \"microbatch\"; did you mean \"microbatches\"?"));
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipline.stages=2"}); }, "--set pipline.stages=2",
                                "pipline: unknown key \"pipline\"; did you mean \"pipeline\"?"));
}

TEST(ExperimentOverrides, MalformedOverrides) {
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipeline.stages"}); }, "--set pipeline.stages",
                                "expected key=value"));
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"=4"}); }, "--set =4", "expected key=value"));
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"pipeline..stages=4"}); }, "--set pipeline..stages=4",
                                "expected key=value"));
  Json named = cnn();
  named["name"] = "n";
  EXPECT_TRUE(throwsConfigError([&] { applyOverrides(named, {"name.first=x"}); }, "--set name.first=x",
                                "name is not a section: it holds \"n\""));
  // Without a name in the base, the section is created and then fails as a value of the wrong type.
  EXPECT_TRUE(throwsConfigError([] { applyOverrides(cnn(), {"name.first=x"}); }, "--set name.first=x",
                                "name: expected a non-empty string"));
}

TEST(ExperimentOverrides, ProblemsOfTheBaseAreLeftToTheCallersValidation) {
  Json base = cnn();
  base["pipeline"]["stages"] = "four";
  Json j = applyOverrides(base, {"optimizer.lr=0.1"});
  EXPECT_TRUE(throwsConfigError([&] { experimentFromJson(j, "exp.json (with --set)"); },
                                "exp.json (with --set): pipeline.stages", "found \"four\""));
}

// --- Files --------------------------------------------------------------------------------------------

// A problem of the file itself keeps its line when --set options are given; one an override
// causes still names the override.
TEST(ExperimentFile, ProblemsOfTheFileKeepTheirLineWithOverrides) {
  TempFile f("{\n  \"name\": \"x\",\n  \"data\": {\n    \"batch_size\": \"big\"\n  }\n}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path(), {"training.steps=5"}); }, f.path() + ":4 (with --set): data.batch_size",
                                "found \"big\""));
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path(), {"data.batch_size=0"}); }, "--set data.batch_size=0", "found 0"));
}

TEST(ExperimentFile, LoadsAndValidates) {
  TempFile f(R"({"name": "from file", "model": {"name": "cnn"}, "pipeline": {"stages": 2}})");
  Experiment e = loadExperimentFile(f.path());
  EXPECT_EQ(e.name, "from file");
  EXPECT_EQ(e.pipeline.stages, 2);
  TempFile bad(R"({"pipeline": {"stages": 9}})");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(bad.path()); }, bad.path() + ":1: pipeline.stages", "found 9"));
}

// A field's problem in a file names the line the field is written on.
TEST(ExperimentFile, FieldErrorNamesTheLine) {
  TempFile f(
      "{\n"
      "  \"name\": \"a \\\"quoted\\\" name, with: {brackets} [and] commas\",\n"
      "  \"model\": {\"name\": \"cnn\"},\n"
      "  \"pipeline\": {\n"
      "    \"microbatches\": 2,\n"
      "    \"stages\": \"four\"\n"
      "  }\n"
      "}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path()); }, f.path() + ":6: pipeline.stages", "found \"four\""));
  TempFile unknown("{\n  \"pipeline\": {\n    \"stagez\": 2\n  }\n}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(unknown.path()); }, unknown.path() + ":3: pipeline.stagez",
                                "unknown"));
  TempFile device("{\n  \"execution\": {\"devices\": [\n    \"cpu\",\n    \"tpu\"\n  ]}\n}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(device.path()); }, device.path() + ":4: execution.devices[1]", "tpu"));
}

TEST(ExperimentFile, FieldLinesFollowNestingArraysAndStrings) {
  const auto lines = fieldLines("{\"a\": 1,\n \"b\": {\"c\": [10,\n 20, {\"d\": \"x,\\\"}\"}],\n \"e\": true}, \"f\":\nnull}");
  EXPECT_EQ(lines.at("a"), 1);
  EXPECT_EQ(lines.at("b"), 2);
  EXPECT_EQ(lines.at("b.c"), 2);
  EXPECT_EQ(lines.at("b.c[0]"), 2);
  EXPECT_EQ(lines.at("b.c[1]"), 3);
  EXPECT_EQ(lines.at("b.c[2]"), 3);
  EXPECT_EQ(lines.at("b.c[2].d"), 3);
  EXPECT_EQ(lines.at("b.e"), 4);
  EXPECT_EQ(lines.at("f"), 4);
  EXPECT_EQ(lines.count("x"), 0u);
}

TEST(ExperimentFile, SyntaxErrorNamesLineAndColumn) {
  TempFile f("{\n  \"name\": \"x\",\n  \"pipeline\": ,\n}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path()); }, f.path() + ":3:15", "invalid JSON: syntax error"));
  TempFile truncated("{\n  \"name\": \"x\"\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(truncated.path()); }, truncated.path() + ":3:1",
                                "unexpected end of input"));
  TempFile empty("");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(empty.path()); }, empty.path() + ":1:1", "invalid JSON"));
}

// Found by tests/fuzz/fuzz_experiment: a number beyond double's range escaped as a raw
// nlohmann exception; it is a ConfigError naming line and column.
TEST(ExperimentFile, NumberOutOfRangeNamesLineAndColumn) {
  TempFile f("{\n  \"optimizer\": {\"lr\": 7E7777}\n}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path()); }, f.path() + ":2:23", "number out of range: 7E7777"));
}

TEST(ExperimentOverrides, NumberOutOfRangeIsAConfigError) {
  Json base = Json::object();
  EXPECT_TRUE(throwsConfigError([&] { applyOverrides(base, {"optimizer.lr=1e999"}); }, "--set optimizer.lr=1e999",
                                "number out of range: 1e999"));
}

TEST(ExperimentFile, DuplicateKey) {
  TempFile f(R"({"optimizer": {"lr": 0.1, "momentum": 0.9, "lr": 0.2}})");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path()); }, f.path() + ":1: optimizer.lr",
                                "duplicate key \"lr\""));
  // The line of the second occurrence, not of a same-named key elsewhere.
  TempFile lines("{\n  \"name\": \"a\",\n  \"model\": {\n    \"name\": \"mlp\",\n    \"name\": \"cnn\"\n  }\n}\n");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(lines.path()); }, lines.path() + ":5: model.name",
                                "duplicate key \"name\""));
  TempFile ok(R"({"tags": ["a", "b"], "execution": {"devices": ["cpu"]}, "notes": "x"})");
  EXPECT_NO_THROW(loadExperimentFile(ok.path()));
}

TEST(ExperimentFile, TopLevelMustBeAnObject) {
  TempFile f("[1, 2]");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(f.path()); }, f.path(), "expected a JSON object"));
}

TEST(ExperimentFile, MissingFile) {
  const std::string path = "/nonexistent/pipemare/no-such.json";
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(path); }, path, "cannot open: No such file or directory"));
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentJson(path); }, path, "cannot open"));
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(dir); }, dir, "cannot open: it is a directory"));
}

TEST(ExperimentFile, RawJsonForOverrides) {
  TempFile f(R"({"model": {"name": "cnn"}, "pipeline": {"stages": 2}})");
  Json raw = loadExperimentJson(f.path());
  Experiment e = experimentFromJson(applyOverrides(raw, {"pipeline.stages=3"}), f.path());
  EXPECT_EQ(e.pipeline.stages, 3);
}

// --- Names ------------------------------------------------------------------------------------------------

TEST(ExperimentNames, SchedulesAndModels) {
  EXPECT_EQ(scheduleNames(), (std::vector<std::string>{"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "pipedream", "pipedream-2bw", "pipemare"}));
  EXPECT_EQ(modelNames(), (std::vector<std::string>{"mlp", "cnn", "resnet20", "charlm", "resnet50", "torchscript"}));
  EXPECT_EQ(modelNames().size(), modelCatalog().size() + 1);  // the zoo, and a model read from a file
  EXPECT_TRUE(isAsynchronous(ScheduleKind::PipeDream));
  EXPECT_TRUE(isAsynchronous(ScheduleKind::PipeDream2BW));
  EXPECT_TRUE(isAsynchronous(ScheduleKind::PipeMare));
  EXPECT_FALSE(isAsynchronous(ScheduleKind::GPipe));
  EXPECT_FALSE(isAsynchronous(ScheduleKind::OneFOneB));
  EXPECT_FALSE(choiceFromName<ScheduleKind>("bogus").has_value());
}

// JSON nested deeper than any experiment needs is a usage error naming the place, also at
// 100,000 levels (printing the value in the error message recurses); --set values likewise.
TEST(ExperimentErrors, DeepNestingIsRefused) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    parseExperimentText("{\"notes\": " + deep + "}", "deep.json");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("deep.json: notes[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nested more than 64 levels deep"), std::string::npos) << e.what();
  }
  EXPECT_THROW(applyOverrides(Json::object(), {"notes=" + deep}), ConfigError);
  // Shallow nesting is fine.
  EXPECT_NO_THROW(parseExperimentText("{\"tags\": [[[[1]]]]}", "ok.json"));
}

// NCCL refuses two ranks on one GPU: a real-mode nccl design that puts two stages of one node on
// the same device is refused at validation, naming execution.devices and the device; distinct
// devices, one per stage, pass (as on a node with a GPU each).
TEST(ExperimentFile, NcclRefusesTwoStagesOnOneGpu) {
  TempFile shared(
      R"({"pipeline": {"stages": 2}, "execution": {"mode": "real", "backend": "nccl", "devices": ["cuda:0"]}})");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(shared.path()); }, shared.path() + ":1: execution.devices",
                                "puts all 2 stages of this node on it"));
  TempFile twice(R"({"pipeline": {"stages": 3},
    "execution": {"mode": "real", "backend": "nccl", "devices": ["cuda:0", "cuda:1", "cuda:0"]}})");
  EXPECT_TRUE(throwsConfigError([&] { loadExperimentFile(twice.path()); }, twice.path() + ":2: execution.devices",
                                "entries 0 and 2 are both \"cuda:0\""));
  TempFile distinct(
      R"({"pipeline": {"stages": 2}, "execution": {"mode": "real", "backend": "nccl", "devices": ["cuda:0", "cuda:1"]}})");
  EXPECT_EQ(loadExperimentFile(distinct.path()).execution.devices.size(), 2u);
  // Gloo may share a device between stages (it stages through host memory).
  TempFile gloo(R"({"pipeline": {"stages": 2}, "execution": {"mode": "real", "backend": "gloo", "devices": ["cuda:0"]}})");
  EXPECT_EQ(loadExperimentFile(gloo.path()).execution.devices.size(), 1u);
}
