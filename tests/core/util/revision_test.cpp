// The revision recorded with every run is the source tree's at build time (regenerated at every
// build), not the one CMake was configured at.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/util/system_info.h"

TEST(Revision, IsTheSourceTreesRevisionAtBuildTime) {
  const std::string cmd = std::string("git -C '") + PIPEMARE_SOURCE_DIR + "' describe --always --dirty --abbrev=7 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  if (rc != 0 || out.empty()) GTEST_SKIP() << "no git checkout here: the revision reads \"" << pm::projectRevision() << "\"";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  EXPECT_EQ(pm::projectRevision(), out) << "rebuild after changing the sources: the build records the revision it was built at";
}
