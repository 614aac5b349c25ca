#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <map>
#include <numeric>
#include <sstream>

#include <unistd.h>

#include "core/cli/plan.h"
#include "tests/core/cli/plan_run.h"
#include "core/events/event.h"
#include "core/pipeline/schedule.h"
#include "core/planner/timeline_sim.h"

using namespace pm;
using namespace pm::cli;

namespace {

using Ran = pm::test::PlanRan;
constexpr auto plan = &pm::test::runPlan;

PlanOptions resnet(int N, bool json) {
  PlanOptions o;
  o.model = "resnet50";
  o.stages = 107;
  o.microbatches = N;
  o.optimizer = "sgd-momentum";
  o.timing = "paper";
  o.granularity = "layers";
  o.json = json;
  return o;
}

}  // namespace

TEST(PlanCommand, JsonReproducesThePapersNumbers) {
  const auto n32 = plan(resnet(32, true));
  ASSERT_EQ(n32.code, 0) << n32.err;
  const Json a = Json::parse(n32.out);
  EXPECT_EQ(a["stages"], 107);
  // Every row but interleaved 1F1B, whose N must be a multiple of P (Megatron's rule); zb-v's 214
  // stages cut each layer in two (the model has 107 weight layers).
  EXPECT_EQ(a["schedules"].size(), 9u);
  ASSERT_EQ(a["not_planned"].size(), 1u);
  EXPECT_EQ(a["not_planned"][0]["schedule"], "interleaved-1f1b");
  EXPECT_EQ(a["chunk_split"], "fractions");
  EXPECT_NEAR(a["ratios"]["utilization_pipemare_over_gpipe"].get<double>(), 4.3125, 1e-9);
  EXPECT_NEAR(a["schedules"][0]["utilization"].get<double>(), 32.0 / 138.0, 1e-12);
  EXPECT_NE(a["accounting"].get<std::string>().find("paper"), std::string::npos);
  EXPECT_EQ(a["stage_costs"], "equal");  // one stage per weight layer: the paper's equal stages

  const auto n8 = plan(resnet(8, true));
  ASSERT_EQ(n8.code, 0) << n8.err;
  const Json b = Json::parse(n8.out);
  EXPECT_NEAR(b["ratios"]["utilization_pipemare_over_gpipe"].get<double>(), 14.25, 1e-9);
  EXPECT_NEAR(b["ratios"]["weight_optimizer_memory_pipedream_over_pipemare_t2"].get<double>(), 2.72, 0.01);
  for (const auto& s : b["schedules"]) {
    const auto& t = s["memory"]["total"];
    EXPECT_EQ(t["total"].get<int64_t>(), t["weights"].get<int64_t>() + t["gradients"].get<int64_t>() +
                                             t["optimizer"].get<int64_t>() + t["stash"].get<int64_t>() +
                                             t["delta"].get<int64_t>() + t["activations"].get<int64_t>());
    EXPECT_EQ(s["per_stage"]["tau"].size(), 107u);
  }
}

TEST(PlanCommand, TextTableHasOneRowPerScheduleAndTheRatios) {
  const auto r = plan(resnet(8, false));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"gpipe ", "gpipe+recompute", "1f1b", "zb-h1", "pipedream ", "pipedream-2bw", "pipemare ", "pipemare+T2"})
    EXPECT_NE(r.out.find(std::string("\n") + s), std::string::npos) << s << "\n" << r.out;
  EXPECT_NE(r.out.find("accounting: timing model: paper"), std::string::npos);
  EXPECT_NE(r.out.find("utilization pipemare/gpipe: 14.25x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pipedream/pipemare+T2: 2.72x"), std::string::npos) << r.out;
}

// A warm-up: the hybrid's utilization, time-weighted. ResNet-20 at P = 11, N = 2 (the study) with
// equal stages: gpipe 2/12; a third of the minibatches as gpipe, then pipemare at 1:
// 1 / (6/3 + 2/3) = 0.375.
TEST(PlanCommand, WarmupGivesTheHybridsUtilization) {
  PlanOptions o;
  o.model = "resnet20";
  o.granularity = "units";
  o.stages = 11;
  o.microbatches = 2;
  o.timing = "1f1b";
  o.stageCosts = "equal";
  o.warmupFraction = 1.0 / 3.0;
  auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pipemare after a synchronous warm-up (gpipe) of 33 % of the minibatches: utilization 0.375 "
                       "(time-weighted: 0.167 during the warm-up, then 1.000), 2.25x gpipe"),
            std::string::npos)
      << r.out;
  o.json = true;
  r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["utilization_pipemare_with_warmup"].get<double>(), 0.375, 1e-12);
  o.json = false;
  o.warmupFraction = 0;
  r = plan(o);
  EXPECT_EQ(r.out.find("warm-up"), std::string::npos) << r.out;  // no warm-up, no line
}

// The engine's stages (units) are planned with their own times: each stage's forward+backward
// time from its FLOPs, the costs of the simulated timelines. ResNet-20's parameter-balanced
// P = 11 is unbalanced in time, so no schedule reaches its equal-stage utilization; the slowest
// stage's share of the work bounds pipemare's steady state, and every schedule's timeline (one
// Chrome trace per schedule with --trace-dir) is as busy as the JSON says.
TEST(PlanCommand, UnbalancedStagesLowerTheUtilizationAsTheirTimelinesShow) {
  const auto dir = std::filesystem::temp_directory_path() / ("plan_timelines_" + std::to_string(::getpid()));
  PlanOptions o;
  o.model = "resnet20";
  o.granularity = "units";
  o.stages = 11;
  o.microbatches = 2;
  o.timing = "1f1b";
  o.json = true;
  o.traceDir = dir.string();
  const auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["stage_costs"], "flops");
  ASSERT_EQ(j["stage_time_s"].size(), 11u);
  std::vector<double> c = j["stage_time_s"].get<std::vector<double>>();
  const double sum = std::accumulate(c.begin(), c.end(), 0.0);
  const auto slowest = std::max_element(c.begin(), c.end());
  ASSERT_EQ(j["schedules"].size(), 9u);  // interleaved-1f1b needs N % P == 0
  double oneFOneB = 0;
  for (const auto& s : j["schedules"]) {
    const std::string name = s["schedule"];
    SCOPED_TRACE(name);
    if (s["chunks"].get<int>() > 1) {
      // Several chunks per rank: no closed form, simulated on the rank lists; its bottleneck is a rank.
      EXPECT_GT(s["utilization"].get<double>(), 0.0);
      EXPECT_LT(s["utilization"].get<double>(), 1.0);
      EXPECT_LT(s["bottleneck"]["stage"].get<int>(), 11);
      continue;
    }
    EXPECT_EQ(s["bottleneck"]["stage"].get<int>(), slowest - c.begin());
    EXPECT_NEAR(s["bottleneck"]["share"].get<double>(), *slowest / sum, 1e-12);
    EXPECT_NEAR(s["utilization"].get<double>() + s["bubble"].get<double>(), 1.0, 1e-12);
    const bool flushed = name.rfind("gpipe", 0) == 0 || name == "1f1b";
    const double expected = flushed ? 2 * sum / (11 * (*slowest + sum)) : sum / (11 * *slowest);
    if (name == "1f1b") oneFOneB = s["utilization"].get<double>();
    if (name == "zb-h1") {
      // No closed form: W fills part of 1f1b's bubble (the rows come in 1f1b, zb-h1 order).
      EXPECT_GT(s["utilization"].get<double>(), oneFOneB);
      EXPECT_LT(s["utilization"].get<double>(), 1.0);
    } else {
      EXPECT_NEAR(s["utilization"].get<double>(), expected, 1e-12);
      EXPECT_LT(s["utilization"].get<double>(), flushed ? 2.0 / 12.0 : 1.0);
    }
    // The timeline's busy share, from its own trace file: F, B and S over P x makespan.
    const auto& t = s["timeline"];
    EXPECT_EQ(t["minibatches"], 2);
    std::ifstream in(t["file"].get<std::string>());
    ASSERT_TRUE(in) << t["file"];
    const Json trace = Json::parse(in);
    double busy = 0, end = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("ph", "") != "X") continue;
      end = std::max(end, e["ts"].get<double>() + e["dur"].get<double>());
      const std::string a = e["args"]["action"];
      if (a == "F" || a == "B" || a == "BI" || a == "W" || a == "S") busy += e["dur"].get<double>();
    }
    EXPECT_NEAR(busy / (11 * end), t["utilization"].get<double>(), 1e-6);
    EXPECT_NEAR(t["utilization"].get<double>() + t["bubble"].get<double>(), 1.0, 1e-12);
    // A flushed schedule's timeline repeats the minibatch the formula describes (gpipe exactly);
    // an unflushed one adds a fill and a drain to the steady state.
    if (name.rfind("gpipe", 0) == 0) {
      EXPECT_NEAR(t["utilization"].get<double>(), s["utilization"].get<double>(), 1e-9);
    }
    if (name == "zb-h1") {
      // Flushed too: its two minibatches repeat the one the row simulates, the second's first
      // forwards overlapping the first's last weight passes a little.
      EXPECT_NEAR(t["utilization"].get<double>(), s["utilization"].get<double>(), 0.01 * s["utilization"].get<double>());
    } else if (!flushed) {
      EXPECT_LT(t["utilization"].get<double>(), s["utilization"].get<double>());
    }
  }
  std::filesystem::remove_all(dir);

  // Equal stages, asked for: the closed forms, said so.
  o.stageCosts = "equal";
  o.traceDir.clear();
  const Json e = Json::parse(plan(o).out);
  EXPECT_EQ(e["stage_costs"], "equal");
  EXPECT_NEAR(e["schedules"][0]["utilization"].get<double>(), 2.0 / 12.0, 1e-12);
  EXPECT_TRUE(e["schedules"][0]["bottleneck"]["stage"].is_null());
  EXPECT_NEAR(e["schedules"][0]["bottleneck"]["share"].get<double>(), 1.0 / 11, 1e-12);
  o.json = false;
  EXPECT_NE(plan(o).out.find("stage costs: equal stages assumed"), std::string::npos);
  o.stageCosts.clear();
  const auto text = plan(o).out;
  EXPECT_NE(text.find("stage costs: each stage's forward+backward time from its forward FLOPs"), std::string::npos) << text;
  EXPECT_NE(text.find("simulated timelines (2 minibatches, fill and drain included), utilization: gpipe "), std::string::npos)
      << text;
}

TEST(PlanCommand, UnitsGranularityAndTrace) {
  const auto path = std::filesystem::temp_directory_path() / ("plan_trace_" + std::to_string(::getpid()) + ".json");
  PlanOptions o;
  o.model = "resnet20";
  o.stages = 3;
  o.microbatches = 4;
  o.granularity = "units";
  o.timing = "1f1b";
  o.optimizer = "adam";
  o.json = true;
  o.traceFile = path.string();
  o.schedule = "1f1b";
  const auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["stages"], 3);
  EXPECT_EQ(j["granularity"], "units");
  EXPECT_NE(j["accounting"].get<std::string>().find("software 1F1B"), std::string::npos);
  EXPECT_EQ(j["trace"]["schedule"], "1f1b");
  EXPECT_GT(j["trace"]["makespan_s"].get<double>(), 0.0);
  std::ifstream in(path);
  const Json t = Json::parse(in);
  std::filesystem::remove(path);
  EXPECT_GT(t["traceEvents"].size(), 3u * 4 * 2);
}

// The design's partition reaches the plan: explicit boundaries, FLOP balance (the stand-in for
// "time"), the parameter balance by default; a language model's context sets its activations.
TEST(PlanCommand, FollowsThePartitionAndTheContext) {
  PlanOptions o;
  o.model = "cnn";
  o.stages = 2;
  o.microbatches = 8;
  o.batch = 128;
  o.granularity = "units";
  o.json = true;
  auto firstEnd = [&] {
    const auto r = plan(o);
    EXPECT_EQ(r.code, 0) << r.err;
    const Json j = Json::parse(r.out);
    return std::make_pair(j["stage_profiles"][0]["end"].get<int>(), j["partition"].get<std::string>());
  };
  const auto byParameters = firstEnd();
  EXPECT_EQ(byParameters.second, "parameters");
  o.boundaries = {3};
  EXPECT_EQ(firstEnd(), std::make_pair(3, std::string("explicit")));
  o.boundaries = {1};
  EXPECT_EQ(firstEnd(), std::make_pair(1, std::string("explicit")));
  o.boundaries.clear();
  o.partition = "flops";
  const auto byFlops = firstEnd();
  EXPECT_EQ(byFlops.second, "flops");
  EXPECT_NE(byFlops.first, byParameters.first);  // cnn's parameters sit in fc1, its FLOPs in the convolutions

  PlanOptions lm;
  lm.model = "charlm";
  lm.stages = 2;
  lm.granularity = "units";
  lm.json = true;
  auto activations = [&](int context) {
    lm.context = context;
    const auto r = plan(lm);
    EXPECT_EQ(r.code, 0) << r.err;
    return Json::parse(r.out)["stage_profiles"][0]["activation_bytes"].get<double>();
  };
  EXPECT_GT(activations(128), 1.5 * activations(64));  // linear in the context, attention scores quadratic
}

TEST(PlanCommand, BadInputReturns2WithAMessage) {
  auto bad = [](auto edit, const std::string& expect) {
    PlanOptions o;
    o.model = "mlp";
    o.stages = 3;
    o.microbatches = 4;
    edit(o);
    const auto r = plan(o);
    EXPECT_EQ(r.code, 2) << expect;
    EXPECT_NE(r.err.find(expect), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  };
  bad([](PlanOptions& o) { o.model = "resnet51"; }, "unknown model");
  bad([](PlanOptions& o) { o.stages = 4; }, "has 3 weight layers");
  bad([](PlanOptions& o) { o.granularity = "units"; o.stages = 9; }, "partitionable units");
  bad([](PlanOptions& o) { o.optimizer = "rmsprop"; }, "--optimizer");
  bad([](PlanOptions& o) { o.timing = "fast"; }, "--timing");
  bad([](PlanOptions& o) { o.stageCosts = "measured"; }, "measured applies to --granularity units only");
  bad([](PlanOptions& o) { o.granularity = "blocks"; }, "--granularity");
  bad([](PlanOptions& o) { o.schedule = "pipemore"; }, "--schedule");
  bad([](PlanOptions& o) { o.microbatches = 0; }, "--microbatches");
  bad([](PlanOptions& o) { o.m = 2; }, "m >= P");
  bad([](PlanOptions& o) { o.warmupFraction = 1.5; }, "--warmup-fraction: expected a share of the minibatches in [0, 1], found 1.5");
  bad([](PlanOptions& o) { o.granularity = "units"; o.boundaries = {9}; }, "--boundaries");
  bad([](PlanOptions& o) { o.granularity = "units"; o.partition = "time"; }, "--partition: expected parameters or flops");
  bad([](PlanOptions& o) { o.boundaries = {1}; }, "--boundaries: applies to --granularity units only");
  bad([](PlanOptions& o) { o.model = "charlm"; o.stages = 2; o.context = 1000; }, "--context: expected a sequence length in 8..128");
  bad([](PlanOptions& o) { o.context = 4; }, "--context");
  bad([](PlanOptions& o) { o.stageCosts = "time"; }, "--stage-costs: expected flops, measured or equal, found \"time\"");
  PlanOptions ok;
  ok.model = "mlp";
  ok.stages = 0;  // one per weight layer
  EXPECT_EQ(plan(ok).code, 0);
}

// plan --experiment FILE: the design comes from the experiment through plan_design, and the output
// is the flag-based plan's of the same design (the design's row traced, its partition, the
// warm-up's share of the run). 1 warm-up epoch of 4 of Fashion-MNIST's 60,000 images in
// minibatches of 128 (469 a epoch, the last one partial): 469 of 1,876 minibatches.
TEST(PlanCommand, AnExperimentFilePlansAsItsFlagsDo) {
  const auto dir = std::filesystem::temp_directory_path() / ("plan_experiment_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "design.json").string(), trace = (dir / "trace.json").string();
  {
    std::ofstream f(file);
    f << R"({"model": {"name": "cnn"}, "data": {"batch_size": 128},
             "pipeline": {"schedule": "pipemare", "stages": 2, "microbatches": 8,
                          "partition": {"method": "explicit", "boundaries": [3]}},
             "pipemare": {"t2": true, "warmup_epochs": 1},
             "optimizer": {"name": "sgd", "momentum": 0.9}, "training": {"epochs": 4}})";
  }
  PlanOptions fromFile;
  fromFile.experiment = file;
  fromFile.json = true;
  fromFile.traceFile = trace;
  const auto a = plan(fromFile);
  ASSERT_EQ(a.code, 0) << a.err;

  PlanOptions flags;
  flags.model = "cnn";
  flags.stages = 2;
  flags.microbatches = 8;
  flags.batch = 128;
  flags.optimizer = "sgd-momentum";
  flags.timing = "1f1b";
  flags.granularity = "units";
  flags.schedule = "pipemare+T2";
  flags.boundaries = {3};
  flags.warmupFraction = 469.0 / 1876.0;
  flags.json = true;
  flags.traceFile = trace;
  const auto b = plan(flags);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  const Json j = Json::parse(a.out);
  EXPECT_EQ(j["trace"]["schedule"], "pipemare+T2");
  EXPECT_EQ(j["partition"], "explicit");
  EXPECT_EQ(j["timing"], "1f1b");
  EXPECT_DOUBLE_EQ(j["warmup_fraction"].get<double>(), 0.25);

  // A timing model asked for wins over the experiment's; --set overrides a field.
  fromFile.timing = "paper";
  fromFile.overrides = {"pipeline.microbatches=4"};
  const auto c = plan(fromFile);
  ASSERT_EQ(c.code, 0) << c.err;
  const Json k = Json::parse(c.out);
  EXPECT_EQ(k["timing"], "paper");
  EXPECT_EQ(k["microbatches"], 4);

  // An experiment that does not validate, a missing file, --set without an experiment: exit 2.
  fromFile.timing.clear();
  fromFile.overrides = {"pipeline.stages=9"};
  auto bad = plan(fromFile);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("pipeline.stages"), std::string::npos) << bad.err;
  fromFile.overrides.clear();
  fromFile.experiment = (dir / "missing.json").string();
  bad = plan(fromFile);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("missing.json"), std::string::npos) << bad.err;
  PlanOptions setAlone;
  setAlone.model = "mlp";
  setAlone.overrides = {"pipeline.stages=2"};
  bad = plan(setAlone);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--set: applies to --experiment only"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
}

namespace {

// `plan --op-costs` as JSON: schedule name -> its figures.
std::map<std::string, Json> opCostPlan(int P, int N, std::vector<double> costs, double comm = 0) {
  PlanOptions o;
  o.stages = P;
  o.microbatches = N;
  o.opCosts = std::move(costs);
  o.commCost = comm;
  o.json = true;
  const Ran r = pm::test::runPlan(o);
  EXPECT_EQ(r.code, 0) << r.err;
  std::map<std::string, Json> out;
  const Json j = Json::parse(r.out, nullptr, false);
  if (j.is_discarded()) {
    ADD_FAILURE() << r.out;
    return out;
  }
  for (const auto& s : j["schedules"]) out[s.value("schedule", "")] = s;
  return out;
}

}  // namespace

// schedules.md section 7, first table: unit costs (TF = TB = TW = 1), no communication; makespan and
// 1 - utilization of every schedule of the table at P = 4 with N = 8 and 16, to 4 decimals. The
// chunked ones (interleaved 1F1B, v = 2, loop placement; ZB-V) cost half a rank's op per chunk op,
// and ZB-V's turn at rank P-1 is a hand-over, not a message.
TEST(PlanCommand, OpCostsReproduceTheUnitCostTable) {
  struct Cell {
    const char* schedule;
    double makespan, bubble;
  };
  const std::map<int, std::vector<Cell>> table{
      {8, {{"1f1b", 33, 0.2727}, {"interleaved-1f1b", 28.5, 0.1579}, {"zb-h1", 27, 0.1111}, {"zb-v", 25.5, 0.0588}}},
      {16, {{"1f1b", 57, 0.1579}, {"interleaved-1f1b", 52.5, 0.0857}, {"zb-h1", 51, 0.0588}, {"zb-v", 49.5, 0.0303}}}};
  for (const auto& [N, cells] : table) {
    auto plan = opCostPlan(4, N, {1, 1, 1});
    for (const Cell& c : cells) {
      SCOPED_TRACE("N = " + std::to_string(N) + ", " + c.schedule);
      EXPECT_NEAR(plan[c.schedule].value("makespan", 0.0), c.makespan, 1e-9);
      EXPECT_NEAR(plan[c.schedule].value("bubble_utilization", 0.0), c.bubble, 5e-5);
    }
    EXPECT_EQ(plan["interleaved-1f1b"].value("chunks", 0), 2);
    EXPECT_EQ(plan["zb-v"].value("chunks", 0), 2);
    // GPipe's bubble equals 1F1B's; its backward order differs, not its length.
    EXPECT_NEAR(plan["gpipe"].value("makespan", 0.0), plan["1f1b"].value("makespan", 0.0), 1e-9);
  }
}

// A design where interleaving does not apply keeps the other rows.
TEST(PlanCommand, OpCostsSayWhyARowDoesNotApply) {
  // Interleaving needs N to be a multiple of P: that row says why it has no figures, the others stand.
  auto odd = opCostPlan(4, 6, {1, 1, 1});
  EXPECT_NE(odd["interleaved-1f1b"].value("not_applicable", std::string()).find("multiple of the ranks"), std::string::npos)
      << odd["interleaved-1f1b"].dump();
  EXPECT_GT(odd["zb-v"].value("makespan", 0.0), 0.0);
}

// schedules.md section 7, the ZB paper's Table 5: its bubble rate (eq. 3) of 1F1B and ZB-H1 for
// the 1.5B and 6.2B models (P = 8, N = 24) with their Table 9 timings, T_comm charged to every
// dependency that crosses ranks, to 4 decimals.
TEST(PlanCommand, OpCostsReproduceTheZeroBubblePapersTable5) {
  struct Row {
    const char* model;
    double tf, tb, tw, comm, f1b, zb;
  };
  for (const Row& row : {Row{"1.5B", 18.522, 18.086, 9.337, 0.601, 0.2431, 0.1585},
                         Row{"6.2B", 29.718, 29.444, 19.927, 0.527, 0.2347, 0.1323}}) {
    SCOPED_TRACE(row.model);
    auto plan = opCostPlan(8, 24, {row.tf, row.tb, row.tw}, row.comm);
    EXPECT_NEAR(plan["1f1b"].value("bubble_rate_zb", 0.0), row.f1b, 5e-5);
    EXPECT_NEAR(plan["zb-h1"].value("bubble_rate_zb", 0.0), row.zb, 5e-5);
  }
}

// The timeline runs the action lists, not ZB-H1's closed form: with T_W > T_F the closed form
// (P-1)(TF+TB-TW) undercounts, and the simulation still ends every rank after its last op. Any P
// works without a model (P = 32 here), and the text form labels each figure with its definition.
TEST(PlanCommand, OpCostsNeedNoModelAndLabelTheirFigures) {
  auto plan = opCostPlan(32, 64, {1, 1, 3});
  const double ideal = 64 * 5.0;                       // one rank's work, N (TF+TB+TW)
  const double closedForm = ideal + 31 * (1.0 + 1 - 3);  // 289: less than the work itself
  EXPECT_GE(plan["zb-h1"].value("makespan", 0.0), ideal);
  EXPECT_GT(plan["zb-h1"].value("makespan", 0.0), closedForm);
  EXPECT_LT(plan["zb-h1"].value("makespan", 0.0), plan["1f1b"].value("makespan", 0.0));
  PlanOptions o;
  o.stages = 4;
  o.microbatches = 8;
  o.opCosts = {1, 1, 1};
  const Ran text = pm::test::runPlan(o);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* label : {"1-utilization: the idle share of P x makespan", "ZB bubble rate (Qi et al. 2024, eq. 3)", "zb-h1",
                            "1f1b", "gpipe"})
    EXPECT_NE(text.out.find(label), std::string::npos) << label << " in\n" << text.out;
  o.opCosts = {1, 1};
  const Ran bad = pm::test::runPlan(o);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--op-costs: expected three costs"), std::string::npos) << bad.err;
}

// --stage-costs measured: each stage's F, B, BI and W are timed; the stage times are F + B, and the
// zb-h1 row is the simulation of its lists with exactly those F, BI and W.
TEST(PlanCommand, MeasuredStageCostsTimeEachPassAndDriveTheZeroBubbleRow) {
  PlanOptions o;
  o.model = "cnn";
  o.granularity = "units";
  o.stages = 3;
  o.microbatches = 4;
  o.batch = 32;
  o.stageCosts = "measured";
  o.json = true;
  const auto r = plan(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["stage_costs"], "measured");
  const Json& ops = j["stage_op_costs"];
  ASSERT_EQ(ops.size(), 3u);
  SimCosts c;
  for (size_t s = 0; s < 3; ++s) {
    SCOPED_TRACE(s);
    const double f = ops[s]["forward_s"], b = ops[s]["backward_s"], bi = ops[s]["backward_input_s"], w = ops[s]["weight_s"];
    // Every stage of cnn has weights and a floating-point input: all four passes take time.
    EXPECT_GT(f, 0);
    EXPECT_GT(b, 0);
    EXPECT_GT(bi, 0);
    EXPECT_GT(w, 0);
    EXPECT_DOUBLE_EQ(j["stage_time_s"][s].get<double>(), f + b);
    c.forward.push_back(f);
    c.backward.push_back(bi + w);
    c.weight.push_back(w);
  }
  ScheduleParams sp;
  sp.kind = ScheduleKind::ZBH1;
  sp.stages = 3;
  sp.microbatches = 4;
  const double simulated = simulateTimeline(sp, c).meanUtilization;
  bool found = false;
  for (const auto& row : j["schedules"])
    if (row["schedule"] == "zb-h1") {
      found = true;
      EXPECT_NEAR(row["utilization"].get<double>(), simulated, 1e-12);
    }
  EXPECT_TRUE(found);
}

// A design with several chunks per rank (zb-v, interleaved-1f1b) plans without failing: the rows
// (one stage per rank) are planned, its own schedule's absence is said as data (design_note) and
// in the text, naming the op-cost timeline that covers it; a one-chunk design has no note.
// A design with several chunks per rank has its own row: the model split into v x P stages placed
// on the ranks (loop or V), memory per rank, its timeline written with one process per model stage.
TEST(PlanCommand, AChunkedDesignIsPlannedPerRankOverItsOwnStages) {
  const auto dir = std::filesystem::temp_directory_path() / ("plan_chunked_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "design.json").string();
  struct Case {
    std::string schedule, extra;
    int v;
  };
  for (const Case& c : {Case{"zb-v", "", 2}, Case{"interleaved-1f1b", R"(, "chunks": 3)", 3},
                        Case{"interleaved-1f1b", R"(, "partition": {"method": "explicit", "boundaries": [1, 2, 3]})", 2},
                        Case{"1f1b", "", 1}}) {
    {
      std::ofstream f(file);
      f << R"({"model": {"name": "cnn"}, "data": {"dataset": "synthetic", "batch_size": 32},
               "pipeline": {"schedule": ")" << c.schedule << R"(", "stages": 2, "microbatches": 4)" << c.extra << "}}";
    }
    PlanOptions o;
    o.experiment = file;
    o.json = true;
    o.traceDir = (dir / "traces").string();
    const auto r = plan(o);
    const std::string at = c.schedule + c.extra;
    ASSERT_EQ(r.code, 0) << at << ": " << r.err;
    const Json j = Json::parse(r.out);
    EXPECT_TRUE(j["not_planned"].empty()) << j["not_planned"].dump();
    const std::string own = c.v == 1 ? "zb-v" : c.schedule;  // a one-chunk design still gets the chunked rows
    const int v = c.v == 1 ? 2 : c.v;
    Json row;
    for (const auto& s : j["schedules"])
      if (s["schedule"] == own) row = s;
    ASSERT_TRUE(row.is_object()) << at;
    EXPECT_EQ(row["chunks"], v) << at;
    EXPECT_EQ(row["per_stage_is"], "rank") << at;
    ASSERT_EQ(row["stage_ranks"].size(), static_cast<size_t>(2 * v)) << at;
    EXPECT_EQ(row["per_stage"]["memory"].size(), 2u) << at;  // one entry per rank
    // Each rank's weights are its chunks' together: the two ranks hold the whole model's.
    const double wOne = j["schedules"][0]["memory"]["total"]["weights"];
    EXPECT_NEAR(row["memory"]["total"]["weights"].get<double>(), wOne, 1.0) << at;
    // Its timeline: one trace process per model stage.
    std::ifstream tf(row["timeline"]["file"].get<std::string>());
    const Json trace = Json::parse(tf);
    std::set<int> pids;
    for (const auto& e : trace["traceEvents"])
      if (e.value("ph", std::string()) == "X") pids.insert(e.value("pid", -1));
    EXPECT_EQ(pids.size(), static_cast<size_t>(2 * v)) << at;
    if (c.v == 1) {
      EXPECT_FALSE(j.contains("design_note")) << j.value("design_note", std::string());
      continue;
    }
    const std::string note = j.value("design_note", std::string());
    EXPECT_NE(note.find(c.schedule + " holds " + std::to_string(v) + " model chunks on each of 2 ranks"), std::string::npos) << note;
    o.json = false;
    o.traceDir.clear();
    const auto text = plan(o);
    EXPECT_NE(text.out.find(c.schedule + ": " + std::to_string(v) + " chunks on each of 2 ranks"), std::string::npos) << text.out;
  }
  std::filesystem::remove_all(dir);
}
