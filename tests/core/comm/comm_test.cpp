#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/comm/device_context.h"
#include "core/comm/gloo_comm.h"
#include "core/comm/in_process_comm.h"
#include "core/util/torch_compat.h"

using namespace pm;

namespace {

// Runs `body(comm, rank)` for ranks 0 and 1 as two threads over Gloo on 127.0.0.1; returns the
// first error ("" when both finished).
// `tweak` changes the options both ranks start from.
std::string onTwoRanks(const std::function<void(Communicator&, int)>& body,
                       const std::function<void(DistributedOptions&)>& tweak = {}) {
  const int port = findFreePort();
  std::string error;
  auto rank = [&](int r) {
    try {
      DistributedOptions o;
      o.rank = r;
      o.worldSize = 2;
      o.masterPort = port;
      o.timeoutS = 20;
      if (tweak) tweak(o);
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
  if (ncclAvailable()) GTEST_SKIP() << "this LibTorch has NCCL and a GPU is visible";
  DistributedOptions o;
  o.backend = "nccl";
  try {
    makeDistributedComm(o);
    FAIL();
  } catch (const CommError& e) {
    // Built without NCCL, or built with it on a machine without a GPU: each says which.
    EXPECT_NE(std::string(e.what()).find(compat::kNcclCompiled ? "no GPU is visible" : "without CUDA/NCCL"), std::string::npos)
        << e.what();
  }
}

// NCCL's message layout run on Gloo: headers on one group, payloads on a two-rank group per
// channel (tag and direction). Both ranks send every message toward each other
// before receiving any, with shapes that change from message to message (the header says each
// one), sizes from empty to 4 MiB, two tags in one direction: all arrive intact, in order.
TEST(GlooComm, PayloadChannelsCarryChangingShapesBothWaysAtOnce) {
  std::vector<torch::Tensor> down, up;
  for (int64_t n : {12, 0, 1 << 20, 3, 1 << 18, 7}) {
    down.push_back(n == 0 ? torch::empty({0, 4}) : torch::arange(n, torch::kFloat).view({1, -1}).mul(2));
    up.push_back(torch::arange(n + 5, torch::kDouble).neg());
  }
  down.push_back(torch::tensor({5, 6, 7}, torch::kLong).view({3, 1}));
  up.push_back(torch::ones({2, 3, 4}, torch::kHalf));
  std::vector<torch::Tensor> got0, got1;
  const std::string error = onTwoRanks(
      [&](Communicator& c, int r) {
        const auto& mine = r == 0 ? down : up;
        // Rank 0's last message goes with another tag (as evaluation activations do).
        for (size_t i = 0; i < mine.size(); ++i)
          c.send(mine[i], 1 - r, r == 0 ? (i + 1 == mine.size() ? kTagEval : kTagActivation) : kTagGradient);
        auto& got = r == 0 ? got0 : got1;
        const auto& theirs = r == 0 ? up : down;
        for (size_t i = 0; i < theirs.size(); ++i)
          got.push_back(c.recv(1 - r, r == 1 ? (i + 1 == theirs.size() ? kTagEval : kTagActivation) : kTagGradient));
        c.shutdown();
      },
      [](DistributedOptions& o) {
        o.timeoutS = 30;
        o.payloadChannelsOnGloo = true;
      });
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(got1.size(), down.size());
  ASSERT_EQ(got0.size(), up.size());
  for (size_t i = 0; i < down.size(); ++i) {
    EXPECT_EQ(got1[i].sizes(), down[i].sizes()) << i;
    EXPECT_EQ(got1[i].scalar_type(), down[i].scalar_type()) << i;
    EXPECT_TRUE(torch::equal(got1[i], down[i])) << i;
  }
  for (size_t i = 0; i < up.size(); ++i) {
    EXPECT_EQ(got0[i].sizes(), up[i].sizes()) << i;
    EXPECT_TRUE(torch::equal(got0[i], up[i])) << i;
  }
}

// Keyed messages on NCCL's layout (run on Gloo): a channel's header travels with the first message
// of each key only, later ones are the payload alone in the shape the key agreed. Both ranks send
// toward each other before receiving; an unkeyed message on another tag between them still brings
// its own header. Every tensor arrives intact and in order, and the headers counted are one per
// (channel, key) plus the unkeyed one.
TEST(GlooComm, KeyedMessagesSendTheirShapeOncePerKeyOnTheDeviceLayout) {
  const std::vector<int64_t> keys{4, 4, 3, 4, 3, 3, 4};
  auto message = [](int r, size_t i, int64_t key) {
    return torch::arange(key * 5, torch::kFloat).view({key, 5}).add(static_cast<double>(100 * r + i));
  };
  std::vector<torch::Tensor> got[2];
  int64_t headers[2] = {-1, -1};
  const std::string error = onTwoRanks(
      [&](Communicator& c, int r) {
        const int tag = r == 0 ? kTagActivation : kTagGradient;
        for (size_t i = 0; i < keys.size(); ++i) {
          c.sendKeyed(message(r, i, keys[i]), 1 - r, tag, keys[i]);
          if (r == 0 && i == 2) c.send(torch::ones({2, 2}), 1, kTagEval);
        }
        for (size_t i = 0; i < keys.size(); ++i) {
          got[r].push_back(c.recvKeyed(1 - r, r == 0 ? kTagGradient : kTagActivation, keys[i]));
          if (r == 1 && i == 2) got[r].push_back(c.recv(0, kTagEval));
        }
        c.finish();
        headers[r] = c.headersSent();
        c.shutdown();
      },
      [](DistributedOptions& o) { o.payloadChannelsOnGloo = true; });
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(got[0].size(), keys.size());
  ASSERT_EQ(got[1].size(), keys.size() + 1);
  for (size_t i = 0, j = 0; i < keys.size(); ++i, ++j) {
    EXPECT_TRUE(torch::equal(got[0][i], message(1, i, keys[i]))) << i;
    if (i == 3) {
      EXPECT_TRUE(torch::equal(got[1][j++], torch::ones({2, 2})));
    }
    EXPECT_TRUE(torch::equal(got[1][j], message(0, i, keys[i]))) << i;
  }
  EXPECT_EQ(headers[0], 3);  // keys 4 and 3 on the activation channel, and the unkeyed message
  EXPECT_EQ(headers[1], 2);  // keys 4 and 3 on the gradient channel
}

// On NCCL's layout a tag's payloads have a stream of their own: rank 0 sends an evaluation's
// message before two activations (as an asynchronous schedule may), rank 1 takes the activations
// first; each arrives whole, in its own shape (one stream per direction would hand the evaluation's
// bytes to the first activation's receive).
TEST(GlooComm, MessagesOfTwoTagsTakenInAnotherOrderThanSentArriveWhole) {
  const torch::Tensor eval = torch::arange(60, torch::kFloat).view({12, 5}), a0 = torch::full({4, 5}, 1.0), a1 = torch::full({3, 5}, 2.0);
  torch::Tensor got[3];
  const std::string error = onTwoRanks(
      [&](Communicator& c, int r) {
        if (r == 0) {
          c.send(eval, 1, kTagEval);
          c.sendKeyed(a0, 1, kTagActivation, 4);
          c.sendKeyed(a1, 1, kTagActivation, 3);
        } else {
          got[0] = c.recvKeyed(0, kTagActivation, 4);
          got[1] = c.recvKeyed(0, kTagActivation, 3);
          got[2] = c.recv(0, kTagEval);
        }
        c.finish();
        c.shutdown();
      },
      [](DistributedOptions& o) { o.payloadChannelsOnGloo = true; });
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_TRUE(torch::equal(got[0], a0));
  EXPECT_TRUE(torch::equal(got[1], a1));
  EXPECT_TRUE(torch::equal(got[2], eval));
}

// A keyed message whose shape differs from the one its key agreed cannot be sent without a header
// the receiver does not expect: the sender refuses it, naming both shapes.
TEST(GlooComm, AKeyedMessageOfAnotherShapeThanItsKeyAgreedIsRefused) {
  std::string refused;
  const std::string error = onTwoRanks(
      [&](Communicator& c, int r) {
        if (r == 1) {
          c.recvKeyed(0, kTagActivation, 4);
          return;
        }
        c.sendKeyed(torch::zeros({4, 5}), 1, kTagActivation, 4);
        try {
          c.sendKeyed(torch::zeros({4, 6}), 1, kTagActivation, 4);
        } catch (const CommError& e) {
          refused = e.what();
        }
      },
      [](DistributedOptions& o) { o.payloadChannelsOnGloo = true; });
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_NE(refused.find("[4, 6] where its channel agreed [4, 5]"), std::string::npos) << refused;
}

TEST(DeviceContext, AWorkerTakesTheEntryOfItsLocalRank) {
  const std::vector<std::string> cpus{"cpu", "cpu"};
  const DeviceContext none = resolveDeviceContext({}, 3, "rank 3");
  EXPECT_TRUE(none.device.is_cpu());
  const DeviceContext second = resolveDeviceContext(cpus, 1, "LOCAL_RANK=1");
  EXPECT_TRUE(second.device.is_cpu());
  EXPECT_EQ(second.localRank, 1);
  EXPECT_EQ(second.source, "execution.devices[1] (LOCAL_RANK=1)");
  // One entry serves every local rank.
  EXPECT_EQ(resolveDeviceContext({"cpu"}, 5, "rank 5").source, "execution.devices[0] (rank 5)");
  // A local rank without an entry (rank 2 of a node, but two entries) names the list and the rank.
  try {
    resolveDeviceContext(cpus, 2, "LOCAL_RANK=2");
    FAIL() << "local rank 2 of 2 entries accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("execution.devices"), std::string::npos) << what;
    EXPECT_NE(what.find("local rank is 2 (LOCAL_RANK=2)"), std::string::npos) << what;
  }
  try {
    resolveDeviceContext({"cpu", "gpu:1"}, 1, "rank 1");
    FAIL() << "gpu:1 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("execution.devices[1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a device"), std::string::npos) << e.what();
  }
  if (!torch::cuda::is_available()) {
    try {
      resolveDeviceContext({"cuda:1"}, 0, "rank 0");
      FAIL() << "cuda:1 accepted without a GPU";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("execution.devices[0]"), std::string::npos) << e.what();
    }
  }
}

TEST(DeviceContext, LocalRankComesFromTorchrunThenSlurmThenTheRank) {
  unsetenv("LOCAL_RANK");
  unsetenv("SLURM_LOCALID");
  std::string source;
  EXPECT_EQ(localRankFromEnv(4, &source), 4);
  EXPECT_EQ(source, "rank 4");
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_EQ(localRankFromEnv(4, &source), 1);
  EXPECT_EQ(source, "SLURM_LOCALID=1");
  setenv("LOCAL_RANK", "0", 1);  // torchrun's wins
  EXPECT_EQ(localRankFromEnv(4, &source), 0);
  EXPECT_EQ(source, "LOCAL_RANK=0");
  setenv("LOCAL_RANK", "one", 1);
  try {
    localRankFromEnv(4);
    FAIL() << "LOCAL_RANK=one accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("LOCAL_RANK"), std::string::npos) << e.what();
  }
  unsetenv("LOCAL_RANK");
  unsetenv("SLURM_LOCALID");
}

// What the binary says it is: the LibTorch it was compiled against (this test's own headers), the
// CUDA version exactly when CUDA is compiled in, and NCCL among the backends exactly then too.
TEST(DeviceContext, EngineBuildNamesTheTorchItWasCompiledAgainst) {
  const EngineBuild b = engineBuild();
  EXPECT_EQ(b.torch, std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                         std::to_string(TORCH_VERSION_PATCH));
  ASSERT_FALSE(b.backends.empty());
  EXPECT_EQ(b.backends[0], "gloo");
  const bool nccl = std::find(b.backends.begin(), b.backends.end(), "nccl") != b.backends.end();
#ifdef USE_C10D_NCCL
  EXPECT_TRUE(nccl);
  EXPECT_FALSE(b.cuda.empty());
#else
  EXPECT_FALSE(nccl);
  EXPECT_TRUE(b.cuda.empty());
#endif
  const EngineBuild back = engineBuildFromJson(engineBuildJson(b));
  EXPECT_EQ(back.torch, b.torch);
  EXPECT_EQ(back.cuda, b.cuda);
  EXPECT_EQ(back.backends, b.backends);
}

// A group that cannot form on loopback (here: rank 1 never comes, so rank 0 waits out its
// timeout) says where it failed and the two causes that look alike there: a rank that died, or
// another local process connecting to the run's ports, which Gloo takes as a peer's
// (docs/reliability.md, Security).
TEST(GlooComm, AGroupThatCannotFormOnLoopbackNamesBothCauses) {
  char dir[] = "/tmp/pipemare-comm-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  DistributedOptions o;
  o.rank = 0;
  o.worldSize = 2;
  o.timeoutS = 1;
  o.storeFile = std::string(dir) + "/store";
  try {
    makeDistributedComm(o);
    FAIL() << "a group of 2 formed with one rank";
  } catch (const CommError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot form the gloo process group"), std::string::npos) << what;
    EXPECT_NE(what.find("while the ranks connected on loopback: a rank that died, or another local process"), std::string::npos)
        << what;
  }
  std::filesystem::remove_all(dir);
}

// The stop protocol's premise: a control value put by one rank is visible to every other rank as
// soon as put returns (the last stage publishes the halt minibatch, then sends the gradient that
// lets stage 0 reach its check). The store's SET has no reply, so without a round trip a
// rank that got the message could ask the store before the store had read the SET (a halt at
// different minibatches: rank 1 then waits for a rank 0 that runs on into a receive).
TEST(GlooComm, AControlValueIsVisibleToTheOtherRankOnceItsPutReturns) {
  constexpr int kRounds = 2000;
  std::atomic<int> announced{-1};  // the message that follows each put (here a flag between threads)
  int missed = -1;
  const std::string error = onTwoRanks([&](Communicator& c, int r) {
    if (r == 1) {
      for (int i = 0; i < kRounds; ++i) {
        c.putControl("round/" + std::to_string(i), i);
        announced.store(i);
      }
      return;
    }
    missed = 0;
    for (int i = 0; i < kRounds; ++i) {
      while (announced.load() < i) std::this_thread::yield();
      int64_t v = -1;
      if (!c.getControl("round/" + std::to_string(i), v) || v != i) ++missed;
    }
  });
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(missed, 0) << "of " << kRounds << " values, put before the message that announced them";
}
