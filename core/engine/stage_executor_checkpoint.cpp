// A stage executor's part of a checkpoint: parameters, buffers, optimizer and weight-policy
// state, the messages and microbatches in flight, the loss sums and the random generator.
#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "core/engine/stage_executor.h"

namespace pm {

void StageExecutor::save(torch::serialize::OutputArchive& a, Json& meta, const std::vector<int64_t>& outbox) const {
  int64_t i = 0;
  for (const auto& p : module_->parameters()) a.write("param_" + std::to_string(i++), p.detach().cpu().clone());
  i = 0;
  for (const auto& b : module_->buffers()) a.write("buffer_" + std::to_string(i++), b.detach().cpu().clone(), true);
  {
    torch::serialize::OutputArchive opt;
    optimizer_->save(opt);
    a.write("optimizer", opt);
  }
  // A synchronous schedule is cut at a step, after every W of its minibatch.
  if (!pendingWeight_.empty())
    throw EngineError(where(), "a checkpoint with weight gradients pending (microbatch " + std::to_string(pendingWeight_.begin()->first) + ")");
  policy_->save(a);
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
  for (const auto& [k, sum] : lossSum_) losses.push_back({k, sum, lossSamples_.at(k)});
  meta["inflight"] = inflight;
  meta["received"] = received;
  meta["grads_in"] = gin;
  meta["grads_out"] = gout;
  meta["outbox"] = outbox;
  meta["loss_sums"] = losses;
  meta["last_lr"] = lastLr_;
  meta["last_backward_mb"] = lastBackwardMb_;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    a.write("rng", gen.get_state());
  }
}

void StageExecutor::restore(torch::serialize::InputArchive& a, const Json& m) {
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
  if (plan_.asynchronous()) policy_->load(a);
  inflight_.clear();
  for (const auto& x : m["inflight"]) {
    const int64_t mb = x[0].get<int64_t>();
    InFlight f;
    f.input = readTensor("in_" + std::to_string(mb));
    if (!plan_.first() && f.input.is_floating_point()) f.input.requires_grad_(true);
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
    if (keepSent_) sentAct_[id] = t;
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
  const auto lr = m.find("last_lr");
  lastLr_ = lr != m.end() && lr->is_number() ? lr->get<double>() : NAN;
  lastBackwardMb_ = m.value("last_backward_mb", int64_t{-1});
}

void StageExecutor::resendPending() {
  for (const auto& [mb, t] : resend_) comm_->sendKeyed(t.to(device_), plan_.stage() + 1, kTagActivation, shapeKey(mb));
  resend_.clear();
}

}  // namespace pm
