#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "core/comm/gloo_comm.h"
#include "core/comm/in_process_comm.h"

using namespace pm;

namespace {

// Runs `body(comm, rank)` for ranks 0 and 1 as two threads over Gloo on 127.0.0.1; returns the
// first error ("" when both finished).
std::string onTwoRanks(const std::function<void(Communicator&, int)>& body) {
  const int port = findFreePort();
  std::string error;
  auto rank = [&](int r) {
    try {
      DistributedOptions o;
      o.rank = r;
      o.worldSize = 2;
      o.masterPort = port;
      o.timeoutS = 20;
      auto c = makeDistributedComm(o);
      body(*c, r);
      c->finish();
    } catch (const std::exception& ex) {
      error = ex.what();
    }
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  return error;
}

}  // namespace

TEST(InProcessComm, FifoPerTagWithShapesAndCopies) {
  auto hub = std::make_shared<InProcessHub>(2);
  InProcessComm a(hub, 0), b(hub, 1, 0.2);
  auto t = torch::arange(6, torch::kFloat).view({2, 3});
  a.send(t, 1, kTagActivation);
  a.send(torch::ones({1}), 1, kTagActivation);
  a.send(torch::full({4}, 7, torch::kLong), 1, kTagEval);
  t.zero_();  // the receiver must not see the sender's later changes
  EXPECT_TRUE(b.poll(0, kTagEval));
  EXPECT_FALSE(b.poll(0, kTagGradient));
  auto e = b.recv(0, kTagEval);
  EXPECT_EQ(e.scalar_type(), torch::kLong);
  auto first = b.recv(0, kTagActivation);
  EXPECT_EQ(first.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(first[1][2].item<float>(), 5.0f);
  EXPECT_EQ(b.recv(0, kTagActivation).numel(), 1);
  EXPECT_THROW(b.recv(0, kTagActivation), CommError);  // times out with a clear error
}

// Two ranks as threads over Gloo on 127.0.0.1: shapes and dtypes travel with the tensors.
TEST(GlooComm, PointToPointBetweenTwoRanks) {
  torch::Tensor got1, got2;
  const std::string error = onTwoRanks([&](Communicator& c, int r) {
    if (r == 0) {
      c.send(torch::arange(12, torch::kFloat).view({3, 4}), 1, kTagActivation);
      c.send(torch::tensor({5, 6, 7}, torch::kLong), 1, kTagActivation);
      got2 = c.recv(1, kTagGradient);
    } else {
      got1 = c.recv(0, kTagActivation);
      auto second = c.recv(0, kTagActivation);
      EXPECT_EQ(second.scalar_type(), torch::kLong);
      EXPECT_EQ(second[2].item<int64_t>(), 7);
      c.send(torch::full({2, 1, 5}, 3.0), 0, kTagGradient);
    }
  });
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(got1.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(got1[2][3].item<float>(), 11.0f);
  EXPECT_EQ(got2.sizes(), (std::vector<int64_t>{2, 1, 5}));
}

// The receiver keeps its next receive posted with the channel's capacity: messages that grow past
// it (sent in two parts), shrink below it (one part, shorter than the posted buffer), match it
// exactly, or carry nothing all arrive intact and in order, in both directions.
TEST(GlooComm, MessagesAcrossThePostedCapacityArriveIntactAndInOrder) {
  std::vector<torch::Tensor> sent;
  for (int64_t n : {12, 3, 1000, 7, 1000, 0, 4000, 1, 999})
    sent.push_back(torch::arange(n, torch::kFloat).mul(n % 7 + 1));
  sent.push_back(torch::tensor({5, 6, 7}, torch::kLong).view({3, 1}));
  std::vector<torch::Tensor> got0, got1;
  const std::string error = onTwoRanks([&](Communicator& c, int r) {
    const int peer = 1 - r;
    for (size_t i = 0; i < sent.size(); ++i) {
      // Rank 0 sends first; rank 1 echoes each message back doubled.
      if (r == 0) {
        c.send(sent[i], peer, kTagActivation);
        got0.push_back(c.recv(peer, kTagGradient));
      } else {
        auto m = c.recv(peer, kTagActivation);
        got1.push_back(m);
        c.send(m * 2, peer, kTagGradient);
      }
    }
  });
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(got1.size(), sent.size());
  ASSERT_EQ(got0.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got1[i].sizes(), sent[i].sizes()) << i;
    EXPECT_EQ(got1[i].scalar_type(), sent[i].scalar_type()) << i;
    EXPECT_TRUE(torch::equal(got1[i], sent[i])) << i;
    EXPECT_TRUE(torch::equal(got0[i], sent[i] * 2)) << i;
  }
}

TEST(GlooComm, NcclWithoutCudaIsAClearError) {
  if (ncclAvailable()) GTEST_SKIP() << "this LibTorch has NCCL";
  DistributedOptions o;
  o.backend = "nccl";
  try {
    makeDistributedComm(o);
    FAIL();
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("without CUDA/NCCL"), std::string::npos) << e.what();
  }
}
