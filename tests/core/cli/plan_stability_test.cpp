// `pipemare plan --stability EXPERIMENT` through the verb: a small zoo experiment's stage
// curvatures and every schedule's largest stable learning rate, as JSON and as text, and its
// usage errors.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cli/plan.h"
#include "tests/core/cli/plan_run.h"

using namespace pm::cli;
using Json = nlohmann::json;

namespace {

using Ran = pm::test::PlanRan;
constexpr auto plan = &pm::test::runPlan;

// tiny-synthetic (mlp on synthetic data) as a 3-stage pipemare pipeline with momentum.
PlanOptions tinyPipeMare(bool json) {
  PlanOptions o;
  o.stability = std::string(PIPEMARE_SOURCE_DIR) + "/experiments/tiny-synthetic.json";
  o.overrides = {"pipeline.stages=3", "pipeline.microbatches=4", "pipeline.schedule=pipemare", "optimizer.momentum=0.9"};
  o.stabilityMicrobatches = 2;
  o.stabilityIterations = 20;
  o.json = json;
  return o;
}

}  // namespace

TEST(PlanStability, JsonGivesEveryScheduleAnEdgeAndTheStageThatBreaks) {
  const auto r = plan(tinyPipeMare(true));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("stability: curvature at init: microbatch 2/2"), std::string::npos) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["model"], "mlp");
  EXPECT_EQ(j["stages"], 3);
  ASSERT_EQ(j["curvature"].size(), 1u);  // no warm-up
  for (const auto& s : j["curvature"][0]["stages"]) {
    EXPECT_EQ(s["samples"].size(), 2u);
    EXPECT_LE(s["min"].get<double>(), s["lambda"].get<double>());
    EXPECT_LE(s["lambda"].get<double>(), s["max"].get<double>());
  }
  const Json& rows = j["predictions"][0]["schedules"];
  // Every schedule, then pipemare with T1.
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[2]["schedule"], "zb-h1");
  EXPECT_EQ(rows[6]["schedule"], "pipemare+T1");
  double gpipe = 0, pipemare = 0, zbH1 = 0;
  Json pipemareRow;
  for (const auto& row : rows) {
    const double lr = row["max_lr"].get<double>();
    EXPECT_TRUE(std::isfinite(lr) && lr > 0) << row.dump();
    const int breaks = row["breaking_stage"].get<int>();
    ASSERT_GE(breaks, 0);
    ASSERT_LT(breaks, 3);
    // The breaking stage's own rate is the row's, and no stage allows less.
    EXPECT_DOUBLE_EQ(row["stages"][breaks]["max_lr"].get<double>(), lr);
    for (const auto& st : row["stages"]) EXPECT_GE(st["max_lr"].get<double>(), lr);
    if (row["schedule"] == "gpipe") gpipe = lr;
    if (row["schedule"] == "zb-h1") zbH1 = lr;
    if (row["schedule"] == "pipemare") {
      pipemare = lr;
      pipemareRow = row;
    }
  }
  EXPECT_EQ(zbH1, gpipe);  // synchronous: no delay, the same edge
  // The delays (tau 1 on the first two stages with N = 4) shrink momentum 0.9's edge from 3.8 to 0.1.
  EXPECT_EQ(pipemareRow["stages"][0]["tau"], 1);
  EXPECT_NEAR(pipemareRow["stages"][0]["edge"].get<double>(), 0.1, 1e-6);
  EXPECT_LT(pipemare, gpipe);
  const Json& d = j["design"];
  EXPECT_EQ(d["schedule"], "pipemare");
  EXPECT_EQ(d["max_lr"].get<double>(), pipemare);
  EXPECT_EQ(d["above_edge"].get<bool>(), 0.05 > pipemare);
}

TEST(PlanStability, TextHasTheStageTableEveryScheduleAndTheVerdict) {
  PlanOptions o = tinyPipeMare(false);
  o.overrides.push_back("pipemare.t1=true");
  const auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("lambda at init"), std::string::npos) << r.out;
  for (const char* s : {"\ngpipe ", "\n1f1b ", "\npipedream ", "\npipedream-2bw ", "\npipemare ", "\npipemare+T1 "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_NE(r.out.find("design: pipemare+T1, lr 0.05: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("after T1's anneal"), std::string::npos) << r.out;
}

TEST(PlanStability, BadInputNamesTheFileOrTheOption) {
  PlanOptions o = tinyPipeMare(false);
  o.stability = "/nonexistent/stability.json";
  auto r = plan(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/stability.json"), std::string::npos) << r.err;

  o = tinyPipeMare(false);
  o.stabilityMicrobatches = 0;
  r = plan(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--stability-microbatches"), std::string::npos) << r.err;

  o = tinyPipeMare(false);
  o.overrides.push_back("pipeline.stages=9");
  r = plan(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pipeline.stages"), std::string::npos) << r.err;
}

// A token model: the charlm preset (Adam, pipemare with T1 and a synchronous warm-up) on a small
// text of the source tree. The Hessian is over the float parameters (the embedding tables among
// them), the warm-up trains the language-model loss, and Adam gets edges but no verdict.
TEST(PlanStability, ATokenModelWithAWarmUpGetsBothSnapshots) {
  PlanOptions o;
  o.stability = std::string(PIPEMARE_SOURCE_DIR) + "/experiments/charlm-pipemare.json";
  o.overrides = {"data.path=" + std::string(PIPEMARE_SOURCE_DIR) + "/docs/architecture.md",
                 "data.context=16", "data.batch_size=4", "data.train_limit=64", "pipeline.stages=3",
                 "pipeline.microbatches=2"};
  o.stabilityMicrobatches = 1;
  o.stabilityIterations = 3;
  o.json = true;
  const auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["model"], "charlm");
  EXPECT_EQ(j["stages"], 3);
  EXPECT_TRUE(j["warmup"]["has_warmup"].get<bool>());
  EXPECT_GT(j["warmup"]["trained"].get<int>(), 0);
  ASSERT_EQ(j["curvature"].size(), 2u);  // at init and after the warm-up
  for (const auto& snap : j["curvature"]) {
    ASSERT_EQ(snap["stages"].size(), 3u);
    for (const auto& s : snap["stages"]) {
      ASSERT_TRUE(s["lambda"].is_number()) << s.dump();
      EXPECT_TRUE(std::isfinite(s["lambda"].get<double>())) << s.dump();
    }
  }
  EXPECT_EQ(j["curvature"][0]["stages"][0]["units"].get<std::string>().rfind("embed", 0), 0u)
      << j["curvature"][0]["stages"][0].dump();  // the first stage holds the embedding
  ASSERT_EQ(j["predictions"].size(), 2u);
  EXPECT_EQ(j["predictions"][1]["curvature"], "after warm-up");
  EXPECT_TRUE(j["predictions"][0]["schedules"][0]["max_lr"].is_number()) << j["predictions"][0].dump();
  EXPECT_EQ(j["design"]["schedule"], "pipemare+T1");
  EXPECT_EQ(j["design"]["curvature"], "after warm-up");
  EXPECT_TRUE(j["design"]["above_edge"].is_null());  // Adam: no verdict
}

// `--events stdout`: progress events as the estimate goes (its phases, each microbatch counted),
// then one result event that is the document --json prints; bad input is one error event with its
// place and exit code 2, and no result.
TEST(PlanStability, EventsGiveProgressThenTheJsonDocumentAsTheResult) {
  const auto json = plan(tinyPipeMare(true));
  ASSERT_EQ(json.code, 0) << json.err;
  PlanOptions o = tinyPipeMare(false);
  o.events = true;
  auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<Json> events;
  while (std::getline(lines, line)) events.push_back(Json::parse(line));
  ASSERT_GE(events.size(), 5u) << r.out;
  std::vector<std::string> phases;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_EQ(events[i]["type"], "progress") << events[i].dump();
    EXPECT_EQ(events[i]["v"], 1);
    phases.push_back(events[i]["phase"].get<std::string>());
  }
  EXPECT_EQ(phases.front(), "data");
  EXPECT_EQ(events[events.size() - 2]["phase"], "curvature at init");
  EXPECT_EQ(events[events.size() - 2]["done"], 2);
  EXPECT_EQ(events[events.size() - 2]["total"], 2);
  const Json& result = events.back();
  ASSERT_EQ(result["type"], "result") << result.dump();
  // The same document but for how long the estimate took.
  Json fromEvents = result["result"], fromJson = Json::parse(json.out);
  EXPECT_TRUE(fromEvents.contains("curvature_seconds") && fromEvents["curvature_seconds"].is_number()) << fromEvents.dump();
  fromEvents.erase("curvature_seconds");
  fromJson.erase("curvature_seconds");
  EXPECT_EQ(fromEvents, fromJson);
  EXPECT_EQ(r.err.find("stability: "), std::string::npos) << "progress went to the events, not to people: " << r.err;

  o.overrides.push_back("pipeline.stages=9");
  r = plan(o);
  EXPECT_EQ(r.code, 2);
  std::istringstream bad(r.out);
  events.clear();
  while (std::getline(bad, line)) events.push_back(Json::parse(line));
  ASSERT_FALSE(events.empty());
  const Json& error = events.back();
  ASSERT_EQ(error["type"], "error") << r.out;
  EXPECT_NE(error["place"].get<std::string>().find("pipeline.stages"), std::string::npos) << error.dump();
  EXPECT_EQ(error["exit_code"], 2);
  for (const auto& e : events) EXPECT_NE(e["type"], "result");
}

// A design with T1 and T2 is named as it is, and says which row predicts it (T2 does not move the
// edge); a design without delays says why every schedule has one edge.
TEST(PlanStability, TheDesignIsNamedAsItIsAndOneEdgeSaysWhy) {
  PlanOptions o = tinyPipeMare(true);
  o.overrides.push_back("pipemare.t1=true");
  o.overrides.push_back("pipemare.t2=true");
  auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["design"]["method"], "pipemare+T1+T2");
  EXPECT_EQ(j["design"]["schedule"], "pipemare+T1");
  EXPECT_EQ(j["one_edge"], "") << "three stages with N = 4 delay the first two";

  o = tinyPipeMare(true);
  o.overrides.push_back("pipeline.stages=1");
  r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  j = Json::parse(r.out);
  EXPECT_NE(j["one_edge"].get<std::string>().find("P = 1"), std::string::npos) << j["one_edge"];
  const Json& rows = j["predictions"][0]["schedules"];
  for (const auto& row : rows) EXPECT_EQ(row["max_lr"], rows[0]["max_lr"]) << row["schedule"];
  bool noted = false;
  for (const auto& n : j["notes"]) noted = noted || n.get<std::string>() == j["one_edge"].get<std::string>();
  EXPECT_TRUE(noted);
}
