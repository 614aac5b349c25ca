#include "core/engine/stage_worker.h"
// Its reports are in stage_worker_report.cpp, its checkpoints in stage_worker_checkpoint.cpp.

#include <thread>

#include "core/engine/tensor_memory_meter.h"
#include "core/pipeline/trace_actions.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

namespace {

bool isWait(ActionKind k) {
  return k == ActionKind::RecvAct || k == ActionKind::RecvGrad || k == ActionKind::SendAct || k == ActionKind::SendGrad;
}

// The device the worker decided (real mode), else execution.devices[rank] (or [0] for all).
std::string stageDevice(const Experiment& e, const StageSetup& s) {
  if (!s.device.empty()) return s.device;
  const auto& devices = e.execution.devices;
  return devices.empty() ? "cpu" : devices[devices.size() == 1 ? 0 : static_cast<size_t>(s.rank >= 0 ? s.rank : s.stage)];
}

// Whether the stage's tensors are measured: CPU stages, once the process-wide meter is installed.
bool measuresTensors(const std::string& device) {
  TensorMemoryMeter::install();
  return TensorMemoryMeter::installed() && device == "cpu";
}

}  // namespace

StageWorker::StageWorker(StageSetup s)
    : e_(std::move(s.experiment)),
      plan_(e_, s.stage, s.partition.stages(), s.train ? s.train->size() : 0, s.eval ? s.eval->size() : 0, s.recomputeAheadAlways),
      partition_(s.partition),
      eval_(std::move(s.eval)),
      comm_(s.comm),
      sink_(s.sink),
      rank_(s.rank >= 0 ? s.rank : s.stage),
      meter_(measuresTensors(stageDevice(e_, s)), monotonicSeconds()),
      executor_(e_, plan_, partition_, s.units, stageDevice(e_, s), std::move(s.train), s.comm, meter_,
                plan_.asynchronous() && !s.checkpointDir.empty()),
      checkpoints_(s.checkpointDir),
      runStart_(s.runStart),
      traceOrigin_(s.runStart) {
  StageMemory m;
  m.weights = moduleWeightBytes(*executor_.module());
  meter_.setMemory(m);
  meter_.startWindow(monotonicSeconds());
}

StageWorker::~StageWorker() = default;

bool StageWorker::ready() {
  if (done()) return false;
  const StageOp& op = ops()[pc_];
  const int stage = plan_.stage();
  if (op.kind == OpKind::EvalBatch) return plan_.first() || comm_->poll(stage - 1, kTagEval);
  if (op.kind != OpKind::Act) return true;
  switch (op.act.kind) {
    case ActionKind::RecvAct: return comm_->poll(stage - 1, kTagActivation);
    case ActionKind::RecvGrad: return comm_->poll(stage + 1, kTagGradient);
    default: return true;
  }
}

// The other stages complete minibatch k once the gradient of its last microbatch has gone back
// through them; until then none of them is past k. So the last stage halts after its next
// minibatch only while that gradient is still to be sent, and after the one after otherwise.
int64_t StageWorker::safeHaltMinibatch() const {
  size_t at = pc_;
  while (at < ops().size() && ops()[at].kind != OpKind::MinibatchDone) ++at;
  if (at >= ops().size()) return -1;
  const int64_t k = ops()[at].arg;
  if (plan_.first()) return k;
  const int64_t lastMb = k * plan_.microbatches() + plan_.microbatches() - 1;
  for (size_t i = pc_; i < at; ++i)
    if (ops()[i].kind == OpKind::Act && ops()[i].act.kind == ActionKind::SendGrad && ops()[i].act.mb == lastMb) return k;
  for (++at; at < ops().size(); ++at)
    if (ops()[at].kind == OpKind::MinibatchDone) return ops()[at].arg;
  return -1;
}

int64_t awaitControl(Communicator& comm, const std::string& key, double until, double timeoutS, const std::string& place,
                     const std::string& failure) {
  int64_t v = 0;
  while (!comm.getControl(key, v)) {
    if (monotonicSeconds() > until)
      throw EngineError(place, failure + " within " + std::to_string(static_cast<int>(timeoutS)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return v;
}

void StageWorker::runNext() {
  const StageOp op = ops()[pc_++];
  switch (op.kind) {
    case OpKind::Act: execAct(op.act); break;
    case OpKind::MinibatchDone: minibatchDone(op.arg); break;
    case OpKind::EvalBatch: evalBatch(op.arg); break;
  }
  // The parameters hold T2's estimate for a graph recomputed ahead: its backward (the next op)
  // runs now, before anything (a stop) could look at the weights.
  if (executor_.holdingEstimate() && pc_ < ops().size()) runNext();
}

// Only when its backward is the very next op (nothing can step the weights in between), and in a
// multi-process run, where the stage may wait for the gradient (LibTorch 1.13's Gloo receive
// cannot be asked whether it has arrived without completing it, so it is done before every such
// receive: when the gradient is already there it costs what the recompute at the backward
// would). A single-process run executes a receive only once its message is there.
void StageWorker::recomputeAheadOf(int64_t mb) {
  if (pc_ >= ops().size() || ops()[pc_].kind != OpKind::Act || ops()[pc_].act.kind != ActionKind::Backward || ops()[pc_].act.mb != mb)
    return;
  if (!plan_.recomputeAheadAlways() && !comm_->sharedControl()) return;
  const double t0 = monotonicSeconds();
  if (!executor_.recomputeAhead(mb)) return;
  const double t1 = monotonicSeconds();
  meter_.addCompute(t1 - t0);
  emitTrace(kRecomputeTrace, mb, t0, t1, mb / plan_.microbatches());
}

void StageWorker::execAct(const Action& a) {
  if (a.kind == ActionKind::RecvGrad) recomputeAheadOf(a.mb);
  const double t0 = monotonicSeconds();
  switch (a.kind) {
    case ActionKind::RecvAct: executor_.receiveActivation(a.mb); break;
    case ActionKind::RecvGrad: executor_.receiveGradient(a.mb); break;
    case ActionKind::SendAct: executor_.sendActivation(a.mb); break;
    case ActionKind::SendGrad: executor_.sendGradient(a.mb); break;
    case ActionKind::Forward: executor_.forward(a.mb); break;
    case ActionKind::Backward: executor_.backward(a.mb); break;
    case ActionKind::Step:
      executor_.step(a.mb);
      ++stepsDone_;
      break;
    case ActionKind::BackwardInput: executor_.backwardInput(a.mb); break;
    case ActionKind::BackwardWeight: executor_.backwardWeight(a.mb); break;
  }
  const double t1 = monotonicSeconds();
  if (isWait(a.kind)) meter_.addWait(t1 - t0);
  else meter_.addCompute(t1 - t0);
  const int64_t N = plan_.microbatches();
  const int64_t minibatch = a.kind == ActionKind::Step ? std::max<int64_t>(0, executor_.lastBackwardMb()) / N : a.mb / N;
  emitTrace(traceActionName(a.kind), a.mb, t0, t1, minibatch);
}

}  // namespace pm
