// The trace name table: every action a schedule list can hold has exactly one row, with the role
// its kind implies, and the helpers read it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/pipeline/trace_actions.h"

using namespace pm;

TEST(TraceActions, EveryActionKindHasOneRowWithTheRoleOfItsKind) {
  const ActionKind all[] = {ActionKind::RecvAct,  ActionKind::Forward,        ActionKind::SendAct,
                            ActionKind::RecvGrad, ActionKind::Backward,       ActionKind::SendGrad,
                            ActionKind::Step,     ActionKind::BackwardInput,  ActionKind::BackwardWeight};
  for (const ActionKind k : all) {
    const std::string name = traceActionName(k);
    SCOPED_TRACE(name);
    const TraceActionInfo* info = traceActionInfo(name);
    ASSERT_NE(info, nullptr);
    const bool comm = k == ActionKind::RecvAct || k == ActionKind::SendAct || k == ActionKind::RecvGrad ||
                      k == ActionKind::SendGrad;
    EXPECT_EQ(info->role, comm ? TraceRole::Communication : TraceRole::Compute);
    EXPECT_EQ(isComputeTraceAction(name), !comm);
    EXPECT_GT(std::string(info->legend).size(), 3u);
  }
  std::set<std::string> names;
  for (const auto& r : traceActions()) EXPECT_TRUE(names.insert(r.name).second) << "twice: " << r.name;
  EXPECT_EQ(names.size(), std::size(all) + 1);  // and R, which no list holds
}

TEST(TraceActions, RecomputeIsComputeAndUnknownNamesAreNeither) {
  ASSERT_NE(traceActionInfo(kRecomputeTrace), nullptr);
  EXPECT_EQ(traceActionInfo(kRecomputeTrace)->role, TraceRole::Recompute);
  EXPECT_TRUE(isComputeTraceAction(kRecomputeTrace));
  EXPECT_EQ(traceActionInfo("X"), nullptr);
  EXPECT_FALSE(isComputeTraceAction("X"));
  EXPECT_FALSE(isComputeTraceAction("b"));  // names are case-sensitive, as traces write them
}
