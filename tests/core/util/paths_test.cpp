#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/util/errors.h"
#include "core/util/paths.h"
#include "tests/support/test_support.h"

namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed afterwards.
class EnsureParentDirectory : public ::testing::Test {
 protected:
  pm::test::TempDir tmp_;
  const fs::path dir_ = tmp_.dir;
};

}  // namespace

// The file's own folder is made (one level, private); a folder above it that is missing is named
// and nothing is made.
TEST_F(EnsureParentDirectory, MakesOnlyTheLastFolderOfThePath) {
  EXPECT_NO_THROW(pm::ensureParentDirectory((dir_ / "x.db").string()));  // the folder is there
  EXPECT_NO_THROW(pm::ensureParentDirectory((dir_ / "new" / "x.db").string()));
  ASSERT_TRUE(fs::is_directory(dir_ / "new"));
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  const std::string deep = (dir_ / "missing" / "deeper" / "x.db").string();
  try {
    pm::ensureParentDirectory(deep, "--db " + deep);
    ADD_FAILURE() << "made " << deep;
  } catch (const pm::StoreError& e) {
    EXPECT_EQ(e.exitCode(), 2);
    EXPECT_EQ(e.place(), "--db " + deep);
    EXPECT_EQ(e.problem().rfind("the folder " + (dir_ / "missing").string() + " does not exist", 0), 0u) << e.problem();
  }
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
  // Without a place, the error is at the file's path.
  try {
    pm::ensureParentDirectory(deep);
    ADD_FAILURE() << "made " << deep;
  } catch (const pm::StoreError& e) {
    EXPECT_EQ(e.place(), deep);
  }
  // A file where a folder should be.
  std::ofstream((dir_ / "plain").string()) << "x";
  try {
    pm::ensureParentDirectory((dir_ / "plain" / "x.db").string());
    ADD_FAILURE() << "a file taken for a folder";
  } catch (const pm::StoreError& e) {
    EXPECT_EQ(e.exitCode(), 2);
    EXPECT_NE(e.problem().find("is not a folder"), std::string::npos) << e.problem();
  }
  EXPECT_NO_THROW(pm::ensureParentDirectory("relative-file-in-the-working-directory.db"));  // no folder to make
}

// The workbench's data folder ($XDG_DATA_HOME/pipemare) is made with every missing level, as the
// XDG base directory specification asks (a fresh account has no ~/.local/share).
TEST_F(EnsureParentDirectory, MakesTheDataFolderWithItsParents) {
  const char* old = std::getenv("XDG_DATA_HOME");
  const std::string saved = old ? old : "";
  const fs::path xdg = dir_ / "home" / ".local" / "share";
  ::setenv("XDG_DATA_HOME", xdg.c_str(), 1);
  EXPECT_NO_THROW(pm::ensureParentDirectory(pm::dataHomeDir() + "/runs.db"));
  EXPECT_TRUE(fs::is_directory(xdg / "pipemare"));
  if (old)
    ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_DATA_HOME");
}

// A program run from the build tree (this test too) finds the presets of the source checkout it was
// built from, and a preset may be named without its folder and ".json" (`pipemare run quickstart`).
// The installed programs' side is checked by scripts/test.sh on a DESTDIR installation.
TEST(DataDir, BuildTreeProgramsUseTheCheckoutsPresets) {
  EXPECT_TRUE(fs::equivalent(pm::presetDirectory(), pm::test::sourcePath("experiments"))) << pm::presetDirectory();
  const std::string preset = pm::test::experimentPath("tiny-synthetic.json");
  EXPECT_TRUE(fs::equivalent(pm::resolveExperimentArgument("tiny-synthetic"), preset));
  EXPECT_TRUE(fs::equivalent(pm::resolveExperimentArgument("tiny-synthetic.json"), preset));
  EXPECT_TRUE(fs::equivalent(pm::resolveExperimentArgument("study/resnet20-t1"),
                             pm::test::experimentPath("study/resnet20-t1.json")));
  // Anything else is left as given, for the loader to report.
  EXPECT_EQ(pm::resolveExperimentArgument("no-such-preset"), "no-such-preset");
  EXPECT_EQ(pm::resolveExperimentArgument("./tiny-synthetic"), "./tiny-synthetic");
  EXPECT_EQ(pm::resolveExperimentArgument(""), "");
  // A file that exists is taken as it is, even where a preset has its name.
  pm::test::TempDir tmp;
  const std::string own = (tmp.dir / "tiny-synthetic.json").string();
  std::ofstream(own) << "{}";
  EXPECT_EQ(pm::resolveExperimentArgument(own), own);
}
