#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "core/planner/chrome_trace.h"
#include "core/planner/timeline_sim.h"
#include "core/util/errors.h"
#include "tests/support/test_support.h"

using namespace pm;

namespace {

ScheduleParams sched(ScheduleKind k, int P, int N, int64_t minibatches = 1, int u = 1) {
  ScheduleParams p;
  p.kind = k;
  p.stages = P;
  p.microbatches = N;
  p.minibatches = minibatches;
  p.update_interval = u;
  return p;
}

SimCosts uniform(int P, double f, double b) {
  SimCosts c;
  c.forward.assign(static_cast<size_t>(P), f);
  c.backward.assign(static_cast<size_t>(P), b);
  return c;
}

double endOf(const SimResult& r, int stage, const std::string& action, int64_t mb) {
  for (const auto& t : r.trace)
    if (t.stage == stage && t.action == action && t.mb == mb) return t.end;
  ADD_FAILURE() << "no " << action << mb << " at stage " << stage;
  return 0;
}

}  // namespace

TEST(TimelineSim, BalancedGPipeMatchesTheClosedForm) {
  for (int P : {1, 2, 4, 7})
    for (int N : {1, 4, 8}) {
      const double f = 1.0, b = 2.0;
      const auto r = simulateTimeline(sched(ScheduleKind::GPipe, P, N), uniform(P, f, b));
      EXPECT_NEAR(r.makespan, (N + P - 1) * (f + b), 1e-9) << "P=" << P << " N=" << N;
      const double u = static_cast<double>(N) / (N + P - 1);
      EXPECT_NEAR(r.meanUtilization, u, 1e-12);
      for (int s = 0; s < P; ++s) {
        EXPECT_NEAR(r.busy[static_cast<size_t>(s)], N * (f + b), 1e-9);
        EXPECT_NEAR(r.utilization[static_cast<size_t>(s)], u, 1e-12);
      }
    }
}

TEST(TimelineSim, OneFOneBHasTheSameBubbleAsGPipe) {
  const int P = 4, N = 8;
  const auto r = simulateTimeline(sched(ScheduleKind::OneFOneB, P, N), uniform(P, 1.0, 2.0));
  EXPECT_NEAR(r.makespan, (N + P - 1) * 3.0, 1e-9);
}

TEST(TimelineSim, LinkLatencyAndBandwidth) {
  // Each hop adds the latency once on the way forward and once on the way back.
  const int P = 4, N = 6;
  auto c = uniform(P, 1.0, 2.0);
  c.link.latency = 0.25;
  const auto r = simulateTimeline(sched(ScheduleKind::GPipe, P, N), c);
  EXPECT_NEAR(r.makespan, (N + P - 1) * 3.0 + 2 * (P - 1) * 0.25, 1e-9);
  // Two stages, one microbatch: F0, send (bytes/bandwidth), latency, F1, B1, send back, latency, B0.
  auto d = uniform(2, 1.0, 2.0);
  d.activationBytes = {1000, 0};
  d.gradientBytes = {0, 500};
  d.link = {0.1, 1000.0};
  const auto two = simulateTimeline(sched(ScheduleKind::GPipe, 2, 1), d);
  EXPECT_NEAR(two.makespan, 1 + 1.0 + 0.1 + 1 + 2 + 0.5 + 0.1 + 2, 1e-9);
  EXPECT_NEAR(endOf(two, 1, "recv_act", 0), 2.1, 1e-12);  // waited for the message
  EXPECT_NEAR(two.busy[0], 3.0, 1e-12);                   // sends and waits are not busy time
}

// A rendezvous link (Gloo): a message sent before its receive was posted still costs the latency
// at the receive; with a waiting receiver it is the same as the plain link.
TEST(TimelineSim, RendezvousLinkChargesEveryReceive) {
  auto c = uniform(2, 1.0, 1.0);
  c.link.latency = 0.5;
  const auto plain = simulateTimeline(sched(ScheduleKind::GPipe, 2, 2), c);
  c.link.rendezvous = true;
  const auto rdv = simulateTimeline(sched(ScheduleKind::GPipe, 2, 2), c);
  // Microbatch 0: stage 1 waits from t = 0; the activation is sent at t = 1: both end at 1.5.
  EXPECT_NEAR(endOf(plain, 1, "recv_act", 0), 1.5, 1e-12);
  EXPECT_NEAR(endOf(rdv, 1, "recv_act", 0), 1.5, 1e-12);
  // Microbatch 1: sent at t = 2, receive posted at t = 2.5 (after F0 on stage 1). The plain link
  // delivered it at 2.5; the rendezvous link needs until 2.5 + 0.5.
  EXPECT_NEAR(endOf(plain, 1, "recv_act", 1), 2.5, 1e-12);
  EXPECT_NEAR(endOf(rdv, 1, "recv_act", 1), 3.0, 1e-12);
  EXPECT_GT(rdv.makespan, plain.makespan);
}

TEST(TimelineSim, AsynchronousBalancedFillAndDrain) {
  const int P = 5, N = 4;
  const int64_t minibatches = 6, T = N * minibatches;
  const auto r = simulateTimeline(sched(ScheduleKind::PipeMare, P, N, minibatches, N), uniform(P, 1.0, 1.0));
  EXPECT_NEAR(r.meanUtilization, static_cast<double>(T) / static_cast<double>(T + P - 1), 1e-9);
}

TEST(TimelineSim, UnbalancedPipelineIsBoundByItsSlowestStage) {
  const int P = 4, N = 4;
  SimCosts c;
  c.forward = {1.0, 1.0, 3.0, 0.5};
  c.backward = {2.0, 2.0, 6.0, 1.0};  // stage 2 takes 9 per microbatch, the others at most 3
  for (auto k : {ScheduleKind::PipeMare, ScheduleKind::PipeDream}) {
    const auto r = simulateTimeline(sched(k, P, N, 20, k == ScheduleKind::PipeMare ? N : 1), c);
    // Steady state: one microbatch leaves the pipeline every max(f+b) = 9.
    const double period = (endOf(r, 0, "B", 60) - endOf(r, 0, "B", 40)) / 20.0;
    EXPECT_NEAR(period, 9.0, 1e-9) << scheduleName(k);
    EXPECT_NEAR(1.0 / period, 1.0 / 9.0, 1e-12);
    // The bottleneck stage is the busiest.
    EXPECT_GT(r.utilization[2], 0.95);
    EXPECT_LT(r.utilization[0], 0.4);
  }
}

TEST(TimelineSim, TraceRecordsAreSequentialPerStageInTheEnginesForm) {
  const int P = 3, N = 4;
  auto c = uniform(P, 1.0, 2.0);
  c.step = {0.5, 0.5, 0.5};
  const auto p = sched(ScheduleKind::OneFOneB, P, N, 2);
  const auto r = simulateTimeline(p, c);
  size_t actions = 0;
  for (int s = 0; s < P; ++s) actions += stageActions(p, s).size();
  EXPECT_EQ(r.trace.size(), actions);
  std::map<int, double> last;
  std::map<std::string, int> counts;
  for (const auto& t : r.trace) {
    EXPECT_GE(t.start, last[t.stage] - 1e-12);  // one action at a time
    EXPECT_GE(t.end, t.start);
    last[t.stage] = t.end;
    ++counts[t.action];
    if (t.action == "F") {
      EXPECT_NEAR(t.end - t.start, 1.0, 1e-12);
    }
    if (t.action == "S") {
      EXPECT_NEAR(t.end - t.start, 0.5, 1e-12);
    }
  }
  EXPECT_EQ(counts["F"], P * N * 2);
  EXPECT_EQ(counts["B"], P * N * 2);
  EXPECT_EQ(counts["S"], P * 2);
  EXPECT_EQ(counts["send_act"], (P - 1) * N * 2);
  EXPECT_EQ(counts["recv_grad"], (P - 1) * N * 2);
  const Json e = traceEvent(r.trace.front());
  EXPECT_EQ(e["type"], "trace");
  EXPECT_EQ(e["stage"], r.trace.front().stage);
  EXPECT_EQ(e["action"], r.trace.front().action);
  EXPECT_TRUE(e.contains("mb") && e.contains("start") && e.contains("end") && e.contains("v"));
}

TEST(TimelineSim, DeadlockAndBadCostsAreReported) {
  // Stage 1 waits for a gradient nobody sends.
  std::vector<std::vector<Action>> lists = {
      {{ActionKind::Forward, 0}, {ActionKind::SendAct, 0}},
      {{ActionKind::RecvAct, 0}, {ActionKind::Forward, 0}, {ActionKind::RecvAct, 1}}};
  try {
    simulateTimeline(lists, uniform(2, 1, 1));
    FAIL() << "expected a deadlock";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("stage 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(simulateTimeline(sched(ScheduleKind::GPipe, 3, 2), uniform(2, 1, 1)), std::invalid_argument);
  EXPECT_THROW(simulateTimeline(sched(ScheduleKind::GPipe, 2, 2), uniform(2, -1, 1)), std::invalid_argument);
}

TEST(ChromeTrace, WritesParsableTraceEvents) {
  const int P = 3, N = 2;
  const auto r = simulateTimeline(sched(ScheduleKind::PipeMare, P, N, 2, N), uniform(P, 0.001, 0.002));
  const pm::test::TempDir tmp;
  const std::string path = tmp.file("planner_trace.json");
  writeChromeTrace(path, r.trace, "test");
  const Json j = Json::parse(pm::test::readFile(path));  // throws if it does not parse
  ASSERT_TRUE(j.contains("traceEvents"));
  size_t complete = 0;
  bool sawF0 = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++complete;
    EXPECT_EQ(e["pid"], e["tid"]);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["name"] == "F0" && e["pid"] == 0) {
      sawF0 = true;
      EXPECT_NEAR(e["ts"].get<double>(), 0.0, 1e-9);
      EXPECT_NEAR(e["dur"].get<double>(), 1000.0, 1e-6);  // 1 ms in microseconds
    }
  }
  EXPECT_EQ(complete, r.trace.size());
  EXPECT_TRUE(sawF0);
  EXPECT_THROW(writeChromeTrace("/nonexistent-dir/x/trace.json", r.trace), Error);
}

// The chunked schedules never deadlock: interleaved 1F1B (v = 2 and 3) for P <= 8, N <= 64 with
// N % P == 0, and ZB-V for P <= 8, N <= 64, N < 2P-1 included, finish in the op-list simulation
// with a message cost, every rank busy for exactly its share.
TEST(SimulateOps, ChunkedSchedulesFinishWithoutDeadlock) {
  pm::OpCosts c;
  c.forward = 1;
  c.backwardInput = 1.5;
  c.backwardWeight = 0.5;
  c.comm = 0.25;
  for (int P = 1; P <= 8; ++P)
    for (int N = 1; N <= 64; N += (N < 16 ? 1 : 9)) {
      std::vector<std::vector<pm::Action>> v;
      for (int r = 0; r < P; ++r) v.push_back(pm::zbVActions(P, N, r));
      pm::SimResult zbv;
      ASSERT_NO_THROW(zbv = pm::simulateOps(v, 2 * P, 2, [&](int r, int ch) { return pm::zbVStage(P, r, ch); }, c))
          << "zb-v P=" << P << " N=" << N;
      for (double b : zbv.busy) EXPECT_NEAR(b, N * 3.0, 1e-9);
      if (N % P != 0) continue;
      for (int chunks : {2, 3}) {
        std::vector<std::vector<pm::Action>> il;
        for (int r = 0; r < P; ++r) il.push_back(pm::interleaved1F1BActions(P, N, chunks, r));
        ASSERT_NO_THROW(pm::simulateOps(il, chunks * P, chunks, [&](int r, int ch) { return pm::interleavedStage(P, r, ch); }, c))
            << "interleaved v=" << chunks << " P=" << P << " N=" << N;
      }
    }
}
