#pragma once
// The communicator of one stage on a rank that holds several (interleaved 1F1B, ZB-V): its peers
// are stages, not ranks. A message to a stage on another rank goes over the rank's own
// communicator, its tag naming the link it travels on (two ranks can be joined by several links,
// one per chunk pair, whose messages must not mix); a message between two stages of the same rank
// (ZB-V's turn at rank P-1) is handed over in process, a copy as a network send would make.
// The shared control store, finish and shutdown are the rank's.
#include <functional>
#include <memory>

#include "core/comm/communicator.h"
#include "core/comm/in_process_comm.h"

namespace pm {

class ChunkComm : public Communicator {
 public:
  // `local`: the hub shared by the rank's stages (one per rank process); `rankOf`: the rank that
  // holds a stage.
  ChunkComm(Communicator& rankComm, std::shared_ptr<InProcessHub> local, int stage, int stages, std::function<int(int)> rankOf,
            double timeoutS);
  int rank() const override { return stage_; }
  int size() const override { return stages_; }
  void send(const torch::Tensor& t, int dst, int tag) override;
  torch::Tensor recv(int src, int tag) override;
  void sendKeyed(const torch::Tensor& t, int dst, int tag, int64_t key) override;
  torch::Tensor recvKeyed(int src, int tag, int64_t key) override;
  int64_t headersSent() const override { return base_.headersSent(); }
  bool poll(int src, int tag) override;
  void finish() override { base_.finish(); }
  void shutdown() override { base_.shutdown(); }
  void putControl(const std::string& key, int64_t value) override { base_.putControl(key, value); }
  bool getControl(const std::string& key, int64_t& value) override { return base_.getControl(key, value); }
  bool sharedControl() const override { return base_.sharedControl(); }
  std::string backend() const override { return base_.backend(); }

  // The tag on the wire of a message with `tag` between stages `a` and `b` (neighbours): distinct
  // for every link, never one of the plain tags.
  static int linkTag(int tag, int a, int b);

 private:
  bool local(int peer) const { return rankOf_(peer) == base_.rank(); }
  void checkPeer(int peer) const;

  Communicator& base_;
  std::shared_ptr<InProcessHub> local_;
  int stage_, stages_;
  std::function<int(int)> rankOf_;
  double timeoutS_;
};

}  // namespace pm
