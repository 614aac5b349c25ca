#pragma once
// Where a run's checkpoints live, and whose they are. They belong to one run of one store file:
// <store file>.checkpoints/run-<id>, with an owner.json naming the store, the run id and the
// run's creation time, so that a resume never loads another store's (or an earlier, deleted
// run's) checkpoint. No LibTorch: the file names of the checkpoints themselves are the engine's.
#include <cstdint>
#include <string>

#include "core/store/run_store.h"

namespace pm {

// <absolute store path>.checkpoints/run-<id>; "" for an in-memory store.
std::string checkpointRoot(const std::string& storePath, int64_t run);
// Makes `root` the checkpoint directory of `run` (a new run, before its first checkpoint): removes
// whatever an earlier run with this id left there and writes owner.json. Throws StoreError naming
// the directory when it cannot be written. Nothing for root "".
void claimCheckpointRoot(const std::string& root, const std::string& storePath, const RunRecord& run);
// Whether `root` holds `run`'s checkpoints (its owner.json names this run and creation time).
bool ownsCheckpointRoot(const std::string& root, const RunRecord& run);
// Removes a run's checkpoint directory (a deleted run's); missing is fine.
void removeCheckpoints(const std::string& storePath, int64_t run);

}  // namespace pm
