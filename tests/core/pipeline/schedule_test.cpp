// Schedules against literal tables written by hand from the definitions in schedule.h, plus the
// checker (no deadlock over a grid of P and N, and that it does catch broken lists) and the delays.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/pipeline/schedule.h"

using namespace pm;

namespace {

std::string nameOf(ScheduleKind k) { return scheduleDecl(k).name; }


ScheduleParams params(ScheduleKind kind, int P, int N, int64_t minibatches, int updateInterval = 1) {
  ScheduleParams p;
  p.kind = kind;
  p.stages = P;
  p.microbatches = N;
  p.minibatches = minibatches;
  p.update_interval = updateInterval;
  return p;
}

std::vector<std::string> table(const ScheduleParams& p, bool withComm = false) {
  std::vector<std::string> rows;
  for (int s = 0; s < p.stages; ++s) rows.push_back(actionsToString(stageActions(p, s), withComm));
  return rows;
}

using Rows = std::vector<std::string>;

}  // namespace

TEST(ScheduleDecls, EachScheduleIsDeclaredOnceWithItsTraits) {
  std::set<std::string> names;
  std::set<ScheduleKind> kinds;
  for (const auto& d : scheduleDecls()) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_TRUE(kinds.insert(d.kind).second) << d.name;
    EXPECT_EQ(scheduleDecl(d.kind).name, std::string(d.name));
    EXPECT_NE(d.generate, nullptr) << d.name;
    // Only the asynchronous schedules hold weight versions or take the asynchronous fields.
    if (d.synchronous) {
      EXPECT_EQ(d.weights, WeightFamily::Current) << d.name;
      EXPECT_FALSE(d.takesUpdateInterval || d.takesTiming || d.takesPipeMare) << d.name;
    }
    // Several chunks per rank: a placement and a rank order, and only synchronous (so far).
    EXPECT_EQ(d.chunks != 1, d.placement != nullptr) << d.name;
    EXPECT_EQ(d.chunks != 1, d.rankGenerate != nullptr) << d.name;
    if (d.chunks != 1) {
      EXPECT_TRUE(d.synchronous) << d.name;
    }
  }
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(scheduleChunks(ScheduleKind::ZBV, 5), 2);
  EXPECT_EQ(scheduleChunks(ScheduleKind::Interleaved1F1B, 3), 3);
  EXPECT_EQ(scheduleChunks(ScheduleKind::OneFOneB, 3), 1);
  EXPECT_TRUE(takesChunks(ScheduleKind::Interleaved1F1B));
  EXPECT_FALSE(takesChunks(ScheduleKind::ZBV));
  EXPECT_EQ(std::string(scheduleDecl(ScheduleKind::ZBH1).name), "zb-h1");
  EXPECT_TRUE(scheduleDecl(ScheduleKind::ZBH1).splitBackward);
  EXPECT_FALSE(scheduleDecl(ScheduleKind::OneFOneB).splitBackward);
  EXPECT_THROW(scheduleDecl(static_cast<ScheduleKind>(99)), std::invalid_argument);
  EXPECT_FALSE(isAsynchronous(ScheduleKind::GPipe));
  EXPECT_FALSE(isAsynchronous(ScheduleKind::OneFOneB));
  EXPECT_FALSE(isAsynchronous(ScheduleKind::ZBH1));
  EXPECT_TRUE(isAsynchronous(ScheduleKind::PipeDream));
  EXPECT_TRUE(isAsynchronous(ScheduleKind::PipeDream2BW));
  EXPECT_TRUE(isAsynchronous(ScheduleKind::PipeMare));
  EXPECT_EQ(scheduleNamesWhere([](const ScheduleDecl& d) { return d.takesTiming; }), "pipedream or pipemare");
  EXPECT_EQ(scheduleNamesWhere([](const ScheduleDecl& d) { return !d.synchronous; }, "and"), "pipedream, pipedream-2bw and pipemare");
}

// stageActions runs the declared generator: zb-h1's lists are zbH1Actions'.
TEST(ScheduleDecls, StageActionsRunsTheDeclaredGenerator) {
  ScheduleParams p;
  p.kind = ScheduleKind::ZBH1;
  p.stages = 4;
  p.microbatches = 8;
  p.minibatches = 2;
  for (int s = 0; s < 4; ++s) EXPECT_EQ(stageActions(p, s), zbH1Actions(4, 8, 2, s));
  EXPECT_TRUE(checkSchedule(p).ok) << checkSchedule(p).detail;
}

TEST(ScheduleActions, InvalidParametersThrow) {
  EXPECT_THROW(stageActions(params(ScheduleKind::GPipe, 0, 1, 1), 0), std::invalid_argument);
  EXPECT_THROW(stageActions(params(ScheduleKind::GPipe, 2, 0, 1), 0), std::invalid_argument);
  EXPECT_THROW(stageActions(params(ScheduleKind::GPipe, 2, 1, 0), 0), std::invalid_argument);
  EXPECT_THROW(stageActions(params(ScheduleKind::GPipe, 2, 1, 1), 2), std::invalid_argument);
  EXPECT_THROW(stageActions(params(ScheduleKind::GPipe, 2, 1, 1), -1), std::invalid_argument);
  EXPECT_THROW(stageActions(params(ScheduleKind::PipeMare, 2, 1, 1, 0), 0), std::invalid_argument);
  // gpipe/1f1b ignore update_interval.
  EXPECT_NO_THROW(stageActions(params(ScheduleKind::OneFOneB, 2, 1, 1, 0), 0));
}

TEST(ScheduleActions, ToStringForms) {
  std::vector<Action> a = {{ActionKind::RecvAct, 0}, {ActionKind::Forward, 0},  {ActionKind::SendAct, 0},
                           {ActionKind::RecvGrad, 0}, {ActionKind::Backward, 0}, {ActionKind::SendGrad, 0},
                           {ActionKind::Step, 0}};
  EXPECT_EQ(actionsToString(a), "F0 B0 S0");
  EXPECT_EQ(actionsToString(a, true), "rA0 F0 sA0 rG0 B0 sG0 S0");
  EXPECT_EQ(actionsToString({}), "");
  EXPECT_EQ(actionToString({ActionKind::Step, 12}), "S12");
}

// ---- gpipe: per minibatch all F, then all B in reverse, then Step. ----
TEST(ScheduleTables, GPipe) {
  EXPECT_EQ(table(params(ScheduleKind::GPipe, 2, 3, 1)), (Rows{"F0 F1 F2 B2 B1 B0 S0", "F0 F1 F2 B2 B1 B0 S0"}));
  EXPECT_EQ(table(params(ScheduleKind::GPipe, 3, 2, 2)),
            (Rows{"F0 F1 B1 B0 S0 F2 F3 B3 B2 S1", "F0 F1 B1 B0 S0 F2 F3 B3 B2 S1", "F0 F1 B1 B0 S0 F2 F3 B3 B2 S1"}));
  EXPECT_EQ(table(params(ScheduleKind::GPipe, 1, 2, 1), true), (Rows{"F0 F1 B1 B0 S0"}));
}

TEST(ScheduleTables, GPipeWithComm) {
  EXPECT_EQ(table(params(ScheduleKind::GPipe, 2, 2, 1), true),
            (Rows{"F0 sA0 F1 sA1 rG1 B1 rG0 B0 S0", "rA0 F0 rA1 F1 B1 sG1 B0 sG0 S0"}));
  EXPECT_EQ(table(params(ScheduleKind::GPipe, 3, 1, 1), true),
            (Rows{"F0 sA0 rG0 B0 S0", "rA0 F0 sA0 rG0 B0 sG0 S0", "rA0 F0 B0 sG0 S0"}));
}

// ---- 1f1b: per minibatch min(P-1-s, N) warm-up F, then F,B alternating, then remaining B, Step. ----
TEST(ScheduleTables, OneFOneB) {
  // P=3 N=4: warm-up 2, 1, 0.
  EXPECT_EQ(table(params(ScheduleKind::OneFOneB, 3, 4, 1)),
            (Rows{"F0 F1 F2 B0 F3 B1 B2 B3 S0", "F0 F1 B0 F2 B1 F3 B2 B3 S0", "F0 B0 F1 B1 F2 B2 F3 B3 S0"}));
  // P=4 N=2, two minibatches: warm-up min(3,2)=2, min(2,2)=2, 1, 0; a flush per minibatch.
  EXPECT_EQ(table(params(ScheduleKind::OneFOneB, 4, 2, 2)),
            (Rows{"F0 F1 B0 B1 S0 F2 F3 B2 B3 S1", "F0 F1 B0 B1 S0 F2 F3 B2 B3 S1", "F0 F1 B0 B1 S0 F2 F3 B2 B3 S1",
                  "F0 B0 F1 B1 S0 F2 B2 F3 B3 S1"}));
  EXPECT_EQ(table(params(ScheduleKind::OneFOneB, 1, 3, 1)), (Rows{"F0 B0 F1 B1 F2 B2 S0"}));
}

TEST(ScheduleTables, OneFOneBWithComm) {
  EXPECT_EQ(table(params(ScheduleKind::OneFOneB, 2, 2, 1), true),
            (Rows{"F0 sA0 F1 sA1 rG0 B0 rG1 B1 S0", "rA0 F0 B0 sG0 rA1 F1 B1 sG1 S0"}));
}

// ---- asynchronous: one continuous 1F1B over minibatches*N, Step every update_interval backwards. ----
TEST(ScheduleTables, PipeMare) {
  // P=2 N=2, 2 minibatches, update every N=2 backwards.
  EXPECT_EQ(table(params(ScheduleKind::PipeMare, 2, 2, 2, 2)),
            (Rows{"F0 F1 B0 F2 B1 S0 F3 B2 B3 S1", "F0 B0 F1 B1 S0 F2 B2 F3 B3 S1"}));
  EXPECT_EQ(table(params(ScheduleKind::PipeMare, 3, 2, 2, 2)),
            (Rows{"F0 F1 F2 B0 F3 B1 S0 B2 B3 S1", "F0 F1 B0 F2 B1 S0 F3 B2 B3 S1", "F0 B0 F1 B1 S0 F2 B2 F3 B3 S1"}));
}

TEST(ScheduleTables, PipeMareWithComm) {
  EXPECT_EQ(table(params(ScheduleKind::PipeMare, 2, 1, 2, 1), true),
            (Rows{"F0 sA0 F1 sA1 rG0 B0 S0 rG1 B1 S1", "rA0 F0 B0 sG0 S0 rA1 F1 B1 sG1 S1"}));
}

TEST(ScheduleTables, PipeDream) {
  // update_interval 1: a Step after every backward.
  EXPECT_EQ(table(params(ScheduleKind::PipeDream, 3, 2, 2, 1)),
            (Rows{"F0 F1 F2 B0 S0 F3 B1 S1 B2 S2 B3 S3", "F0 F1 B0 S0 F2 B1 S1 F3 B2 S2 B3 S3",
                  "F0 B0 S0 F1 B1 S1 F2 B2 S2 F3 B3 S3"}));
  // update_interval 4 over 6 microbatches: one regular Step, then a final Step for the 2 left over.
  EXPECT_EQ(table(params(ScheduleKind::PipeDream, 2, 3, 2, 4)),
            (Rows{"F0 F1 B0 F2 B1 F3 B2 F4 B3 S0 F5 B4 B5 S1", "F0 B0 F1 B1 F2 B2 F3 B3 S0 F4 B4 F5 B5 S1"}));
  // Fewer microbatches than the warm-up depth: warm-up min(P-1-s, total).
  EXPECT_EQ(table(params(ScheduleKind::PipeDream, 4, 1, 1, 1)), (Rows{"F0 B0 S0", "F0 B0 S0", "F0 B0 S0", "F0 B0 S0"}));
}

TEST(ScheduleTables, PipeDream2BW) {
  // m = 2.
  EXPECT_EQ(table(params(ScheduleKind::PipeDream2BW, 2, 3, 2, 2)),
            (Rows{"F0 F1 B0 F2 B1 S0 F3 B2 F4 B3 S1 F5 B4 B5 S2", "F0 B0 F1 B1 S0 F2 B2 F3 B3 S1 F4 B4 F5 B5 S2"}));
  // m = 3 >= P = 3, N = 1, 4 minibatches: a final Step after the one left-over backward.
  EXPECT_EQ(table(params(ScheduleKind::PipeDream2BW, 3, 1, 4, 3)),
            (Rows{"F0 F1 F2 B0 F3 B1 B2 S0 B3 S1", "F0 F1 B0 F2 B1 F3 B2 S0 B3 S1", "F0 B0 F1 B1 F2 B2 S0 F3 B3 S1"}));
}

// ---- the checker ----
TEST(ScheduleCheck, HandCountedTicks) {
  // P=1: three actions, three ticks.
  auto c1 = checkSchedule(params(ScheduleKind::GPipe, 1, 1, 1));
  EXPECT_TRUE(c1.ok) << c1.detail;
  EXPECT_EQ(c1.rounds, 3);
  // P=2 N=1 gpipe, a message is receivable in the tick after its send:
  // t0 s0:F0 | t1 s0:sA0 | t2 s1:rA0 | t3 s1:F0 | t4 s1:B0 | t5 s1:sG0 | t6 s1:S0 and s0:rG0 |
  // t7 s0:B0 | t8 s0:S0 -> 9 ticks.
  auto c2 = checkSchedule(params(ScheduleKind::GPipe, 2, 1, 1));
  EXPECT_TRUE(c2.ok) << c2.detail;
  EXPECT_EQ(c2.rounds, 9);
}

TEST(ScheduleCheck, NoDeadlockOverTheGrid) {
  // Every schedule, P in 1..16, N in 1..64 (sync: 2 minibatches; async: 3).
  // update_interval: pipedream 1, pipedream-2bw m = P, pipemare N.
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::PipeDream, ScheduleKind::PipeDream2BW,
                    ScheduleKind::PipeMare}) {
    for (int P = 1; P <= 16; ++P) {
      for (int N = 1; N <= 64; ++N) {
        const bool async = isAsynchronous(kind);
        int ui = 1;
        if (kind == ScheduleKind::PipeDream2BW) ui = P;
        if (kind == ScheduleKind::PipeMare) ui = N;
        auto c = checkSchedule(params(kind, P, N, async ? 3 : 2, ui));
        ASSERT_TRUE(c.ok) << nameOf(kind) << " P=" << P << " N=" << N << ": " << c.detail;
      }
    }
  }
}

TEST(ScheduleCheck, NoDeadlockWithOddUpdateIntervals) {
  for (int P = 1; P <= 8; ++P)
    for (int N = 1; N <= 8; ++N)
      for (int ui = 1; ui <= 9; ++ui) {
        auto c = checkSchedule(params(ScheduleKind::PipeDream, P, N, 3, ui));
        ASSERT_TRUE(c.ok) << "P=" << P << " N=" << N << " ui=" << ui << ": " << c.detail;
      }
}

namespace {
std::vector<std::vector<Action>> lists(const ScheduleParams& p) {
  std::vector<std::vector<Action>> l;
  for (int s = 0; s < p.stages; ++s) l.push_back(stageActions(p, s));
  return l;
}
}  // namespace

TEST(ScheduleCheck, ReportsCyclicWaitAsDeadlock) {
  // gpipe P=2 N=1, stage 0: "F0 sA0 rG0 B0 S0" -> swap sA0 and rG0: stage 0 waits for a gradient that
  // needs the activation it has not sent yet.
  auto l = lists(params(ScheduleKind::GPipe, 2, 1, 1));
  ASSERT_EQ(actionsToString(l[0], true), "F0 sA0 rG0 B0 S0");
  std::swap(l[0][1], l[0][2]);
  auto c = checkSchedule(l, 1);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.detail.find("deadlock"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("stage 0 waits at rG0"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("stage 1 waits at rA0"), std::string::npos) << c.detail;
}

TEST(ScheduleCheck, ReportsWrongWarmUpAsDeadlock) {
  // 1f1b P=3 N=2 with stage 1 doing no warm-up and stage 2 doing one forward of warm-up: stage 1 waits
  // for the gradient of 0, stage 2 for the activation of 1 (sent by stage 1 only after B0).
  std::vector<std::vector<Action>> l = {
      stageActions(params(ScheduleKind::OneFOneB, 3, 2, 1), 0),
      {{ActionKind::RecvAct, 0}, {ActionKind::Forward, 0}, {ActionKind::SendAct, 0}, {ActionKind::RecvGrad, 0},
       {ActionKind::Backward, 0}, {ActionKind::SendGrad, 0}, {ActionKind::RecvAct, 1}, {ActionKind::Forward, 1},
       {ActionKind::SendAct, 1}, {ActionKind::RecvGrad, 1}, {ActionKind::Backward, 1}, {ActionKind::SendGrad, 1},
       {ActionKind::Step, 0}},
      {{ActionKind::RecvAct, 0}, {ActionKind::Forward, 0}, {ActionKind::RecvAct, 1}, {ActionKind::Forward, 1},
       {ActionKind::Backward, 0}, {ActionKind::SendGrad, 0}, {ActionKind::Backward, 1}, {ActionKind::SendGrad, 1},
       {ActionKind::Step, 0}}};
  auto c = checkSchedule(l, 2);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.detail.find("deadlock"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("stage 1 waits at rG0"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("stage 2 waits at rA1"), std::string::npos) << c.detail;
}

TEST(ScheduleCheck, ReportsOutOfOrderReceive) {
  // gpipe P=2 N=2; stage 1 receives 1 before 0 while stage 0 sends 0 first.
  auto l = lists(params(ScheduleKind::GPipe, 2, 2, 1));
  ASSERT_EQ(actionsToString(l[1], true), "rA0 F0 rA1 F1 B1 sG1 B0 sG0 S0");
  l[1][0].mb = 1;
  l[1][1].mb = 1;
  l[1][2].mb = 0;
  l[1][3].mb = 0;
  auto c = checkSchedule(l, 2);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.detail.find("delivers microbatch 0"), std::string::npos) << c.detail;
}

TEST(ScheduleCheck, ReportsMissingAndMisorderedWork) {
  // Backward before forward.
  std::vector<std::vector<Action>> l = {{{ActionKind::Backward, 0}, {ActionKind::Forward, 0}, {ActionKind::Step, 0}}};
  auto c = checkSchedule(l, 1);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.detail.find("backward before its forward"), std::string::npos) << c.detail;
  // A microbatch never processed.
  l = {{{ActionKind::Forward, 0}, {ActionKind::Backward, 0}, {ActionKind::Step, 0}}};
  c = checkSchedule(l, 2);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.detail.find("never executes F1"), std::string::npos) << c.detail;
  // Processed twice.
  l = {{{ActionKind::Forward, 0}, {ActionKind::Backward, 0}, {ActionKind::Forward, 0}, {ActionKind::Step, 0}}};
  c = checkSchedule(l, 1);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.detail.find("duplicate"), std::string::npos) << c.detail;
  // Stage 0 cannot receive an activation.
  auto l2 = lists(params(ScheduleKind::GPipe, 2, 1, 1));
  l2[0].insert(l2[0].begin(), Action{ActionKind::RecvAct, 0});
  c = checkSchedule(l2, 1);
  EXPECT_FALSE(c.ok);
  // Step indices must count 0, 1, 2, ...
  l = {{{ActionKind::Forward, 0}, {ActionKind::Backward, 0}, {ActionKind::Step, 1}}};
  c = checkSchedule(l, 1);
  EXPECT_FALSE(c.ok);
}

// ---- observed delays ----
TEST(ScheduleDelay, HandLists) {
  // "F0 F1 F2 B0 S0 F3 B1 S1 B2 S2 B3 S3": F2 .. B2 spans S0, S1.
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeDream, 3, 2, 2, 1), 0)), 2);
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeDream, 3, 2, 2, 1), 1)), 1);
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeDream, 3, 2, 2, 1), 2)), 0);
  EXPECT_EQ(maxObservedDelay({}), 0);
}

TEST(ScheduleDelay, StaleMicrobatchesAreThoseWithAStepBetweenForwardAndBackward) {
  // "F0 F1 B0 F2 B1 S0 F3 B2 B3 S1": only F2 .. B2 spans a step.
  EXPECT_EQ(staleMicrobatches(stageActions(params(ScheduleKind::PipeMare, 2, 2, 2, 2), 0)), (std::vector<int64_t>{2}));
  EXPECT_TRUE(staleMicrobatches(stageActions(params(ScheduleKind::PipeMare, 2, 2, 2, 2), 1)).empty());
  // "F0 F1 F2 B0 S0 F3 B1 S1 B2 S2 B3 S3": all but microbatch 0.
  EXPECT_EQ(staleMicrobatches(stageActions(params(ScheduleKind::PipeDream, 3, 2, 2, 1), 0)), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(staleMicrobatches(stageActions(params(ScheduleKind::GPipe, 3, 4, 2), 0)).empty());
}

TEST(ScheduleDelay, SynchronousSchedulesHaveNone) {
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int P = 1; P <= 8; ++P)
      for (int N = 1; N <= 8; ++N)
        for (int s = 0; s < P; ++s)
          EXPECT_EQ(maxObservedDelay(stageActions(params(kind, P, N, 4), s)), 0)
              << nameOf(kind) << " P=" << P << " N=" << N << " s=" << s;
}

TEST(ScheduleDelay, PipeDreamMatchesSoftware1F1B) {
  // Update per microbatch: tau_i = P - i (1-based i) = P-1-s.
  for (int P = 1; P <= 12; ++P)
    for (int N = 1; N <= 4; ++N)
      for (int s = 0; s < P; ++s)
        EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeDream, P, N, 2 * P + 2, 1), s)), P - 1 - s)
            << "P=" << P << " N=" << N << " s=" << s;
}

// Derivation (by hand). At stage s with w = P-1-s warm-up forwards and T >= w microbatches, the list is
// F0..F(w-1), then pairs (F(w+k), B(k)) and the cool-down. B's come in microbatch order and Step j
// follows B(j*u + u-1) (u = update_interval). For j >= w, F(j) comes just before B(j-w), so the backwards
// between F(j) and B(j) are exactly B(j-w) .. B(j-1): w consecutive ones, and the steps between are the
// multiples of u in [j-w+1, j]. A window of w consecutive integers holds floor(w/u) or ceil(w/u) of them;
// ceil(w/u) is reached with j = w+u-1, i.e. once T >= w+u. For j < w the count is floor(j/u) <= ceil(w/u).
// Hence, in steady state, tau_s = ceil((P-1-s)/u): pipemare (u = N) ceil((P-1-s)/N); pipedream-2bw with
// m >= P: 1 on every stage but the last (0 there); pipedream u = 1: P-1-s.
static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

TEST(ScheduleDelay, PipeMareIsCeilOfDepthOverN) {
  for (int P = 1; P <= 16; ++P)
    for (int N = 1; N <= 8; ++N)
      for (int s = 0; s < P; ++s)
        EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeMare, P, N, P + 2, N), s)),
                  ceilDiv(P - 1 - s, N))
            << "P=" << P << " N=" << N << " s=" << s;
  // Literal spot values: P=8, N=3 -> stage 0: ceil(7/3)=3; stage 4: ceil(3/3)=1; stage 5: ceil(2/3)=1.
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeMare, 8, 3, 10, 3), 0)), 3);
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeMare, 8, 3, 10, 3), 4)), 1);
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeMare, 8, 3, 10, 3), 5)), 1);
  EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeMare, 8, 3, 10, 3), 7)), 0);
}

TEST(ScheduleDelay, AnyUpdateInterval) {
  for (int P = 1; P <= 10; ++P)
    for (int u = 1; u <= 6; ++u)
      for (int s = 0; s < P; ++s)
        EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeDream, P, 2, P + u + 2, u), s)),
                  ceilDiv(P - 1 - s, u))
            << "P=" << P << " u=" << u << " s=" << s;
}

TEST(ScheduleDelay, PipeDream2BWIsOne) {
  for (int P = 1; P <= 10; ++P)
    for (int s = 0; s < P; ++s)
      EXPECT_EQ(maxObservedDelay(stageActions(params(ScheduleKind::PipeDream2BW, P, 4, 2 * P + 2, P), s)),
                s < P - 1 ? 1 : 0)
          << "P=" << P << " s=" << s;
}

// Warm-up: gpipe for the first minibatch, then pipemare; ids and steps continue across the switch.
TEST(ScheduleWarmup, GPipeThenPipeMareLiteral) {
  ScheduleParams p;
  p.kind = ScheduleKind::PipeMare;
  p.stages = 2;
  p.microbatches = 2;
  p.minibatches = 3;
  p.update_interval = 2;
  EXPECT_EQ(actionsToString(stageActionsWithWarmup(p, ScheduleKind::GPipe, 1, 0)),
            "F0 F1 B1 B0 S0 F2 F3 B2 F4 B3 S1 F5 B4 B5 S2");
  EXPECT_EQ(actionsToString(stageActionsWithWarmup(p, ScheduleKind::GPipe, 1, 1)),
            "F0 F1 B1 B0 S0 F2 B2 F3 B3 S1 F4 B4 F5 B5 S2");
  // Zero warm-up is the plain schedule; the composed lists never deadlock.
  EXPECT_EQ(stageActionsWithWarmup(p, ScheduleKind::OneFOneB, 0, 0), stageActions(p, 0));
  for (int P = 1; P <= 8; ++P)
    for (int N : {1, 2, 4, 8}) {
      p.stages = P;
      p.microbatches = N;
      p.update_interval = N;
      p.minibatches = 4;
      std::vector<std::vector<Action>> lists;
      for (int s = 0; s < P; ++s) lists.push_back(stageActionsWithWarmup(p, ScheduleKind::OneFOneB, 2, s));
      auto check = checkSchedule(lists, p.minibatches * N);
      EXPECT_TRUE(check.ok) << "P=" << P << " N=" << N << ": " << check.detail;
    }
  EXPECT_THROW(stageActionsWithWarmup(p, ScheduleKind::PipeDream, 1, 0), std::invalid_argument);
}

// ---- the paper's timing (pipedream, pipemare): 2(P-1-s) warm-up forwards instead of P-1-s. ----
namespace {
ScheduleParams paperTiming(ScheduleParams p) {
  p.paper_timing = true;
  return p;
}
}  // namespace

TEST(ScheduleTables, PaperTiming) {
  // P=2 N=2, 2 minibatches: stage 0 runs two forwards ahead (3 in flight), the last stage as before.
  EXPECT_EQ(table(paperTiming(params(ScheduleKind::PipeMare, 2, 2, 2, 2))),
            (Rows{"F0 F1 F2 B0 F3 B1 S0 B2 B3 S1", "F0 B0 F1 B1 S0 F2 B2 F3 B3 S1"}));
  // P=3 N=2, 3 minibatches: warm-up 4, 2, 0.
  EXPECT_EQ(table(paperTiming(params(ScheduleKind::PipeMare, 3, 2, 3, 2))),
            (Rows{"F0 F1 F2 F3 F4 B0 F5 B1 S0 B2 B3 S1 B4 B5 S2", "F0 F1 F2 B0 F3 B1 S0 F4 B2 F5 B3 S1 B4 B5 S2",
                  "F0 B0 F1 B1 S0 F2 B2 F3 B3 S1 F4 B4 F5 B5 S2"}));
  // pipedream, a step per backward; the warm-up is capped by the microbatches there are.
  EXPECT_EQ(table(paperTiming(params(ScheduleKind::PipeDream, 3, 1, 3, 1))),
            (Rows{"F0 F1 F2 B0 S0 B1 S1 B2 S2", "F0 F1 F2 B0 S0 B1 S1 B2 S2", "F0 B0 S0 F1 B1 S1 F2 B2 S2"}));
  // Only for pipedream and pipemare.
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::PipeDream2BW})
    EXPECT_THROW(stageActions(paperTiming(params(kind, 2, 2, 1, kind == ScheduleKind::PipeDream2BW ? 2 : 1)), 0),
                 std::invalid_argument)
        << nameOf(kind);
}

TEST(ScheduleCheck, PaperTimingNoDeadlockOverTheGrid) {
  for (auto kind : {ScheduleKind::PipeDream, ScheduleKind::PipeMare})
    for (int P = 1; P <= 16; ++P)
      for (int N = 1; N <= 64; ++N) {
        auto c = checkSchedule(paperTiming(params(kind, P, N, 3, kind == ScheduleKind::PipeMare ? N : 1)));
        ASSERT_TRUE(c.ok) << nameOf(kind) << " P=" << P << " N=" << N << ": " << c.detail;
      }
}

TEST(ScheduleDelay, PaperTimingPipeMareIsCeilOfTwiceTheDepthOverN) {
  for (int P = 1; P <= 12; ++P)
    for (int N = 1; N <= 8; ++N)
      for (int s = 0; s < P; ++s)
        EXPECT_EQ(maxObservedDelay(stageActions(paperTiming(params(ScheduleKind::PipeMare, P, N, 2 * P + 2, N)), s)),
                  ceilDiv(2 * (P - 1 - s), N))
            << "P=" << P << " N=" << N << " s=" << s;
}

namespace {

// A row of schedules.md's tables ("F0.0 F0.1 B0.0 W0.0 ...": op stage.microbatch, B the input
// backward) in actionsToString's form ("F0 F1 BI0 W0 ..."), with the step after it.
std::string fromDocRow(const std::string& row) {
  std::istringstream in(row);
  std::string out;
  for (std::string op; in >> op;) {
    const auto dot = op.find('.');
    std::string kind = op.substr(0, 1) == "B" ? "BI" : op.substr(0, 1);
    out += (out.empty() ? "" : " ") + kind + op.substr(dot + 1);
  }
  return out + " S0";
}

}  // namespace

// ZB-H1's order per rank, P = 4, N = 8, literally as schedules.md section 2 tabulates it.
TEST(ZbH1, OrderPerRankIsThePapersTable) {
  const char* doc[] = {
      "F0.0 F0.1 F0.2 F0.3 B0.0 W0.0 F0.4 B0.1 W0.1 F0.5 B0.2 W0.2 F0.6 B0.3 W0.3 F0.7 B0.4 W0.4 B0.5 W0.5 B0.6 W0.6 B0.7 W0.7",
      "F1.0 F1.1 F1.2 B1.0 F1.3 B1.1 W1.0 F1.4 B1.2 W1.1 F1.5 B1.3 W1.2 F1.6 B1.4 W1.3 F1.7 B1.5 W1.4 B1.6 W1.5 B1.7 W1.6 W1.7",
      "F2.0 F2.1 B2.0 F2.2 B2.1 F2.3 B2.2 W2.0 F2.4 B2.3 W2.1 F2.5 B2.4 W2.2 F2.6 B2.5 W2.3 F2.7 B2.6 W2.4 B2.7 W2.5 W2.6 W2.7",
      "F3.0 B3.0 F3.1 B3.1 F3.2 B3.2 F3.3 B3.3 W3.0 F3.4 B3.4 W3.1 F3.5 B3.5 W3.2 F3.6 B3.6 W3.3 F3.7 B3.7 W3.4 W3.5 W3.6 W3.7",
  };
  for (int r = 0; r < 4; ++r) EXPECT_EQ(pm::actionsToString(pm::zbH1Actions(4, 8, 1, r)), fromDocRow(doc[r])) << "rank " << r;
  // With communication: a B receives the gradient first and sends its own at once; W sends nothing.
  EXPECT_EQ(pm::actionsToString(pm::zbH1Actions(2, 1, 1, 1), true), "rA0 F0 BI0 sG0 W0 S0");
  EXPECT_EQ(pm::actionsToString(pm::zbH1Actions(2, 1, 1, 0), true), "F0 sA0 rG0 BI0 W0 S0");
}

// The order checker over P <= 16, N <= 64 and two minibatches: no deadlock, every rank does N F,
// N BI and N W per minibatch, F before BI before W per microbatch (checkSchedule's static pass),
// and each step after the rank's last W.
TEST(ZbH1, NoDeadlockAndEveryOpOnceUpToSixteenRanks) {
  for (int P = 1; P <= 16; ++P)
    for (int N : {1, 2, 3, 5, 8, 15, 16, 17, 32, 64}) {
      std::vector<std::vector<pm::Action>> lists;
      for (int r = 0; r < P; ++r) lists.push_back(pm::zbH1Actions(P, N, 2, r));
      const auto check = pm::checkSchedule(lists, 2 * N);
      ASSERT_TRUE(check.ok) << "P=" << P << " N=" << N << ": " << check.detail;
      for (const auto& list : lists) {
        int f = 0, bi = 0, w = 0, steps = 0;
        for (const auto& a : list) {
          f += a.kind == pm::ActionKind::Forward;
          bi += a.kind == pm::ActionKind::BackwardInput;
          w += a.kind == pm::ActionKind::BackwardWeight;
          steps += a.kind == pm::ActionKind::Step;
          EXPECT_NE(a.kind, pm::ActionKind::Backward);
        }
        EXPECT_EQ(f, 2 * N);
        EXPECT_EQ(bi, 2 * N);
        EXPECT_EQ(w, 2 * N);
        EXPECT_EQ(steps, 2);
        EXPECT_EQ(list.back().kind, pm::ActionKind::Step);
      }
    }
}

// The checker refuses a split backward out of order: W before its BI, a step with a W pending, a
// microbatch backwarded both whole and split, a BI without its W.
TEST(ZbH1, TheCheckerRefusesASplitBackwardOutOfOrder) {
  using pm::Action;
  using K = pm::ActionKind;
  auto detail = [](std::vector<Action> list) { return pm::checkSchedule({list}, 1).detail; };
  EXPECT_NE(detail({{K::Forward, 0}, {K::BackwardWeight, 0}, {K::BackwardInput, 0}, {K::Step, 0}}).find("weight gradient before its input backward"),
            std::string::npos);
  EXPECT_NE(detail({{K::Forward, 0}, {K::BackwardInput, 0}, {K::Step, 0}, {K::BackwardWeight, 0}}).find("step while 1 weight gradient"),
            std::string::npos);
  EXPECT_NE(detail({{K::Forward, 0}, {K::BackwardInput, 0}, {K::BackwardWeight, 0}, {K::Backward, 0}, {K::Step, 0}}).find("already input-backwarded"),
            std::string::npos);
  EXPECT_NE(detail({{K::Forward, 0}, {K::BackwardInput, 0}}).find("never executes W0"), std::string::npos);
  EXPECT_TRUE(pm::checkSchedule({{{K::Forward, 0}, {K::BackwardInput, 0}, {K::BackwardWeight, 0}, {K::Step, 0}}}, 1).ok);
}

// Interleaved 1F1B and ZB-V as lists of one rank: every chunk runs F, then its backward (B whole
// for interleaved; BI then W for ZB-V) of each microbatch exactly once and in that order, idle
// slots (ZB-V's microbatches >= N when N < 2P-1) dropped, the step last; interleaving refuses
// N % P != 0 and v < 2, saying which.
TEST(ChunkedSchedules, EveryChunkRunsEachOpOnceInOrder) {
  for (int P = 1; P <= 8; ++P)
    for (int N = 1; N <= 64; N += (N < 8 ? 1 : 7)) {
      for (int r = 0; r < P; ++r) {
        std::vector<std::pair<std::vector<pm::Action>, int>> lists{{pm::zbVActions(P, N, r), 2}};
        if (N % P == 0) lists.push_back({pm::interleaved1F1BActions(P, N, 3, r), 3});
        for (const auto& [list, v] : lists) {
          SCOPED_TRACE("P=" + std::to_string(P) + " N=" + std::to_string(N) + " rank " + std::to_string(r) + " v=" + std::to_string(v));
          std::map<std::pair<int, int64_t>, std::string> seen;  // (chunk, mb) -> ops so far
          for (const auto& a : list) {
            if (a.kind == pm::ActionKind::Step) continue;
            ASSERT_GE(a.mb, 0);
            ASSERT_LT(a.mb, N);
            ASSERT_GE(a.chunk, 0);
            ASSERT_LT(a.chunk, v);
            std::string& ops = seen[{a.chunk, a.mb}];
            ops += a.kind == pm::ActionKind::Forward ? "F" : a.kind == pm::ActionKind::Backward ? "B" : a.kind == pm::ActionKind::BackwardInput ? "I" : "W";
          }
          EXPECT_EQ(seen.size(), static_cast<size_t>(v) * N);
          for (const auto& [key, ops] : seen) EXPECT_EQ(ops, v == 2 ? "FIW" : "FB") << "chunk " << key.first << " mb " << key.second;
          EXPECT_EQ(list.back().kind, pm::ActionKind::Step);
        }
      }
    }
  EXPECT_THROW(pm::interleaved1F1BActions(4, 6, 2, 0), std::invalid_argument);
  EXPECT_THROW(pm::interleaved1F1BActions(4, 8, 1, 0), std::invalid_argument);
  EXPECT_EQ(pm::zbVStage(4, 1, 0), 1);
  EXPECT_EQ(pm::zbVStage(4, 1, 1), 6);
  EXPECT_EQ(pm::interleavedStage(4, 1, 1), 5);
}

namespace {
pm::ScheduleParams chunked(pm::ScheduleKind kind, int ranks, int N, int chunks, int64_t minibatches = 1) {
  pm::ScheduleParams p;
  p.kind = kind;
  p.chunks = chunks;
  p.stages = ranks * chunks;
  p.microbatches = N;
  p.minibatches = minibatches;
  return p;
}
std::vector<std::string> rankTable(const pm::ScheduleParams& p) {
  std::vector<std::string> rows;
  for (int r = 0; r < pm::rankCount(p); ++r) rows.push_back(pm::actionsToString(pm::rankComputeActions(p, r)));
  return rows;
}
}  // namespace

// schedules.md section 3 at P = 4, N = 8, v = 2 (loop placement: chunk c of rank r is stage 4c + r):
// rank r warms up with w = 2(3 - r) + 4 forwards, then alternates F(k + w) and B(k), the k-th op of each kind on
// chunk (k mod 8) div 4 (backwards on the other chunk first), microbatch (k div 8)4 + k mod 4; one
// step per chunk at the end.
TEST(ChunkedSchedules, InterleavedOneFOneBOrderTableAtFourRanksEightMicrobatches) {
  using V = std::vector<std::string>;
  EXPECT_EQ(rankTable(chunked(pm::ScheduleKind::Interleaved1F1B, 4, 8, 2)),
            (V{"F0 F1 F2 F3 F0c1 F1c1 F2c1 F3c1 F4 F5 F6 B0c1 F7 B1c1 F4c1 B2c1 F5c1 B3c1 F6c1 B0 F7c1 B1 B2 B3 B4c1 B5c1 B6c1 B7c1 B4 B5 B6 B7 S0 S0c1",
                "F0 F1 F2 F3 F0c1 F1c1 F2c1 F3c1 F4 B0c1 F5 B1c1 F6 B2c1 F7 B3c1 F4c1 B0 F5c1 B1 F6c1 B2 F7c1 B3 B4c1 B5c1 B6c1 B7c1 B4 B5 B6 B7 S0 S0c1",
                "F0 F1 F2 F3 F0c1 F1c1 F2c1 B0c1 F3c1 B1c1 F4 B2c1 F5 B3c1 F6 B0 F7 B1 F4c1 B2 F5c1 B3 F6c1 B4c1 F7c1 B5c1 B6c1 B7c1 B4 B5 B6 B7 S0 S0c1",
                "F0 F1 F2 F3 F0c1 B0c1 F1c1 B1c1 F2c1 B2c1 F3c1 B3c1 F4 B0 F5 B1 F6 B2 F7 B3 F4c1 B4c1 F5c1 B5c1 F6c1 B6c1 F7c1 B7c1 B4 B5 B6 B7 S0 S0c1"}));
}

// schedules.md section 4 at P = 4, N = 8 (V placement: rank r holds stages r and 7 - r; n = 8
// slots, none idle).
TEST(ChunkedSchedules, ZbVOrderTableAtFourRanksEightMicrobatches) {
  using V = std::vector<std::string>;
  // Rank 0: 7 F of a; 4 groups (F b, BI b, W b); steady [F a], BI a, W a, F b, BI b, W b while b
  // lags; then 4 pairs (BI a, W a). Rank 3: 1 F of a; 3 pairs (F b, F a); 1 group; steady; ...
  EXPECT_EQ(rankTable(chunked(pm::ScheduleKind::ZBV, 4, 8, 2)),
            (V{"F0 F1 F2 F3 F4 F5 F6 F0c1 BI0c1 W0c1 F1c1 BI1c1 W1c1 F2c1 BI2c1 W2c1 F3c1 BI3c1 W3c1 F7 BI0 W0 F4c1 BI4c1 W4c1 BI1 W1 "
               "F5c1 BI5c1 W5c1 BI2 W2 F6c1 BI6c1 W6c1 BI3 W3 F7c1 BI7c1 W7c1 BI4 W4 BI5 W5 BI6 W6 BI7 W7 S0 S0c1",
               "F0 F1 F2 F3 F4 F0c1 F5 F1c1 BI0c1 W0c1 F2c1 BI1c1 W1c1 F3c1 BI2c1 W2c1 F6 BI0 W0 F4c1 BI3c1 W3c1 F7 BI1 W1 F5c1 BI4c1 "
               "W4c1 BI2 W2 F6c1 BI5c1 W5c1 BI3 W3 F7c1 BI6c1 W6c1 BI4 BI7c1 BI5 W4 BI6 W5 BI7 W6 W7c1 W7 S0 S0c1",
               "F0 F1 F2 F0c1 F3 F1c1 F4 F2c1 BI0c1 W0c1 F3c1 BI1c1 W1c1 F5 BI0 W0 F4c1 BI2c1 W2c1 F6 BI1 W1 F5c1 BI3c1 W3c1 F7 BI2 W2 "
               "F6c1 BI4c1 W4c1 BI3 W3 F7c1 BI5c1 W5c1 BI4 BI6c1 BI5 BI7c1 BI6 W4 BI7 W5 W6c1 W7c1 W6 W7 S0 S0c1",
               "F0 F0c1 F1 F1c1 F2 F2c1 F3 F3c1 BI0c1 W0c1 F4 BI0 W0 F4c1 BI1c1 W1c1 F5 BI1 W1 F5c1 BI2c1 W2c1 F6 BI2 W2 F6c1 BI3c1 "
               "W3c1 F7 BI3 W3 F7c1 BI4c1 W4c1 BI4 BI5c1 BI5 BI6c1 BI6 BI7c1 BI7 W4 W5c1 W6c1 W7c1 W5 W6 W7 S0 S0c1"}));
}

// Every stage of a chunked schedule forwards and backwards each microbatch once with its messages,
// and the ranks, each running its chunks in its own order (a receive blocks the whole rank), never
// deadlock: P <= 8, N <= 64 (ZB-V also N < 2P - 1, its idle slots), two minibatches.
TEST(ChunkedSchedules, RanksHoldingSeveralChunksNeverDeadlock) {
  for (int P = 1; P <= 8; ++P)
    for (int N = 1; N <= 64; N += (N < 16 ? 1 : 8)) {
      std::vector<pm::ScheduleParams> cases{chunked(pm::ScheduleKind::ZBV, P, N, 2, 2)};
      if (N % P == 0)
        for (int v : {2, 3}) cases.push_back(chunked(pm::ScheduleKind::Interleaved1F1B, P, N, v, 2));
      for (const auto& p : cases) {
        const pm::ScheduleCheck c = pm::checkRankSchedule(p);
        EXPECT_TRUE(c.ok) << pm::scheduleDecl(p.kind).name << " P=" << P << " N=" << N << " v=" << p.chunks << ": " << c.detail;
      }
    }
}

// A stage's list is its chunk's share of the rank's order with the messages around each op; at
// ZB-V's turn (rank P-1) stage P-1 sends to stage P on the same rank, listed like any message.
TEST(ChunkedSchedules, StageListsWrapTheirChunksOpsInMessages) {
  const pm::ScheduleParams v = chunked(pm::ScheduleKind::ZBV, 2, 2, 2);
  EXPECT_EQ(pm::chunkPlace(v, 2).rank, 1);
  EXPECT_EQ(pm::chunkPlace(v, 2).chunk, 1);
  EXPECT_EQ(pm::chunkPlace(v, 3).rank, 0);
  EXPECT_EQ(pm::stageOfChunk(v, 0, 1), 3);
  EXPECT_EQ(pm::actionsToString(pm::stageActions(v, 1), true), "rA0 F0 sA0 rA1 F1 sA1 rG0 BI0 sG0 W0 rG1 BI1 sG1 W1 S0");
  EXPECT_EQ(pm::actionsToString(pm::stageActions(v, 2), true),
            "rA0c1 F0c1 sA0c1 rA1c1 F1c1 sA1c1 rG0c1 BI0c1 sG0c1 W0c1 rG1c1 BI1c1 sG1c1 W1c1 S0c1");
  const pm::ScheduleParams i = chunked(pm::ScheduleKind::Interleaved1F1B, 2, 2, 2, 2);
  EXPECT_EQ(pm::actionsToString(pm::stageActions(i, 1), true),
            "rA0 F0 sA0 rA1 F1 sA1 rG0 B0 sG0 rG1 B1 sG1 S0 rA2 F2 sA2 rA3 F3 sA3 rG2 B2 sG2 rG3 B3 sG3 S1");
  // One chunk per rank: the rank order is the stage's own list.
  pm::ScheduleParams one = chunked(pm::ScheduleKind::OneFOneB, 3, 4, 1);
  EXPECT_EQ(pm::rankOrder(one, 1).size(), pm::stageActions(one, 1).size());
  EXPECT_THROW(pm::stageActions(chunked(pm::ScheduleKind::OneFOneB, 2, 2, 2), 0), std::invalid_argument);
  EXPECT_THROW(pm::stageActions(chunked(pm::ScheduleKind::ZBV, 2, 2, 3), 0), std::invalid_argument);
}
