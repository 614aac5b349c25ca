// A stage's checkpoints: saved at a minibatch boundary with everything in flight across it, and
// restored (see docs/engine.md, "Checkpoints and resume").
#include <filesystem>
#include <fstream>
#include <set>

#include <ATen/CPUGeneratorImpl.h>

#include "core/engine/stage_worker.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {


std::string StageWorker::checkpointFile(const std::string& dir, int64_t step, int stage) {
  return dir + "/step-" + std::to_string(step) + "/stage" + std::to_string(stage) + ".pt";
}

int64_t StageWorker::nextMinibatchDone() const {
  for (size_t i = pc_; i < ops_.size(); ++i)
    if (ops_[i].kind == OpKind::MinibatchDone) return ops_[i].arg;
  return -1;
}

namespace {

// Index just after minibatch k's bookkeeping in an operation list (the stage's cut).
template <class Ops>
size_t cutIndex(const Ops& ops, int64_t k, int kindMinibatchDone) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (static_cast<int>(ops[i].kind) == kindMinibatchDone && ops[i].arg == k) return i + 1;
  return ops.size();
}

template <class Ops>
std::set<int64_t> actionMbs(const Ops& ops, size_t begin, size_t end, ActionKind kind, int kindAct) {
  std::set<int64_t> mbs;
  for (size_t i = begin; i < end && i < ops.size(); ++i)
    if (static_cast<int>(ops[i].kind) == kindAct && ops[i].act.kind == kind) mbs.insert(ops[i].act.mb);
  return mbs;
}

double jsonNum(const Json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || !it->is_number()) ? NAN : it->get<double>();
}

}  // namespace

void StageWorker::saveCheckpoint(int64_t step) {
  const int kMd = static_cast<int>(OpKind::MinibatchDone), kAct = static_cast<int>(OpKind::Act);
  const std::string where = "stage " + std::to_string(stage_) + " checkpoint at step " + std::to_string(step);
  // Messages crossing the cuts (each stage's cut: right after its bookkeeping of minibatch step-1).
  std::vector<int64_t> outbox;
  const auto sentActs = actionMbs(ops_, 0, pc_, ActionKind::SendAct, kAct);
  if (!last_) {
    const auto next = opsFor(stage_ + 1);
    const auto recvBefore = actionMbs(next, 0, cutIndex(next, step - 1, kMd), ActionKind::RecvAct, kAct);
    for (int64_t mb : sentActs)
      if (!recvBefore.count(mb)) outbox.push_back(mb);
    for (int64_t mb : recvBefore)
      if (!sentActs.count(mb)) throw EngineError(where, "stage " + std::to_string(stage_ + 1) + " receives microbatch " + std::to_string(mb) + " before the cut but it is sent after it");
    for (int64_t mb : outbox)
      if (!sentAct_.count(mb)) throw EngineError(where, "the activation of microbatch " + std::to_string(mb) + " crosses the cut but is no longer held");
  }
  if (!first_) {
    const auto prev = opsFor(stage_ - 1);
    const auto sentGrads = actionMbs(ops_, 0, pc_, ActionKind::SendGrad, kAct);
    const auto recvBefore = actionMbs(prev, 0, cutIndex(prev, step - 1, kMd), ActionKind::RecvGrad, kAct);
    if (sentGrads != recvBefore) throw EngineError(where, "gradient messages cross the cut (schedule not supported by checkpoints)");
  }
  torch::serialize::OutputArchive a;
  Json meta{{"format", 1}, {"step", step}, {"stage", stage_}, {"stages", stages_}, {"schedule", e_.pipeline.schedule},
            {"pc", pc_}, {"ops", ops_.size()}, {"samples", samples_}, {"compute_s", compute_}, {"wait_s", wait_},
            {"tau_max", tauMax_}, {"versions_max", versionsMax_}, {"inflight_max", maxInflight_}, {"peak", mem_.peak},
            {"last_loss", lastLoss_}, {"last_eval_loss", lastEvalLoss_}, {"last_accuracy", lastAccuracy_},
            {"best_accuracy", bestAccuracy_}, {"last_lr", lastLr_}, {"steps_done", stepsDone_},
            {"last_backward_mb", lastBackwardMb_}, {"elapsed_s", monotonicSeconds() - runStart_},
            {"trace_cut_s", monotonicSeconds() - traceOrigin_}};
  int64_t i = 0;
  for (const auto& p : module_->parameters()) a.write("param_" + std::to_string(i++), p.detach().cpu().clone());
  i = 0;
  for (const auto& b : module_->buffers()) a.write("buffer_" + std::to_string(i++), b.detach().cpu().clone(), true);
  {
    torch::serialize::OutputArchive opt;
    optimizer_->save(opt);
    a.write("optimizer", opt);
  }
  if (asyncSchedule_) {
    torch::serialize::OutputArchive v;
    versions_.save(v);
    a.write("versions", v);
  }
  if (t2_) {
    torch::serialize::OutputArchive t;
    t2_->save(t);
    a.write("t2", t);
  }
  Json inflight = Json::array(), received = Json::array(), gin = Json::array(), gout = Json::array(), losses = Json::array();
  for (const auto& [mb, f] : inflight_) {
    inflight.push_back({mb, f.scale, f.target.defined()});
    a.write("in_" + std::to_string(mb), f.input.detach().cpu());
    if (f.target.defined()) a.write("tgt_" + std::to_string(mb), f.target.cpu());
  }
  for (const auto& [mb, t] : received_) {
    received.push_back(mb);
    a.write("recv_" + std::to_string(mb), t.cpu());
  }
  for (const auto& [mb, t] : gradsIn_) {
    gin.push_back(mb);
    a.write("gin_" + std::to_string(mb), t.cpu());
  }
  for (const auto& [mb, t] : gradsOut_) {
    gout.push_back(mb);
    a.write("gout_" + std::to_string(mb), t.cpu());
  }
  for (int64_t mb : outbox) a.write("out_" + std::to_string(mb), sentAct_.at(mb).cpu());
  for (const auto& [k, sum] : lossSum_) losses.push_back({k, sum, lossSamples_[k]});
  meta["inflight"] = inflight;
  meta["received"] = received;
  meta["grads_in"] = gin;
  meta["grads_out"] = gout;
  meta["outbox"] = outbox;
  meta["loss_sums"] = losses;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    a.write("rng", gen.get_state());
  }
  a.write("meta", c10::IValue(meta.dump()));
  const std::string file = checkpointFile(checkpointDir_, step, stage_);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  const std::string tmp = file + ".tmp";
  try {
    a.save_to(tmp);
  } catch (const std::exception& ex) {
    throw EngineError(where, "cannot write " + tmp + ": " + ex.what());
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw EngineError(where, "cannot write " + file + ": " + ec.message());
  if (first_) {
    // The partition the checkpoint belongs to (a time-balanced partition need not come out the
    // same when measured again).
    std::vector<int> boundaries(partition_.begin.begin() + 1, partition_.begin.end());
    std::ofstream(std::filesystem::path(file).parent_path() / "partition.json") << Json{{"boundaries", boundaries}}.dump() << "\n";
  }
  ++checkpointsWritten_;
  Json log = makeEvent(ev::kLog);
  log["level"] = "info";
  log["message"] = "stage " + std::to_string(stage_) + ": checkpoint at step " + std::to_string(step) + " (" + file + ")";
  log["stage"] = stage_;
  log["checkpoint_step"] = step;
  sink_->emit(log);
}

void StageWorker::restore(const std::string& file) {
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
  if (m.value("stage", -1) != stage_ || m.value("stages", -1) != stages_ || m.value("schedule", "") != e_.pipeline.schedule ||
      m.value("ops", size_t{0}) != ops_.size())
    throw EngineError(where, "was written by another stage or pipeline (stage " + std::to_string(m.value("stage", -1)) + " of " +
                                 std::to_string(m.value("stages", -1)) + ", " + m.value("schedule", std::string("?")) + ")");
  const size_t pc = m.value("pc", size_t{0});
  const int64_t step = m.value("step", int64_t{0});
  if (pc == 0 || pc > ops_.size() || ops_[pc - 1].kind != OpKind::MinibatchDone || ops_[pc - 1].arg != step - 1)
    throw EngineError(where, "does not end at minibatch " + std::to_string(step - 1) + " of this stage's schedule");
  torch::NoGradGuard ng;
  auto readTensor = [&](const std::string& key) {
    torch::Tensor t;
    a.read(key, t);
    return t.to(device_);
  };
  int64_t i = 0;
  for (auto& p : module_->parameters()) p.copy_(readTensor("param_" + std::to_string(i++)));
  i = 0;
  for (auto& b : module_->buffers()) {
    torch::Tensor t;
    a.read("buffer_" + std::to_string(i++), t, true);
    b.copy_(t.to(device_));
  }
  {
    torch::serialize::InputArchive opt;
    a.read("optimizer", opt);
    optimizer_->load(opt);
  }
  if (asyncSchedule_) {
    torch::serialize::InputArchive v;
    a.read("versions", v);
    versions_.load(v);
  }
  if (t2_) {
    torch::serialize::InputArchive t;
    a.read("t2", t);
    t2_->load(t);
  }
  inflight_.clear();
  for (const auto& x : m["inflight"]) {
    const int64_t mb = x[0].get<int64_t>();
    InFlight f;
    f.input = readTensor("in_" + std::to_string(mb));
    if (!first_ && f.input.is_floating_point()) f.input.requires_grad_(true);
    f.scale = x[1].get<double>();
    if (x[2].get<bool>()) f.target = readTensor("tgt_" + std::to_string(mb));
    inflight_[mb] = std::move(f);  // no output: the backward recomputes it
  }
  received_.clear();
  for (const auto& mb : m["received"]) received_[mb.get<int64_t>()] = readTensor("recv_" + std::to_string(mb.get<int64_t>()));
  gradsIn_.clear();
  for (const auto& mb : m["grads_in"]) gradsIn_[mb.get<int64_t>()] = readTensor("gin_" + std::to_string(mb.get<int64_t>()));
  gradsOut_.clear();
  for (const auto& mb : m["grads_out"]) gradsOut_[mb.get<int64_t>()] = readTensor("gout_" + std::to_string(mb.get<int64_t>()));
  resend_.clear();
  for (const auto& mb : m["outbox"]) {
    const int64_t id = mb.get<int64_t>();
    torch::Tensor t = readTensor("out_" + std::to_string(id));
    resend_.emplace_back(id, t);
    if (asyncSchedule_ && !checkpointDir_.empty()) sentAct_[id] = t;
  }
  lossSum_.clear();
  lossSamples_.clear();
  for (const auto& x : m["loss_sums"]) {
    lossSum_[x[0].get<int64_t>()] = x[1].is_number() ? x[1].get<double>() : NAN;
    lossSamples_[x[0].get<int64_t>()] = x[2].get<int64_t>();
  }
  {
    torch::Tensor rng;
    a.read("rng", rng);
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  }
  pc_ = pc;
  samples_ = m.value("samples", int64_t{0});
  resumedSamples_ = samples_;
  compute_ = jsonNum(m, "compute_s");
  wait_ = jsonNum(m, "wait_s");
  tauMax_ = m.value("tau_max", int64_t{0});
  versionsMax_ = m.value("versions_max", int64_t{1});
  maxInflight_ = m.value("inflight_max", int64_t{0});
  mem_.peak = m.value("peak", int64_t{0});
  lastLoss_ = jsonNum(m, "last_loss");
  lastEvalLoss_ = jsonNum(m, "last_eval_loss");
  lastAccuracy_ = jsonNum(m, "last_accuracy");
  bestAccuracy_ = jsonNum(m, "best_accuracy");
  lastLr_ = jsonNum(m, "last_lr");
  stepsDone_ = m.value("steps_done", int64_t{0});
  lastBackwardMb_ = m.value("last_backward_mb", int64_t{-1});
  runStart_ = monotonicSeconds() - jsonNum(m, "elapsed_s");
  // Trace rows the first session recorded after this cut are recorded again by this one.
  // (A checkpoint from before trace_cut_s was recorded: its stage clock may not be the trace's, so
  // nothing is deleted.)
  traceCutS_ = m.contains("trace_cut_s") ? jsonNum(m, "trace_cut_s") : -1;
  traceOrigin_ = runStart_;  // the resumed session's trace continues the first one's times
  winStart_ = monotonicSeconds();
  updateMemory();
}

void StageWorker::resendPending() {
  for (const auto& [mb, t] : resend_) comm_->send(t.to(device_), stage_ + 1, kTagActivation);
  resend_.clear();
}

}  // namespace pm
