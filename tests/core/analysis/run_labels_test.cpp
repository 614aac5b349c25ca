#include "core/analysis/run_labels.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pm {
namespace {

// A run recorded with `config` (what its file set: the rest takes the defaults, as the store
// records a normalised experiment) of a model deep enough for 4 stages.
RunRecord run(int64_t id, const std::string& config) {
  RunRecord r;
  r.id = id;
  nlohmann::json j = nlohmann::json::parse(config);
  if (!j.contains("model")) j["model"] = {{"name", "resnet20"}};
  r.config_json = j.dump();
  return r;
}

// Only what differs among the compared runs, known fields first and short; the name never counts.
TEST(RunLabels, ShowWhatDiffersAmongTheComparedRuns) {
  const auto labels = distinguishingLabels(
      {run(1, R"({"name":"a","pipeline":{"schedule":"gpipe","stages":2,"microbatches":8},"optimizer":{"lr":0.1},"data":{"batch_size":64}})"),
       run(2, R"({"name":"b","pipeline":{"schedule":"1f1b","stages":4,"microbatches":8},"optimizer":{"lr":0.1},"data":{"batch_size":64}})"),
       run(3, R"({"name":"c","pipeline":{"schedule":"1f1b","stages":4,"microbatches":8},"optimizer":{"lr":0.05},"data":{"batch_size":32}})")});
  EXPECT_EQ(labels.at(1), "gpipe P=2 lr=0.1 data.batch_size=64");
  EXPECT_EQ(labels.at(2), "1f1b P=4 lr=0.1 data.batch_size=64");
  EXPECT_EQ(labels.at(3), "1f1b P=4 lr=0.05 data.batch_size=32");
  // Runs that agree (or one run alone) have nothing to tell apart.
  const auto same = distinguishingLabels({run(4, R"({"name":"x","optimizer":{"lr":0.1}})"), run(5, R"({"name":"y","optimizer":{"lr":0.1}})")});
  EXPECT_EQ(same.at(4), "");
  EXPECT_EQ(same.at(5), "");
}

// At most maxFields fields, "..." when more differ; a field one run's record lacks (recorded before
// the field existed) is read as its default, which that run used.
TEST(RunLabels, LongDifferencesAreCutAndMissingFieldsReadAsTheirDefaults) {
  const auto labels = distinguishingLabels({run(1, R"({"pipeline":{"schedule":"gpipe","stages":2},"training":{"seed":1}})"),
                                            run(2, R"({"pipeline":{"schedule":"pipemare","stages":4},"training":{"seed":2},"pipemare":{"t1":true}})")},
                                           3);
  EXPECT_EQ(labels.at(1), "gpipe P=2 seed=1 ...");
  EXPECT_EQ(labels.at(2), "pipemare P=4 seed=2 ...");
  const auto all = distinguishingLabels({run(1, R"({"pipeline":{"stages":2}})"), run(2, R"({"pipeline":{"stages":2},"pipemare":{"t1":true}})")});
  EXPECT_EQ(all.at(1), "T1=false");
  EXPECT_EQ(all.at(2), "T1=true");
}

}  // namespace
}  // namespace pm
