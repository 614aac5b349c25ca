#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/engine/checkpoint_layout.h"

namespace fs = std::filesystem;
using pm::CheckpointLayout;

namespace {

// A root with checkpoints of 2 stages at `steps`, each complete.
CheckpointLayout makeCheckpoints(const fs::path& root, std::initializer_list<int64_t> steps) {
  fs::remove_all(root);
  CheckpointLayout c(root.string());
  for (int64_t step : steps) {
    fs::create_directories(c.stepDir(step));
    for (int s = 0; s < 2; ++s) std::ofstream(c.stageFile(step, s)) << "stage bytes";
    c.writePartition(step, {3});
  }
  return c;
}

}  // namespace

// A checkpoint torn by a kill or a full disk (an empty partition.json beside complete stage files,
// or an empty stage file) is not complete: the newest one that loads is, so a resume falls back to
// it instead of failing for ever.
TEST(CheckpointLayout, ATornCheckpointFallsBackToTheNewestThatLoads) {
  const fs::path root = fs::temp_directory_path() / ("pipemare-ckpt-" + std::to_string(::getpid()));
  CheckpointLayout c = makeCheckpoints(root, {7, 14, 21});
  EXPECT_EQ(c.latestComplete(2), 21);
  std::ofstream(c.partitionFile(21), std::ios::trunc).close();  // 0 bytes
  EXPECT_EQ(c.latestComplete(2), 14);
  std::ofstream(c.stageFile(14, 1), std::ios::trunc).close();
  EXPECT_EQ(c.latestComplete(2), 7);
  EXPECT_EQ(c.readPartition(7), (std::vector<int>{3}));
  EXPECT_EQ(c.completeSteps(2).size(), 1u);
  fs::remove_all(root);
}

// A step prunes the older ones only once it is complete (every stage's file and the partition):
// while a stage has yet to write it, the older complete step stays for a resume; a newer step
// being written is never touched.
TEST(CheckpointLayout, PruneBeforeWaitsUntilTheStepIsComplete) {
  const fs::path root = fs::temp_directory_path() / ("pipemare-ckpt-prune-" + std::to_string(::getpid()));
  CheckpointLayout c = makeCheckpoints(root, {7, 14});
  fs::create_directories(c.stepDir(21));
  std::ofstream(c.stageFile(21, 0)) << "stage bytes";
  c.writePartition(21, {3});
  EXPECT_EQ(c.pruneBefore(21, 2), 0) << "stage 1 has not written step 21";
  EXPECT_EQ(c.completeSteps(2).size(), 2u);
  fs::create_directories(c.stepDir(28));
  std::ofstream(c.stageFile(28, 0)) << "stage bytes";  // the next step, begun
  std::ofstream(c.stageFile(21, 1)) << "stage bytes";
  EXPECT_EQ(c.pruneBefore(21, 2), 2);
  EXPECT_FALSE(fs::exists(c.stepDir(7)));
  EXPECT_FALSE(fs::exists(c.stepDir(14)));
  EXPECT_TRUE(fs::exists(c.stageFile(28, 0))) << "a newer step was pruned";
  EXPECT_EQ(c.latestComplete(2), 21);
  EXPECT_EQ(c.pruneBefore(21, 2), 0);
  fs::remove_all(root);
}

// The partition file is written whole (a temporary renamed into place) and private to the user
// whatever the umask.
TEST(CheckpointLayout, PartitionFileIsWrittenWholeAndPrivate) {
  const fs::path root = fs::temp_directory_path() / ("pipemare-ckpt-mode-" + std::to_string(::getpid()));
  const mode_t old = ::umask(0);
  CheckpointLayout c = makeCheckpoints(root, {5});
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(c.partitionFile(5).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(c.stepDir(5))) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 3u) << "a temporary file was left beside the checkpoint";
  fs::remove_all(root);
}
