#include "core/comm/in_process_comm.h"

#include <chrono>

namespace pm {

void InProcessHub::put(int src, int dst, int tag, torch::Tensor t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queues_[{src, dst, tag}].push_back(std::move(t));
  }
  cv_.notify_all();
}

torch::Tensor InProcessHub::take(int src, int dst, int tag, double timeoutS) {
  std::unique_lock<std::mutex> lock(mu_);
  auto& q = queues_[{src, dst, tag}];
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeoutS), [&] { return !q.empty(); }))
    throw CommError("stage " + std::to_string(dst),
                    "timed out after " + std::to_string(static_cast<int>(timeoutS)) + " s waiting for a message from stage " +
                        std::to_string(src) + " (tag " + std::to_string(tag) + ")");
  torch::Tensor t = std::move(q.front());
  q.pop_front();
  return t;
}

bool InProcessHub::ready(int src, int dst, int tag) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = queues_.find({src, dst, tag});
  return it != queues_.end() && !it->second.empty();
}

size_t InProcessHub::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& kv : queues_) n += kv.second.size();
  return n;
}

void InProcessComm::send(const torch::Tensor& t, int dst, int tag) {
  if (dst < 0 || dst >= size()) throw CommError("stage " + std::to_string(rank_), "send to invalid stage " + std::to_string(dst));
  // A copy, as a network send would make: the receiver must not alias the sender's tensor.
  hub_->put(rank_, dst, tag, t.detach().clone());
}

torch::Tensor InProcessComm::recv(int src, int tag) { return hub_->take(src, rank_, tag, timeoutS_); }

}  // namespace pm
