#pragma once
// The files of a run's checkpoints under its root (core/store/run_checkpoints.h decides the root
// and owns its owner.json): one directory per step, holding one file per stage and the partition
// the checkpoint belongs to.
//   <root>/step-<N>/stage<S>.pt      stage S's whole state right after minibatch N-1
//   <root>/step-<N>/partition.json   {"boundaries": [...]}, the first unit of stages 2..P
// A step is complete when its partition file and every stage's file are there. This is the one
// place that knows these names: the engine writes and restores them, the runner finds, resumes
// and prunes them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pm {

class CheckpointLayout {
 public:
  explicit CheckpointLayout(std::string root = "") : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  bool enabled() const { return !root_.empty(); }
  std::string stepDir(int64_t step) const;
  std::string stageFile(int64_t step, int stage) const;
  std::string partitionFile(int64_t step) const;

  // The complete steps, ascending (step -> its directory): a readable partition file and a
  // non-empty file for each of `stages` stages.
  std::map<int64_t, std::string> completeSteps(int stages) const;
  // Whether `step` is complete: its partition file reads and every stage's file is there, not empty.
  bool isComplete(int64_t step, int stages) const;
  // Once `step` is complete, removes every older step directory and returns how many; 0 while it
  // is not. Each stage writes its steps in order, so when `step` is complete no stage still
  // writes an older one. Called by each stage after it wrote `step`: the last to write it prunes,
  // so a run keeps one complete checkpoint (and the one being written) while it goes.
  int pruneBefore(int64_t step, int stages) const;
  // The latest complete step; 0 when none.
  int64_t latestComplete(int stages) const;
  // Removes every step directory but the latest complete one; everything (the root too) with `all`.
  void prune(int stages, bool all) const;

  // The partition file of `step` (written by the first stage beside its checkpoint).
  void writePartition(int64_t step, const std::vector<int>& boundaries) const;
  // Throws StoreError naming the file when it is missing or not valid.
  std::vector<int> readPartition(int64_t step) const;

 private:
  std::string root_;
};

}  // namespace pm
