#include "core/engine/rank_runner.h"

#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

namespace {

OrderRole opRole(const StageOp& op) {
  return op.kind == OpKind::Act ? orderRole(op.act.kind) : OrderRole::Trail;  // bookkeeping follows its step
}

}  // namespace

RankRunner::RankRunner(std::vector<std::unique_ptr<StageWorker>> workers, int rank, int ranks, Communicator* comm, double timeoutS)
    : workers_(std::move(workers)), rank_(rank), ranks_(ranks), comm_(comm), timeoutS_(timeoutS) {
  if (workers_.empty()) throw EngineError("rank " + std::to_string(rank), "holds no stage");
  if (workers_.size() == 1) return;
  std::vector<std::vector<OrderRole>> roles;
  for (const auto& w : workers_) {
    roles.emplace_back();
    for (const StageOp& op : w->plan().ops()) roles.back().push_back(opRole(op));
  }
  try {
    order_ = mergeRankOrder(roles, rankComputeActions(workers_.front()->plan().scheduleParams(), rank_));
  } catch (const std::invalid_argument& ex) {
    throw EngineError("rank " + std::to_string(rank), ex.what());
  }
}

void RankRunner::skipRun() {
  while (at_ < order_.size()) {
    const auto& [c, i] = order_[at_];
    const StageWorker& w = *workers_[static_cast<size_t>(c)];
    if (!w.done() && w.position() <= i) break;
    ++at_;
  }
}

bool RankRunner::done() const {
  for (const auto& w : workers_)
    if (!w->done()) return false;
  return true;
}

bool RankRunner::ready() {
  if (workers_.size() == 1) return workers_.front()->ready();
  skipRun();
  return at_ < order_.size() && workers_[static_cast<size_t>(order_[at_].first)]->ready();
}

void RankRunner::runNext() {
  if (workers_.size() == 1) return workers_.front()->runNext();
  skipRun();
  if (at_ >= order_.size()) return;
  const auto [c, i] = order_[at_];
  StageWorker& w = *workers_[static_cast<size_t>(c)];
  if (w.position() != i)
    throw EngineError("rank " + std::to_string(rank_), "stage " + std::to_string(w.stage()) + " is at operation " +
                                                           std::to_string(w.position()) + ", the rank's order expects " + std::to_string(i));
  w.runNext();
  ++at_;
}

bool RankRunner::diverged() const {
  for (const auto& w : workers_)
    if (w->diverged()) return true;
  return false;
}

std::string RankRunner::divergedMessage() const {
  for (const auto& w : workers_)
    if (w->diverged()) return w->divergedMessage();
  return {};
}

bool RankRunner::halted() const {
  for (const auto& w : workers_)
    if (!w->halted()) return false;
  return true;
}

void RankRunner::haltAllAfter(int64_t k) {
  haltDecided_ = true;
  for (auto& w : workers_) w->haltAfterMinibatch(k);
}

void RankRunner::runToEnd(const std::atomic<bool>* stop, const std::atomic<bool>* halt) {
  bool published = false;
  StageWorker* last = nullptr;
  for (auto& w : workers_)
    if (w->lastStage()) last = w.get();
  while (!done()) {
    if (stop && stop->load()) return;
    if (diverged()) break;
    if (!haltDecided_) {  // a stop: every stage halts after the same minibatch (with a checkpoint if it has a directory)
      if (last && !published && halt && halt->load()) {
        published = true;
        const int64_t k = last->safeHaltMinibatch();
        if (k >= 0) {
          haltAllAfter(k);
          comm_->putControl("halt", k);
        }
      } else if (!last) {
        bool bookkeeping = false;
        for (const auto& w : workers_) bookkeeping = bookkeeping || w->atMinibatchDone();
        int64_t k = -1;
        if (bookkeeping && comm_->getControl("halt", k)) haltAllAfter(k);
      }
    }
    runNext();
  }
  // Every rank that completed all its ops waits for the others before it leaves: leaving closes
  // its connections, which would reset them under a neighbour still reading its last messages
  // (a receive is kept posted ahead on every channel). Diverged and stopped runs end without it.
  if (!halted()) {
    comm_->finish();
    bool complete = true;
    for (const auto& w : workers_) complete = complete && w->position() >= w->plan().ops().size();
    if (comm_->sharedControl() && !diverged() && !(stop && stop->load()) && complete) meetAndLeave("done", "the end of the run");
    return;
  }
  // After a halt, sends crossing the cut are never received (they are in the checkpoint): do not
  // wait for them, but keep the connections open until every rank has halted, or a peer's
  // pending send to this rank would fail before it reaches its own cut.
  meetAndLeave("halted", "the stop checkpoint");
}

void RankRunner::meetAndLeave(const std::string& phase, const std::string& what) {
  const double until = monotonicSeconds() + timeoutS_;
  auto awaitAll = [&](const std::string& key, int from) {
    for (int r = from; r < ranks_; ++r)
      awaitControl(*comm_, key + "/" + std::to_string(r), until, timeoutS_, "rank " + std::to_string(rank_),
                   "rank " + std::to_string(r) + " did not reach " + what);
  };
  comm_->putControl(phase + "/" + std::to_string(rank_), 1);
  awaitAll(phase, 0);
  if (rank_ != 0) comm_->putControl(phase + "-left/" + std::to_string(rank_), 1);
  else awaitAll(phase + "-left", 1);
}

}  // namespace pm
