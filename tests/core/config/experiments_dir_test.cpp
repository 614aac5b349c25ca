// Every preset in experiments/ must load and validate, and survive a round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/util/errors.h"
#include "tests/support/test_support.h"

using namespace pm;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> presetFiles() {
  std::vector<fs::path> files;
  const fs::path dir = pm::test::sourcePath("experiments");
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST(ExperimentsDir, EveryPresetLoadsAndValidates) {
  const auto files = presetFiles();
  ASSERT_FALSE(files.empty()) << "no *.json files in " << pm::test::sourcePath("experiments");
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    try {
      Experiment e = loadExperimentFile(f.string());
      const Json j = experimentToJson(e);
      EXPECT_EQ(experimentToJson(experimentFromJson(j, f.string())), j);
    } catch (const ConfigError& ex) {
      ADD_FAILURE() << ex.what();
    }
  }
}

TEST(ExperimentsDir, QuickstartIsTheSmallDefault) {
  const std::string path = pm::test::experimentPath("quickstart.json");
  Experiment e = loadExperimentFile(path);
  EXPECT_EQ(e.name, "quickstart");
  EXPECT_EQ(e.model.name, "mlp");
  EXPECT_EQ(e.pipeline.stages, 1);
  EXPECT_EQ(e.execution.mode, ExecutionMode::Single);
  EXPECT_EQ(e.data.train_limit, 0);  // the whole training split, one epoch: ~10 s on 2 cores
  EXPECT_EQ(e.training.steps, 0);
  EXPECT_DOUBLE_EQ(e.training.epochs, 1);
}

// The complete example in docs/experiment-format.md is valid and is exactly the normalised form.
TEST(ExperimentsDir, DocumentedExampleIsCompleteAndValid) {
  const std::string path = pm::test::sourcePath("docs/experiment-format.md");
  const std::string text = pm::test::readFile(path);
  ASSERT_FALSE(text.empty()) << "cannot read " << path;
  const std::string open = "```json\n";
  size_t begin = text.find(open);
  ASSERT_NE(begin, std::string::npos) << "no json block in " << path;
  begin += open.size();
  size_t end = text.find("```", begin);
  ASSERT_NE(end, std::string::npos);
  const Json j = Json::parse(text.substr(begin, end - begin));
  Experiment e;
  ASSERT_NO_THROW(e = experimentFromJson(j, path));
  EXPECT_EQ(experimentToJson(e), j);
}
