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

void ChunkComm::send(const torch::Tensor& t, int dst, int tag) { sendKeyed(t, dst, tag, -1); }

torch::Tensor ChunkComm::recv(int src, int tag) { return recvKeyed(src, tag, -1); }

// Key -1: the plain send / recv of the rank's communicator.
void ChunkComm::sendKeyed(const torch::Tensor& t, int dst, int tag, int64_t key) {
  checkPeer(dst);
  if (local(dst)) return local_->put(stage_, dst, tag, t.detach().clone());
  const int wireTag = linkTag(tag, stage_, dst);
  if (key < 0) return base_.send(t, rankOf_(dst), wireTag);
  base_.sendKeyed(t, rankOf_(dst), wireTag, key);
}

torch::Tensor ChunkComm::recvKeyed(int src, int tag, int64_t key) {
  checkPeer(src);
  if (local(src)) return local_->take(src, stage_, tag, timeoutS_);
  const int wireTag = linkTag(tag, src, stage_);
  return key < 0 ? base_.recv(rankOf_(src), wireTag) : base_.recvKeyed(rankOf_(src), wireTag, key);
}

bool ChunkComm::poll(int src, int tag) {
  checkPeer(src);
  if (local(src)) return local_->ready(src, stage_, tag);
  return base_.poll(rankOf_(src), linkTag(tag, src, stage_));
}

}  // namespace pm
