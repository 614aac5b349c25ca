// The event stream's line format: what a reader accepts and how it rejects the rest.
#include <gtest/gtest.h>

#include "core/events/event.h"
#include "core/util/errors.h"

using namespace pm;

TEST(EventLine, RoundTripKeepsTypeVersionAndFields) {
  Json e = makeEvent(ev::kStep);
  e["step"] = 7;
  e["loss"] = 0.25;
  const Json back = parseEventLine(eventToLine(e));
  EXPECT_EQ(back["type"], "step");
  EXPECT_EQ(back["v"], kEventSchemaVersion);
  EXPECT_EQ(back["step"], 7);
  EXPECT_DOUBLE_EQ(back["loss"].get<double>(), 0.25);
  EXPECT_EQ(eventToLine(e).find('\n'), std::string::npos);  // one line per event
}

// Lines from another process (a worker, a remote node) are input: every bad one is an
// EngineError naming the event stream, never a raw parser exception.
TEST(EventLine, BadLinesAreEngineErrors) {
  auto rejects = [](const std::string& line, const std::string& part) {
    try {
      parseEventLine(line);
    } catch (const EngineError& e) {
      if (e.place() != "event stream") return ::testing::AssertionFailure() << "place " << e.place();
      if (e.problem().find(part) == std::string::npos) return ::testing::AssertionFailure() << e.problem();
      return ::testing::AssertionSuccess();
    } catch (const std::exception& e) {
      return ::testing::AssertionFailure() << "threw a different exception: " << e.what();
    }
    return ::testing::AssertionFailure() << "accepted: " << line;
  };
  EXPECT_TRUE(rejects("{\"type\": \"step\", ", "malformed event line"));
  EXPECT_TRUE(rejects("{\"type\": \"step\", \"loss\": 1e999}", "malformed event line"));  // beyond double's range
  EXPECT_TRUE(rejects("[1, 2]", "without a \"type\""));
  EXPECT_TRUE(rejects("{\"step\": 1}", "without a \"type\""));
  EXPECT_TRUE(rejects("{\"type\": \"step\", \"v\": 99}", "newer than this program's"));
}
