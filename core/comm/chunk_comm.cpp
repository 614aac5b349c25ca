#include "core/comm/chunk_comm.h"

#include <algorithm>

namespace pm {

ChunkComm::ChunkComm(Communicator& rankComm, std::shared_ptr<InProcessHub> local, int stage, int stages,
                     std::function<int(int)> rankOf, double timeoutS)
    : base_(rankComm), local_(std::move(local)), stage_(stage), stages_(stages), rankOf_(std::move(rankOf)), timeoutS_(timeoutS) {}

int ChunkComm::linkTag(int tag, int a, int b) { return tag + 4 * (std::min(a, b) + 1); }

void ChunkComm::checkPeer(int peer) const {
  if (peer < 0 || peer >= stages_)
    throw CommError("stage " + std::to_string(stage_), "message to or from invalid stage " + std::to_string(peer));
}

void ChunkComm::send(const torch::Tensor& t, int dst, int tag) {
  checkPeer(dst);
  if (local(dst)) return local_->put(stage_, dst, tag, t.detach().clone());
  base_.send(t, rankOf_(dst), linkTag(tag, stage_, dst));
}

torch::Tensor ChunkComm::recv(int src, int tag) {
  checkPeer(src);
  if (local(src)) return local_->take(src, stage_, tag, timeoutS_);
  return base_.recv(rankOf_(src), linkTag(tag, src, stage_));
}

bool ChunkComm::poll(int src, int tag) {
  checkPeer(src);
  if (local(src)) return local_->ready(src, stage_, tag);
  return base_.poll(rankOf_(src), linkTag(tag, src, stage_));
}

}  // namespace pm
