// Which fields apply to an experiment (whyFieldDoesNotApply, what the Design tab hides) against
// the format: the fields the doc's meanings tie to a dataset, schedule or optimizer, the fields
// the validator refuses as "applies only to", and the presets. And experimentAsFarAsReadable, the
// experiment an editor derives those from while the design is invalid.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/util/errors.h"
#include "tests/support/test_support.h"

using namespace pm;

namespace {

Json::json_pointer pointerOf(const std::string& path) {
  std::string s = "/" + path;
  for (auto& c : s)
    if (c == '.') c = '/';
  return Json::json_pointer(s);
}

// The validator's problem with `j`; "" when it accepts it.
std::string problemOf(const Json& j) {
  try {
    experimentFromJson(j);
  } catch (const ConfigError& e) {
    return e.place() + ": " + e.problem();
  }
  return "";
}

Experiment withOptimizer(OptimizerType name) {
  Experiment e;
  e.optimizer.name = name;
  return e;
}

}  // namespace

TEST(FieldApplies, AdamsBetasOnlyWithAdamAndMomentumOnlyWithSgd) {
  const Experiment sgd = withOptimizer(OptimizerType::Sgd);
  for (const char* path : {"optimizer.beta1", "optimizer.beta2", "optimizer.eps"}) {
    SCOPED_TRACE(path);
    EXPECT_FALSE(fieldApplies(sgd, path));
    EXPECT_EQ(whyFieldDoesNotApply(sgd, path), "only with optimizer.name adam or adamw, found optimizer.name=sgd");
    EXPECT_TRUE(fieldApplies(withOptimizer(OptimizerType::Adam), path));
    EXPECT_TRUE(fieldApplies(withOptimizer(OptimizerType::AdamW), path));
  }
  EXPECT_TRUE(fieldApplies(sgd, "optimizer.momentum"));
  EXPECT_FALSE(fieldApplies(withOptimizer(OptimizerType::Adam), "optimizer.momentum"));
  // Nesterov needs momentum as well as sgd.
  EXPECT_NE(whyFieldDoesNotApply(sgd, "optimizer.nesterov").find("optimizer.momentum > 0"), std::string::npos);
  Experiment momentum = sgd;
  momentum.optimizer.momentum = 0.9;
  EXPECT_TRUE(fieldApplies(momentum, "optimizer.nesterov"));
  for (const char* path : {"optimizer.name", "optimizer.lr", "optimizer.weight_decay", "optimizer.schedule.name"}) {
    EXPECT_TRUE(fieldApplies(sgd, path)) << path;
    EXPECT_TRUE(fieldApplies(withOptimizer(OptimizerType::Adam), path)) << path;
  }
}

TEST(FieldApplies, DataFieldsFollowTheDataset) {
  Experiment e;  // fashion-mnist
  EXPECT_TRUE(fieldApplies(e, "data.eval_split"));
  EXPECT_TRUE(fieldApplies(e, "data.path"));
  for (const char* path : {"data.context", "data.synthetic_samples", "data.synthetic_task", "data.eval_path", "data.eval_fraction"})
    EXPECT_FALSE(fieldApplies(e, path)) << path;
  EXPECT_EQ(whyFieldDoesNotApply(e, "data.context"), "only with data.dataset=text, found data.dataset=fashion-mnist");
  e.data.dataset = DatasetKind::Text;
  EXPECT_TRUE(fieldApplies(e, "data.context"));
  EXPECT_TRUE(fieldApplies(e, "data.eval_fraction"));
  EXPECT_FALSE(fieldApplies(e, "data.eval_split"));
  e.data.dataset = DatasetKind::Synthetic;
  EXPECT_TRUE(fieldApplies(e, "data.synthetic_samples"));
  EXPECT_TRUE(fieldApplies(e, "data.synthetic_task"));
  EXPECT_FALSE(fieldApplies(e, "data.path"));  // generated: no file
  e.data.dataset = DatasetKind::Tensors;
  EXPECT_TRUE(fieldApplies(e, "data.eval_path"));
  EXPECT_TRUE(fieldApplies(e, "data.eval_fraction"));
  EXPECT_TRUE(fieldApplies(e, "model.task"));  // the labels decide, or model.task does
  e.data.eval_path = "held-out.pt";
  EXPECT_FALSE(fieldApplies(e, "data.eval_fraction"));
  for (const char* path : {"data.batch_size", "data.train_limit", "data.eval_limit", "data.shuffle"})
    EXPECT_TRUE(fieldApplies(e, path)) << path;
}

TEST(FieldApplies, ScheduleKnobsOnlyWithTheirSchedules) {
  Experiment e;  // gpipe
  for (const char* path : {"pipemare.t1", "pipemare.t2", "pipemare.warmup_epochs", "pipeline.update_interval", "pipeline.timing"})
    EXPECT_FALSE(fieldApplies(e, path)) << path;
  EXPECT_EQ(whyFieldDoesNotApply(e, "pipemare.t1"), "only with pipeline.schedule=pipemare, found pipeline.schedule=gpipe");
  e.pipeline.schedule = ScheduleKind::PipeMare;
  for (const char* path : {"pipemare.t1", "pipemare.t2", "pipemare.warmup_epochs", "pipeline.timing"})
    EXPECT_TRUE(fieldApplies(e, path)) << path;
  EXPECT_FALSE(fieldApplies(e, "pipemare.decay"));  // T2's
  EXPECT_FALSE(fieldApplies(e, "pipemare.anneal_steps"));  // T1's
  e.pipemare.t1 = e.pipemare.t2 = true;
  EXPECT_TRUE(fieldApplies(e, "pipemare.decay"));
  EXPECT_TRUE(fieldApplies(e, "pipemare.anneal_steps"));
  EXPECT_TRUE(fieldApplies(e, "pipemare.anneal_epochs"));
  e.pipeline.schedule = ScheduleKind::PipeDream2BW;
  EXPECT_TRUE(fieldApplies(e, "pipeline.update_interval"));
  EXPECT_FALSE(fieldApplies(e, "pipeline.timing"));
  EXPECT_FALSE(fieldApplies(e, "pipemare.t1"));

  Experiment lr;
  for (const char* path : {"optimizer.schedule.warmup_steps", "optimizer.schedule.step_size", "optimizer.schedule.gamma",
                           "optimizer.schedule.min_lr"})
    EXPECT_FALSE(fieldApplies(lr, path)) << path;  // constant
  lr.optimizer.schedule.name = LrScheduleType::Cosine;
  EXPECT_TRUE(fieldApplies(lr, "optimizer.schedule.warmup_steps"));
  EXPECT_TRUE(fieldApplies(lr, "optimizer.schedule.min_lr"));
  EXPECT_FALSE(fieldApplies(lr, "optimizer.schedule.gamma"));
  lr.optimizer.schedule.name = LrScheduleType::Step;
  EXPECT_TRUE(fieldApplies(lr, "optimizer.schedule.step_size"));
  EXPECT_TRUE(fieldApplies(lr, "optimizer.schedule.gamma"));
}

TEST(FieldApplies, ModelFileAndOtherFields) {
  Experiment e;
  EXPECT_FALSE(fieldApplies(e, "model.path"));
  EXPECT_FALSE(fieldApplies(e, "model.task"));  // fashion-mnist is classification
  e.model.name = kTorchScriptModel;
  EXPECT_TRUE(fieldApplies(e, "model.path"));
  EXPECT_FALSE(fieldApplies(e, "pipeline.partition.method"));  // one stage
  e.pipeline.stages = 2;
  EXPECT_TRUE(fieldApplies(e, "pipeline.partition.method"));
  EXPECT_FALSE(fieldApplies(e, "pipeline.partition.boundaries"));
  e.pipeline.partition.method = PartitionMethod::Explicit;
  EXPECT_TRUE(fieldApplies(e, "pipeline.partition.boundaries"));
  EXPECT_FALSE(fieldApplies(e, "execution.backend"));  // single mode
  e.execution.mode = ExecutionMode::Real;
  EXPECT_TRUE(fieldApplies(e, "execution.backend"));
  e.training.steps = 100;
  EXPECT_FALSE(fieldApplies(e, "training.epochs"));
  EXPECT_TRUE(fieldApplies(e, "no.such.field"));  // not the format's: nothing to say
}

// Every field the validator refuses, set away from its default, because it applies "only to"
// other designs is one whyFieldDoesNotApply says does not apply to the design with the default.
TEST(FieldApplies, AgreesWithTheValidatorsAppliesOnlyToRules) {
  struct Case {
    const char* path;
    Json value;
  };
  for (const Case& c : {Case{"optimizer.momentum", 0.5}, Case{"pipemare.t1", true}, Case{"pipemare.t2", true},
                        Case{"pipemare.warmup_epochs", 1}, Case{"data.eval_path", "x.pt"}, Case{"model.path", "m.pt"},
                        Case{"pipeline.update_interval", 2}, Case{"pipeline.timing", "paper"},
                        Case{"pipeline.partition.boundaries", Json::array({1})}}) {
    SCOPED_TRACE(c.path);
    Json j = experimentToJson(Experiment{});
    if (std::string(c.path) == "optimizer.momentum") j["optimizer"]["name"] = "adam";
    if (std::string(c.path) == "pipeline.partition.boundaries") j["pipeline"]["stages"] = 2;
    const Experiment before = experimentFromJson(j);  // valid: the field at its default
    j[pointerOf(c.path)] = c.value;
    const std::string problem = problemOf(j);
    ASSERT_NE(problem.find(" only to "), std::string::npos) << problem;  // "applies only to", "apply only to"
    EXPECT_EQ(problem.rfind(std::string("experiment: ") + c.path, 0), 0u) << problem;
    EXPECT_FALSE(fieldApplies(before, c.path)) << "the validator says: " << problem;
  }
}

// Every field a preset sets away from its default applies to the preset.
TEST(FieldApplies, PresetsSetOnlyFieldsThatApply) {
  const std::string dir = test::sourcePath("experiments");
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++presets;
    SCOPED_TRACE(entry.path().filename().string());
    const Experiment e = loadExperimentFile(entry.path().string());
    const Json written = experimentToJson(e), defaults = experimentToJson(Experiment{});
    for (const auto& f : experimentFields(e)) {
      if (written.at(pointerOf(f.path)) == defaults.at(pointerOf(f.path))) continue;
      EXPECT_TRUE(fieldApplies(e, f.path)) << f.path << ": " << whyFieldDoesNotApply(e, f.path);
    }
  }
  EXPECT_GE(presets, 3);
}

TEST(FieldApplies, ReadableAsFarAsEachFieldGoes) {
  Json j = experimentToJson(Experiment{});
  j["optimizer"]["name"] = "adam";
  j["optimizer"]["lr"] = "fast";           // not a number: the default
  j["optimizer"]["momentum"] = 0.9;        // breaks a cross-field rule with adam: taken
  j["pipeline"]["stages"] = 99;            // out of mlp's range: the default
  j["pipeline"]["schedule"] = "PipeMare";  // not a choice: the default
  j["data"]["dataset"] = "text";
  j["data"]["batch_size"] = 8.0;           // a whole number written with a fraction
  j["bogus"] = 1;
  ASSERT_FALSE(problemOf(j).empty());
  const Experiment e = experimentAsFarAsReadable(j);
  EXPECT_EQ(e.optimizer.name, OptimizerType::Adam);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.01);
  EXPECT_DOUBLE_EQ(e.optimizer.momentum, 0.9);
  EXPECT_EQ(e.pipeline.stages, 1);
  EXPECT_EQ(e.pipeline.schedule, ScheduleKind::GPipe);
  EXPECT_EQ(e.data.dataset, DatasetKind::Text);
  EXPECT_EQ(e.data.batch_size, 8);
  EXPECT_EQ(experimentToJson(experimentAsFarAsReadable(Json(5))), experimentToJson(Experiment{}));
  Json sectionNotAnObject = Json::object();
  sectionNotAnObject["pipeline"] = "gpipe";
  EXPECT_EQ(experimentToJson(experimentAsFarAsReadable(sectionNotAnObject)), experimentToJson(Experiment{}));
}
