#pragma once
// One rank of a pipeline: the stages it holds (one, or a model chunk each for interleaved 1F1B and
// ZB-V), each a StageWorker, run in the rank's order. With one stage that is the stage's own list;
// with several, the order of the schedule's rank list (mergeRankOrder over the workers' operation
// lists: a chunk's receives run when the rank reaches the compute they precede, its sends and
// minibatch bookkeeping at once after what they follow).
// Real mode: a process runs its rank to the end (runToEnd), with the stop protocol and the meeting
// at the end; single mode: the engine interleaves the ranks (ready / runNext).
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm/communicator.h"
#include "core/engine/stage_worker.h"

namespace pm {

class RankRunner {
 public:
  // `workers`: the rank's stages by chunk; `comm`: the rank's communicator (its control store);
  // `ranks`: the world's size; `timeoutS`: how long the meeting at the end may wait for a rank.
  RankRunner(std::vector<std::unique_ptr<StageWorker>> workers, int rank, int ranks, Communicator* comm, double timeoutS);

  int rank() const { return rank_; }
  const std::vector<std::unique_ptr<StageWorker>>& workers() const { return workers_; }
  bool done() const;
  // Whether the rank's next operation can run without blocking on a peer.
  bool ready();
  void runNext();
  bool diverged() const;
  std::string divergedMessage() const;
  bool halted() const;  // every stage halted at the stop checkpoint
  int64_t haltStep() const { return workers_.front()->haltStep(); }

  // Runs every remaining operation (real mode); returns early when `stop` is set or the run
  // diverged.
  // `halt` (may be null): a request to stop at a checkpoint. The rank holding the last stage then
  // picks k (StageWorker::safeHaltMinibatch) and publishes it (Communicator::putControl); every
  // rank reads it before each minibatch bookkeeping of its stages and they halt after minibatch k
  // with a checkpoint.
  void runToEnd(const std::atomic<bool>* stop, const std::atomic<bool>* halt = nullptr);

 private:
  // Moves past the entries of the order that a stage already ran or that belong to a halted one.
  void skipRun();
  void haltAllAfter(int64_t k);
  // Publishes `phase`/<rank> in the shared store, waits until every rank has, then leaves in
  // order: rank 0 hosts the store (TCPStore), so it leaves last.
  void meetAndLeave(const std::string& phase, const std::string& what);

  std::vector<std::unique_ptr<StageWorker>> workers_;
  int rank_, ranks_;
  Communicator* comm_;
  double timeoutS_;
  std::vector<std::pair<int, size_t>> order_;  // (chunk, operation index), several chunks only
  size_t at_ = 0;
  bool haltDecided_ = false;
};

}  // namespace pm
