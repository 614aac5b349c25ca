#pragma once
// The plan command's tests: runs planCommand with the options and keeps its exit code and what it
// printed on each stream.
#include <sstream>
#include <string>

#include "core/cli/plan.h"

namespace pm::test {

struct PlanRan {
  int code;
  std::string out, err;
};

inline PlanRan runPlan(const pm::cli::PlanOptions& o) {
  std::ostringstream out, err;
  const int code = pm::cli::planCommand(o, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace pm::test
