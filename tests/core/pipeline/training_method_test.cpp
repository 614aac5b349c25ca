// Training methods: names both ways, the errors, and the planner's rows built from the declarations.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/pipeline/training_method.h"

using namespace pm;

TEST(TrainingMethod, NamesRoundTripForEveryScheduleAndVariant) {
  for (const auto& d : scheduleDecls()) {
    for (int bits = 0; bits < 8; ++bits) {
      TrainingMethod m{d.kind, (bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
      if ((m.t1 || m.t2) && !d.takesPipeMare) continue;
      SCOPED_TRACE(m.name());
      EXPECT_EQ(trainingMethodFromName(m.name()), m);
    }
  }
  EXPECT_EQ(TrainingMethod({ScheduleKind::PipeMare, false, true, true}).name(), "pipemare+T1+T2");
  EXPECT_EQ(trainingMethodFromName("pipemare+t2+T1"), TrainingMethod({ScheduleKind::PipeMare, false, true, true}));
}

TEST(TrainingMethod, BadNamesSayWhatIsWrong) {
  const auto message = [](const std::string& name) {
    try {
      trainingMethodFromName(name);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("gpip").find("unknown schedule 'gpip'"), std::string::npos) << message("gpip");
  EXPECT_NE(message("gpipe+fast").find("unknown variant 'fast'"), std::string::npos) << message("gpipe+fast");
  EXPECT_NE(message("1f1b+T2").find("apply only to pipemare"), std::string::npos) << message("1f1b+T2");
  // Among a list: the list's names in the message.
  try {
    trainingMethodAmong("gpipe+T1", planMethods());
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gpipe+recompute"), std::string::npos) << e.what();
  }
  EXPECT_THROW(trainingMethodAmong("1f1b+recompute", planMethods()), std::invalid_argument);  // not a planner row
}

TEST(TrainingMethod, ThePlannersRowsAreEveryScheduleWithGPipeRecomputeAndPipeMareT2) {
  std::string names;
  for (const auto& m : planMethods()) names += m.name() + " ";
  EXPECT_EQ(names, "gpipe gpipe+recompute 1f1b interleaved-1f1b zb-h1 zb-v pipedream pipedream-2bw pipemare pipemare+T2 ");
  EXPECT_EQ(trainingMethodNames({TrainingMethod{ScheduleKind::GPipe}, TrainingMethod{ScheduleKind::ZBH1}}), "gpipe, zb-h1");
}
