// The curvature estimate on every model of the zoo catalogue (core/config/model_catalog.h), on up to
// four stages of its engine partition: one finite estimate per stage, and a finite gpipe edge from
// them. The models are the catalogue's, so a model added to
// the zoo is covered here without a change (a TorchScript file is not in the catalogue). Settings
// are the smallest that still run the code: one microbatch of two samples, three Hessian-vector
// products per block.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/config/model_catalog.h"
#include "core/planner/curvature.h"
#include "core/planner/stability.h"
#include "tests/support/script_models.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_experiment.h"

using namespace pm;

namespace {

// At most this many stages: every Hessian-vector product of a block runs the double backward down
// to the block, so the cost grows with the stage count (ResNet-50's 18 units as 18 stages take
// half a minute).
constexpr int kStages = 4;

std::vector<std::string> zooModelNames() {
  std::vector<std::string> names;
  for (const ModelInfo& m : modelCatalog()) names.push_back(m.name);
  return names;
}

// The tiny experiment of `model` with data for its input kind, written under `tmp` when it needs a
// file. Returns false (with a test failure) for an input kind this test has no data for.
bool tinyZooExperiment(const ModelInfo& m, const test::TempDir& tmp, Experiment& e) {
  e = test::tinyExperiment(m.name);
  e.data.batch_size = 2;
  e.data.synthetic_samples = 8;
  e.pipeline.microbatches = 1;
  e.pipeline.stages = std::min(m.units, kStages);
  e.pipeline.schedule = ScheduleKind::GPipe;
  if (m.input == "tokens") {
    // A byte-level text of a few hundred bytes: windows of 16 bytes.
    const std::string path = tmp.file("corpus.txt");
    std::string text;
    for (int i = 0; i < 60; ++i) text += "the pipe stage " + std::to_string(i) + ". ";
    if (!test::writeFile(path, text)) return false;
    e.data.dataset = DatasetKind::Text;
    e.data.path = path;
    e.data.context = 16;
    return true;
  }
  if (m.input == "image224") {
    // ResNet-50 ends in global average pooling: 3x64x64 images run every unit (layer4 at 2x2) at a
    // twelfth of the cost of its 3x224x224 synthetic input. Eight samples, ten classes.
    torch::manual_seed(5);
    const std::string path = tmp.file("images.pt");
    test::saveTensorFile(path, torch::randn({8, 3, 64, 64}), torch::arange(8, torch::kLong) % 10);
    e.data.dataset = DatasetKind::Tensors;
    e.data.path = path;
    return true;
  }
  if (m.input == "image28") return true;  // the synthetic 1x28x28 classification task
  ADD_FAILURE() << "model " << m.name << ": no test data for input kind \"" << m.input << "\"";
  return false;
}

class StabilityZoo : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(StabilityZoo, EstimatesEveryStageAndPredictsAFiniteGPipeEdge) {
  const ModelInfo* m = findModel(GetParam());
  ASSERT_NE(m, nullptr);
  test::TempDir tmp;
  Experiment e;
  ASSERT_TRUE(tinyZooExperiment(*m, tmp, e));
  ASSERT_NO_THROW(validateExperiment(e)) << m->name;
  CurvatureOptions o;
  o.microbatches = 1;
  o.power.iterations = 3;
  CurvatureReport r;
  ASSERT_NO_THROW(r = estimateStageCurvature(e, o)) << m->name;

  const int stages = e.pipeline.stages;
  ASSERT_EQ(r.partition.stages(), stages);
  ASSERT_EQ(r.partition.end.back(), m->units);  // the stages cover the model
  ASSERT_EQ(r.stageUnits.size(), static_cast<size_t>(stages));
  ASSERT_EQ(r.init.stages.size(), static_cast<size_t>(stages));
  EXPECT_FALSE(r.hasWarmup);
  StabilityInputs in;
  for (size_t s = 0; s < r.init.stages.size(); ++s) {
    const StageCurvature& c = r.init.stages[s];
    ASSERT_EQ(c.samples.size(), 1u) << "stage " << s;
    EXPECT_TRUE(std::isfinite(c.samples[0])) << m->name << " stage " << s << " (" << r.stageUnits[s] << "): " << c.samples[0];
    EXPECT_LE(c.min, c.mean) << "stage " << s;
    EXPECT_LE(c.mean, c.max) << "stage " << s;
    EXPECT_EQ(c.stddev, 0.0) << "stage " << s;  // one sample
    in.curvature.push_back(c.mean);
  }
  // Some stage is sharp: the loss is not flat in every block of a freshly built model.
  EXPECT_GT(*std::max_element(in.curvature.begin(), in.curvature.end()), 0.0) << m->name;

  in.spec.microbatches = 1;
  in.momentum = e.optimizer.momentum;
  const auto rows = predictStability(in);
  ASSERT_FALSE(rows.empty());
  ASSERT_EQ(rows.front().method.name(), "gpipe");
  EXPECT_TRUE(std::isfinite(rows.front().maxLr)) << m->name;
  EXPECT_GT(rows.front().maxLr, 0.0) << m->name;
  EXPECT_GE(rows.front().breakingStage, 0);
  EXPECT_LT(rows.front().breakingStage, stages);
}

INSTANTIATE_TEST_SUITE_P(EveryZooModel, StabilityZoo, ::testing::ValuesIn(zooModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(StabilityZoo, TheCatalogueHoldsTheZoo) {
  // The parameterized suite runs over this list: every model the zoo builds, the file model not.
  const auto names = zooModelNames();
  for (const char* m : {"mlp", "cnn", "resnet20", "charlm", "resnet50"})
    EXPECT_NE(std::find(names.begin(), names.end(), m), names.end()) << m;
  EXPECT_EQ(std::find(names.begin(), names.end(), kTorchScriptModel), names.end());
}
