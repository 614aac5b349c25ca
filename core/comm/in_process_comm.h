#pragma once
// In-process channels: a hub of FIFO queues keyed by (src, dst, tag), shared by the stages of
// one process. Thread-safe (a stage per thread works as well as one executor thread).
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/comm/communicator.h"

namespace pm {

class InProcessHub {
 public:
  explicit InProcessHub(int size) : size_(size) {}
  int size() const { return size_; }
  void put(int src, int dst, int tag, torch::Tensor t);
  torch::Tensor take(int src, int dst, int tag, double timeoutS);
  bool ready(int src, int dst, int tag) const;
  size_t pending() const;  // messages not yet received

 private:
  int size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<torch::Tensor>> queues_;
};

class InProcessComm : public Communicator {
 public:
  InProcessComm(std::shared_ptr<InProcessHub> hub, int rank, double timeoutS = 60.0)
      : hub_(std::move(hub)), rank_(rank), timeoutS_(timeoutS) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_->size(); }
  void send(const torch::Tensor& t, int dst, int tag) override;
  torch::Tensor recv(int src, int tag) override;
  bool poll(int src, int tag) override { return hub_->ready(src, rank_, tag); }
  std::string backend() const override { return "local"; }

 private:
  std::shared_ptr<InProcessHub> hub_;
  int rank_;
  double timeoutS_;
};

}  // namespace pm
