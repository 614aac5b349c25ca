// A stage's checkpoints: saved at a minibatch boundary with everything in flight across it, and
// restored (see docs/engine.md, "Checkpoints and resume").
#include <filesystem>
#include <set>
#include <sstream>

#include "core/engine/stage_worker.h"
#include "core/util/atomic_file.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

int64_t StageWorker::nextMinibatchDone() const {
  for (size_t i = pc_; i < ops().size(); ++i)
    if (ops()[i].kind == OpKind::MinibatchDone) return ops()[i].arg;
  return -1;
}

namespace {

// Index just after minibatch k's bookkeeping in an operation list (the stage's cut).
size_t cutIndex(const std::vector<StageOp>& ops, int64_t k) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::MinibatchDone && ops[i].arg == k) return i + 1;
  return ops.size();
}

std::set<int64_t> actionMbs(const std::vector<StageOp>& ops, size_t end, ActionKind kind) {
  std::set<int64_t> mbs;
  for (size_t i = 0; i < end && i < ops.size(); ++i)
    if (ops[i].kind == OpKind::Act && ops[i].act.kind == kind) mbs.insert(ops[i].act.mb);
  return mbs;
}

double jsonNum(const Json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || !it->is_number()) ? NAN : it->get<double>();
}

}  // namespace

std::vector<int64_t> StageWorker::messagesCrossingCut(int64_t step) const {
  const int stage = plan_.stage();
  const std::string where = "stage " + std::to_string(stage) + " checkpoint at step " + std::to_string(step);
  // Messages crossing the cuts (each stage's cut: right after its bookkeeping of minibatch step-1).
  std::vector<int64_t> outbox;
  if (!plan_.last()) {
    const auto sentActs = actionMbs(ops(), pc_, ActionKind::SendAct);
    const auto next = plan_.ops(stage + 1);
    const auto recvBefore = actionMbs(next, cutIndex(next, step - 1), ActionKind::RecvAct);
    for (int64_t mb : sentActs)
      if (!recvBefore.count(mb)) outbox.push_back(mb);
    for (int64_t mb : recvBefore)
      if (!sentActs.count(mb))
        throw EngineError(where, "stage " + std::to_string(stage + 1) + " receives microbatch " + std::to_string(mb) +
                                     " before the cut but it is sent after it");
    for (int64_t mb : outbox)
      if (!executor_.holdsSent(mb))
        throw EngineError(where, "the activation of microbatch " + std::to_string(mb) + " crosses the cut but is not held");
  }
  if (!plan_.first()) {
    const auto prev = plan_.ops(stage - 1);
    const auto sentGrads = actionMbs(ops(), pc_, ActionKind::SendGrad);
    const auto recvBefore = actionMbs(prev, cutIndex(prev, step - 1), ActionKind::RecvGrad);
    if (sentGrads != recvBefore) throw EngineError(where, "gradient messages cross the cut (schedule not supported by checkpoints)");
  }
  return outbox;
}

void StageWorker::saveCheckpoint(int64_t step) {
  const int stage = plan_.stage();
  const std::string where = "stage " + std::to_string(stage) + " checkpoint at step " + std::to_string(step);
  const std::vector<int64_t> outbox = messagesCrossingCut(step);
  torch::serialize::OutputArchive a;
  Json meta{{"format", 1}, {"step", step}, {"stage", stage}, {"stages", plan_.stages()}, {"schedule", choiceName(e_.pipeline.schedule)},
            {"pc", pc_}, {"ops", ops().size()}, {"last_loss", lastLoss_}, {"last_eval_loss", lastEvalLoss_},
            {"last_accuracy", lastAccuracy_}, {"best_accuracy", bestAccuracy_}, {"steps_done", stepsDone_},
            {"elapsed_s", monotonicSeconds() - runStart_}, {"trace_cut_s", monotonicSeconds() - traceOrigin_}};
  meter_.save(meta);
  executor_.save(a, meta, outbox);
  a.write("meta", c10::IValue(meta.dump()));
  const std::string file = checkpoints_.stageFile(step, stage);
  // What the run recorded up to this cut (this stage's loss of the step among it) is made durable
  // before the checkpoint exists: a resume from it never records those steps again, so a kill
  // between the checkpoint and the recorder's next flush would lose them for good. A sink that
  // cannot flush now (a busy or full store) keeps its rows for its own next try.
  try {
    sink_->flush();
  } catch (const std::exception&) {
  }
  std::error_code ec;
  std::filesystem::create_directories(checkpoints_.stepDir(step), ec);
  // Private whatever the umask (the run's root is 0700 too: claimCheckpointRoot).
  std::filesystem::permissions(checkpoints_.stepDir(step), std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  // Serialised in memory first, then written whole or not at all (writeFileAtomically): LibTorch's
  // file writer aborts the process when the disk fills under it (its destructor throws).
  std::ostringstream bytes;
  try {
    a.save_to(bytes);
  } catch (const std::exception& ex) {
    throw EngineError(where, "cannot serialise the checkpoint: " + std::string(ex.what()));
  }
  try {
    writeFileAtomically(file, bytes.str(), 0600);
    // The partition the checkpoint belongs to (a time-balanced partition need not come out the
    // same when measured again).
    if (plan_.first()) checkpoints_.writePartition(step, std::vector<int>(partition_.begin.begin() + 1, partition_.begin.end()));
  } catch (const FileError& ex) {
    throw EngineError(where, "cannot write " + ex.place() + ": " + ex.problem());
  }
  ++checkpointsWritten_;
  // Disk use stays at one complete checkpoint while the run goes (the end keeps the last, or none).
  checkpoints_.pruneBefore(step, plan_.stages());
  Json log = makeEvent(ev::kLog);
  log["level"] = "info";
  log["message"] = "stage " + std::to_string(stage) + ": checkpoint at step " + std::to_string(step) + " (" + file + ")";
  log["stage"] = stage;
  log["checkpoint_step"] = step;
  sink_->emit(log);
}

std::string StageWorker::restore(int64_t step) {
  const std::string file = checkpoints_.stageFile(step, plan_.stage());
  const std::string where = "checkpoint " + file;
  torch::serialize::InputArchive a;
  try {
    a.load_from(file);
  } catch (const std::exception& ex) {
    throw EngineError(where, std::string("cannot read: ") + ex.what());
  }
  c10::IValue metaV;
  a.read("meta", metaV);
  const Json m = Json::parse(metaV.toStringRef());
  if (m.value("stage", -1) != plan_.stage() || m.value("stages", -1) != plan_.stages() ||
      m.value("schedule", "") != choiceName(e_.pipeline.schedule) || m.value("ops", size_t{0}) != ops().size())
    throw EngineError(where, "was written by another stage or pipeline (stage " + std::to_string(m.value("stage", -1)) + " of " +
                                 std::to_string(m.value("stages", -1)) + ", " + m.value("schedule", std::string("?")) + ")");
  const size_t pc = m.value("pc", size_t{0});
  const int64_t cut = m.value("step", int64_t{0});
  if (pc == 0 || pc > ops().size() || ops()[pc - 1].kind != OpKind::MinibatchDone || ops()[pc - 1].arg != cut - 1)
    throw EngineError(where, "does not end at minibatch " + std::to_string(cut - 1) + " of this stage's schedule");
  executor_.restore(a, m);
  pc_ = pc;
  meter_.restore(m, monotonicSeconds());
  lastLoss_ = jsonNum(m, "last_loss");
  lastEvalLoss_ = jsonNum(m, "last_eval_loss");
  lastAccuracy_ = jsonNum(m, "last_accuracy");
  bestAccuracy_ = jsonNum(m, "best_accuracy");
  stepsDone_ = m.value("steps_done", int64_t{0});
  runStart_ = monotonicSeconds() - jsonNum(m, "elapsed_s");
  // Trace rows the first session recorded after this cut are recorded again by this one.
  // (A checkpoint without trace_cut_s may come from a stage whose clock is not the trace's, so
  // nothing is deleted.)
  traceCutS_ = m.contains("trace_cut_s") ? jsonNum(m, "trace_cut_s") : -1;
  traceOrigin_ = runStart_;  // the resumed session's trace continues the first one's times
  executor_.updateMemory();
  return file;
}

}  // namespace pm
