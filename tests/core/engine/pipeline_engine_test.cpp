#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "core/engine/batch_source.h"
#include "core/engine/memory_accounting.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/reference_training.h"
#include "core/engine/training_plan.h"
#include "core/models/model_zoo.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_experiment.h"

using namespace pm;
using pm::test::TempDir;
namespace fs = std::filesystem;

namespace {

using pm::test::tinyExperiment;

// Non-pipelined reference: the whole model, gradient accumulation over the same N microbatches
// of the same minibatches, one optimizer step per minibatch; summed in gpipe's order for gpipe.
std::vector<torch::Tensor> referenceTraining(const Experiment& e, std::optional<BackwardOrder> order = std::nullopt) {
  if (!order) order = e.pipeline.schedule == ScheduleKind::GPipe ? BackwardOrder::Reversed : BackwardOrder::InOrder;
  return trainWithoutPipeline(e, 2, *order).state;
}

// Stage states saved by the engine, loaded back in stage order (parameters, then buffers, per stage).
std::vector<std::vector<torch::Tensor>> loadStages(const fs::path& dir, int stages) {
  std::vector<std::vector<torch::Tensor>> out;
  for (int s = 0; s < stages; ++s) {
    std::vector<torch::Tensor> t;
    torch::load(t, (dir / ("stage" + std::to_string(s) + ".pt")).string());
    out.push_back(t);
  }
  return out;
}

// Pipelined training sums the same float32 terms as non-pipelined training in the same order
// (trainWithoutPipeline sums the microbatch gradients in the schedule's order) with the same kernels
// in the same process, so the weights are equal bit for bit on every CPU. The gap is still
// measured against an allclose tolerance (relative 1e-5, absolute 1e-6) to say how far a failure
// is. Summed in another order, the last-bit rounding is not harmless here: BatchNorm over 4-sample
// microbatches amplifies it, and once a value near a ReLU's or max-pool's edge falls the other way
// the gradient takes another route. Measured with gpipe's backwards summed in forward order:
// 0.003 of the tolerance after one step and 441 times it after three with oneDNN capped at AVX2
// (0.03 times it with the AVX-512 kernels of the same machine).
constexpr double kRtol = 1e-5, kAtol = 1e-6;
constexpr double kLearningRate = 0.01;

struct WeightGap {
  double worst = 0;  // max over elements of |stage - ref| / (kAtol + kRtol |ref|): allclose iff <= 1
  std::string where;
};

// Splits the reference state (whole model) the same way as the stages: per stage, its units'
// parameters then buffers.
WeightGap gapToReference(const Experiment& e, const std::vector<torch::Tensor>& ref,
                         const std::vector<std::vector<torch::Tensor>>& stages, const Partition& part) {
  auto units = buildModel(e.model.name, e.training.seed);
  // Reference order: all parameters (unit order), then all buffers (unit order).
  std::vector<int64_t> paramsPerUnit, buffersPerUnit;
  for (const auto& u : units) {
    paramsPerUnit.push_back(static_cast<int64_t>(u.module.ptr()->parameters().size()));
    buffersPerUnit.push_back(static_cast<int64_t>(u.module.ptr()->buffers().size()));
  }
  WeightGap g;
  auto judge = [&](const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
    const auto w = want.to(torch::kDouble);
    const double m = ((got.to(torch::kDouble) - w).abs() / (kAtol + kRtol * w.abs())).max().item<double>();
    if (m > g.worst) {
      g.worst = m;
      g.where = what;
    }
  };
  int64_t totalParams = 0;
  for (auto n : paramsPerUnit) totalParams += n;
  int64_t pOff = 0, bOff = totalParams;
  for (int s = 0; s < part.stages(); ++s) {
    size_t i = 0;
    for (int u = part.begin[s]; u < part.end[s]; ++u)
      for (int64_t k = 0; k < paramsPerUnit[u]; ++k, ++i, ++pOff) {
        EXPECT_LT(i, stages[s].size());
        if (i >= stages[s].size()) return g;
        judge(stages[s][i], ref[pOff], "stage " + std::to_string(s) + " parameter " + std::to_string(i));
      }
    for (int u = part.begin[s]; u < part.end[s]; ++u)
      for (int64_t k = 0; k < buffersPerUnit[u]; ++k, ++i, ++bOff) {
        EXPECT_LT(i, stages[s].size());
        if (i >= stages[s].size()) return g;
        judge(stages[s][i], ref[bOff], "stage " + std::to_string(s) + " buffer " + std::to_string(i));
      }
  }
  return g;
}

void expectSameWeights(const Experiment& e, const std::vector<std::vector<torch::Tensor>>& stages,
                       const Partition& part) {
  const WeightGap g = gapToReference(e, referenceTraining(e), stages, part);
  EXPECT_EQ(g.worst, 0.0) << "not bit-identical: " << g.where << " differs by " << g.worst << " times the allclose tolerance (rtol "
                           << kRtol << ")";
}

}  // namespace

TEST(PipelineEngine, SingleStageEmitsTheEventStreamAndLearns) {
  MemorySink sink;
  Experiment e = tinyExperiment();
  e.training.steps = 40;
  RunOutcome out = runSingleProcess(e, sink, nullptr);
  EXPECT_EQ(out.status, pm::RunStatus::Finished);
  ASSERT_EQ(sink.ofType(ev::kRunStarted).size(), 1u);
  auto steps = sink.ofType(ev::kStep);
  ASSERT_EQ(steps.size(), 10u);  // every 4 of 40 steps
  EXPECT_EQ(steps.back()["step"], 40);
  EXPECT_LT(steps.back()["loss"].get<double>(), steps.front()["loss"].get<double>());
  auto evals = sink.ofType(ev::kEval);
  ASSERT_GE(evals.size(), 1u);
  EXPECT_GT(evals.back()["accuracy"].get<double>(), 0.3);  // 10 classes: chance is 0.1
  auto stages = sink.ofType(ev::kStage);
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.back()["memory"]["weights"].get<int64_t>(), 669706 * 4);
  EXPECT_EQ(stages.back()["memory"]["optimizer"].get<int64_t>(), 669706 * 4);  // momentum buffers
  EXPECT_GT(stages.back()["utilization"].get<double>(), 0.0);
  EXPECT_LE(stages.back()["utilization"].get<double>(), 1.0);
  EXPECT_FALSE(sink.ofType(ev::kTrace).empty());
}

// gpipe and 1f1b with P = 2 and 3 (single-process) give the same weights as non-pipelined
// training with gradient accumulation over the same microbatches (the cnn has BatchNorm).
TEST(PipelineEngine, GPipeAnd1F1BMatchNonPipelinedTraining) {
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    for (int P : {2, 3}) {
      TempDir tmp;
      Experiment e = tinyExperiment("cnn");
      e.data.synthetic_samples = 96;
      e.data.batch_size = 16;
      e.pipeline.microbatches = 4;
      e.pipeline.stages = P;
      e.pipeline.schedule = scheduleFromName(schedule);
      e.optimizer.lr = kLearningRate;
      e.training.steps = 4;
      e.training.eval_interval = 2;
      MemorySink sink;
      EngineOptions opts;
      opts.saveStateDir = tmp.dir.string();
      RunOutcome out = runSingleProcess(e, sink, nullptr, opts);
      ASSERT_EQ(out.status, pm::RunStatus::Finished) << out.message;
      SCOPED_TRACE(std::string(schedule) + " P=" + std::to_string(P));
      const auto stages = loadStages(tmp.dir, P);
      expectSameWeights(e, stages, resolvePartition(e));
      if (std::string(schedule) == "gpipe" && P == 2) {
        // The check tells errors apart: a quarter less learning rate (as if one microbatch's
        // gradient were lost) and BatchNorm over whole minibatches both fail it by far.
        Experiment lessLr = e;
        lessLr.optimizer.lr *= 0.75;
        EXPECT_GT(gapToReference(e, referenceTraining(lessLr), stages, resolvePartition(e)).worst, 100.0);
        Experiment oneMicrobatch = e;
        oneMicrobatch.pipeline.microbatches = 1;
        EXPECT_GT(gapToReference(e, referenceTraining(oneMicrobatch), stages, resolvePartition(e)).worst, 100.0);
      }
    }
  }
}

// A pipedream or 2bw step applies the mean gradient of the microbatches it accumulated (as
// gradient accumulation does everywhere), not a sum of minibatch means: with one stage (no delay)
// pipedream stepping per microbatch is plain training on microbatch-sized minibatches, and 2bw
// accumulating m = 2N microbatches is plain training on minibatches twice the size.
TEST(PipelineEngine, PipeDreamAnd2BWStepsApplyTheMeanGradientOfTheirMicrobatches) {
  for (const char* schedule : {"pipedream", "pipedream-2bw"}) {
    SCOPED_TRACE(schedule);
    const bool twoBW = std::string(schedule) == "pipedream-2bw";
    TempDir tmp;
    Experiment e = tinyExperiment("cnn");
    e.data.synthetic_samples = 96;
    e.data.batch_size = 16;
    e.pipeline.microbatches = 2;
    e.pipeline.stages = 1;
    e.pipeline.schedule = scheduleFromName(schedule);
    e.pipeline.update_interval = twoBW ? 4 : 1;
    e.optimizer.lr = kLearningRate;
    e.training.steps = twoBW ? 6 : 4;  // 3 steps of 4 microbatches; 8 steps of one
    MemorySink sink;
    EngineOptions opts;
    opts.saveStateDir = tmp.dir.string();
    RunOutcome out = runSingleProcess(e, sink, nullptr, opts);
    ASSERT_EQ(out.status, pm::RunStatus::Finished) << out.message;
    Experiment plain = e;
    plain.pipeline.schedule = ScheduleKind::GPipe;
    plain.pipeline.update_interval = 1;
    plain.data.batch_size = twoBW ? 32 : 8;
    plain.pipeline.microbatches = twoBW ? 4 : 1;
    plain.training.steps = twoBW ? 3 : 8;
    const auto stages = loadStages(tmp.dir, 1);
    // One stage runs each microbatch's backward right after its forward.
    const WeightGap g = gapToReference(e, referenceTraining(plain, BackwardOrder::InOrder), stages, resolvePartition(e));
    EXPECT_EQ(g.worst, 0.0) << "not bit-identical: " << g.where << " differs by " << g.worst << " times the allclose tolerance";
    // A sum of minibatch means (2bw: twice the mean; pipedream: half of it) fails by far.
    Experiment scaled = plain;
    scaled.optimizer.lr *= twoBW ? 2.0 : 0.5;
    EXPECT_GT(gapToReference(e, referenceTraining(scaled, BackwardOrder::InOrder), stages, resolvePartition(e)).worst, 100.0);
  }
}

TEST(PipelineEngine, GPipeWithRecomputeMatchesAndKeepsBatchNormStatisticsSingle) {
  TempDir tmp;
  Experiment e = tinyExperiment("cnn");
  e.data.synthetic_samples = 64;
  e.data.batch_size = 16;
  e.pipeline.microbatches = 4;
  e.pipeline.stages = 2;
  e.pipeline.recompute = true;
  e.optimizer.lr = kLearningRate;
  e.training.steps = 3;
  MemorySink sink;
  EngineOptions opts;
  opts.saveStateDir = tmp.dir.string();
  ASSERT_EQ(runSingleProcess(e, sink, nullptr, opts).status, pm::RunStatus::Finished);
  // Running statistics equal the reference's: the recomputed forward did not update them again.
  expectSameWeights(e, loadStages(tmp.dir, 2), resolvePartition(e));
}

TEST(PipelineEngine, DivergenceGuardStopsTheRun) {
  MemorySink sink;
  Experiment e = tinyExperiment();
  e.optimizer.lr = 10.0;
  e.training.divergence_guard.max_loss = 50;
  RunOutcome out = runSingleProcess(e, sink, nullptr);
  EXPECT_EQ(out.status, pm::RunStatus::Diverged);
  EXPECT_NE(out.message.find("step"), std::string::npos);
  EXPECT_FALSE(sink.ofType(ev::kStep).empty());  // the curve up to the divergence is kept
}

TEST(PipelineEngine, StopFlagStopsTheRun) {
  MemorySink sink;
  std::atomic<bool> stop{true};
  RunOutcome out = runSingleProcess(tinyExperiment(), sink, &stop);
  EXPECT_EQ(out.status, pm::RunStatus::Stopped);
  EXPECT_TRUE(sink.ofType(ev::kStep).empty());
}

// Every P <= 8 and N <= 16 runs to the end in single-process mode (no deadlock), for both
// synchronous schedules, on resnet20 (11 units).
TEST(PipelineEngine, NoDeadlockForSmallPipelines) {
  for (const char* schedule : {"gpipe", "1f1b"})
    for (int P = 1; P <= 8; ++P)
      for (int N : {1, 2, 3, 5, 8, 16}) {
        Experiment e = tinyExperiment("resnet20");
        e.data.synthetic_samples = 16;
        e.data.batch_size = 16;
        e.pipeline.stages = P;
        e.pipeline.microbatches = N;
        e.pipeline.schedule = scheduleFromName(schedule);
        e.training.steps = 2;
        e.training.trace_steps = 0;
        e.data.eval_limit = 4;
        MemorySink sink;
        RunOutcome out = runSingleProcess(e, sink, nullptr);
        EXPECT_EQ(out.status, pm::RunStatus::Finished) << schedule << " P=" << P << " N=" << N << ": " << out.message;
        EXPECT_EQ(sink.ofType(ev::kEval).size(), 2u) << schedule << " P=" << P << " N=" << N;
      }
}

TEST(PipelineEngine, StageEventsReportMemoryPerStage) {
  MemorySink sink;
  Experiment e = tinyExperiment("cnn");
  e.pipeline.stages = 3;
  e.pipeline.microbatches = 4;
  e.pipeline.schedule = ScheduleKind::OneFOneB;
  e.training.steps = 4;
  ASSERT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished);
  auto part = resolvePartition(e);
  auto units = buildModel("cnn", e.training.seed);
  std::map<int, int64_t> weightsByStage;
  for (const auto& ev : sink.ofType(ev::kStage)) weightsByStage[ev["stage"].get<int>()] = ev["memory"]["weights"].get<int64_t>();
  ASSERT_EQ(weightsByStage.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    auto stage = makeStage(units, part.begin[s], part.end[s]);
    EXPECT_EQ(weightsByStage[s], moduleWeightBytes(*stage)) << "stage " << s;
  }
}

// Activations are measured, not only the tensors passed between stages: gpipe keeps the graphs of
// all N microbatches (for the mlp's first stage: its input, 784 floats per sample, and the two ReLU
// outputs autograd saves, 2 x 512, the second being the stage output), 1f1b at most P - s + 1 = 2
// of them at stage 0, pipemare none between forward and backward (it recomputes one at a time).
// Counting stage inputs and outputs only would give 784 + 512 floats per sample, under the lower
// bound below.
TEST(PipelineEngine, ActivationsIncludeWhatAutogradKeeps) {
  std::map<std::string, int64_t> stage0;
  for (const std::string schedule : {"gpipe", "1f1b", "pipemare"}) {
    MemorySink sink;
    Experiment e = tinyExperiment("mlp");
    e.data.synthetic_samples = 2048;
    e.data.batch_size = 2048;
    e.pipeline.stages = 2;
    e.pipeline.microbatches = 8;
    e.pipeline.schedule = scheduleFromName(schedule);
    e.pipeline.partition.method = PartitionMethod::Explicit;
    e.pipeline.partition.boundaries = {2};  // stage 0: 784-512-ReLU-512-ReLU
    e.training.steps = 3;
    e.training.log_interval = 3;
    ASSERT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished) << schedule;
    for (const auto& ev : sink.ofType(ev::kStage)) {
      if (ev["stage"] == 0) stage0[schedule] = ev["memory"]["activations"].get<int64_t>();
      // The window's total is a sum at one moment, never above the peak so far.
      EXPECT_LE(ev["memory"]["total"].get<int64_t>(), ev["memory"]["peak"].get<int64_t>()) << schedule << " " << ev.dump();
    }
  }
  const int64_t perMicrobatch = 256 * (784 + 2 * 512) * 4;  // 256 samples' input and ReLU outputs
  EXPECT_GE(stage0["gpipe"], 8 * perMicrobatch);
  EXPECT_LT(stage0["gpipe"], 8 * perMicrobatch * 3);
  EXPECT_GE(stage0["1f1b"], 2 * perMicrobatch);
  EXPECT_LT(stage0["1f1b"], stage0["gpipe"] / 2);
  EXPECT_LT(stage0["pipemare"], stage0["gpipe"] / 2);
}

// The run's summary totals the stages' compute and takes the maxima of their peaks and delays;
// the final metrics are the last stage's.
TEST(PipelineEngine, RunSummaryCombinesTheStages) {
  MemorySink sink;
  Experiment e = tinyExperiment("mlp");
  e.pipeline.stages = 3;
  e.pipeline.microbatches = 2;
  e.pipeline.schedule = ScheduleKind::PipeMare;
  RunOutcome out = runSingleProcess(e, sink, nullptr);
  ASSERT_EQ(out.status, pm::RunStatus::Finished) << out.message;
  const Json& stages = out.summary["stages"];
  ASSERT_EQ(stages.size(), 3u);
  double compute = 0;
  int64_t peak = 0, tau = 0;
  for (const auto& s : stages) {
    compute += s["compute_s"].get<double>();
    peak = std::max(peak, s["peak_memory"].get<int64_t>());
    tau = std::max(tau, s["tau_max"].get<int64_t>());
  }
  EXPECT_DOUBLE_EQ(out.summary["compute_s"].get<double>(), compute);
  EXPECT_EQ(out.summary["peak_memory"].get<int64_t>(), peak);
  EXPECT_GT(peak, stages[2]["peak_memory"].get<int64_t>());  // stage 0 holds more in flight than the last
  EXPECT_EQ(out.summary["tau_max"].get<int64_t>(), tau);
  EXPECT_GE(tau, 1);  // stage 0's delay, where the last stage has none
  EXPECT_EQ(out.summary["final_loss"], stages[2]["final_loss"]);
  EXPECT_FALSE(out.summary.contains("stage"));
}

// A partition balanced by measured time covers every unit once with P non-empty stages, and the
// run trains with it.
TEST(PipelineEngine, TimeBalancedPartitionIsValidAndTrains) {
  Experiment e = tinyExperiment("cnn");
  e.data.synthetic_samples = 64;
  e.data.batch_size = 16;
  e.pipeline.microbatches = 2;
  e.pipeline.stages = 3;
  e.pipeline.partition.method = PartitionMethod::Time;
  e.training.steps = 2;
  const Partition p = resolvePartition(e);
  ASSERT_EQ(p.stages(), 3);
  EXPECT_EQ(p.begin[0], 0);
  for (int s = 0; s < 3; ++s) {
    EXPECT_LT(p.begin[s], p.end[s]) << "stage " << s << " is empty";
    if (s > 0) {
      EXPECT_EQ(p.begin[s], p.end[s - 1]);
    }
  }
  EXPECT_EQ(p.end[2], 6);
  MemorySink sink;
  EXPECT_EQ(runSingleProcess(e, sink, nullptr).status, pm::RunStatus::Finished);
  ASSERT_EQ(sink.ofType(ev::kRunStarted).size(), 1u);
  // The run measured again (the split may differ where two splits tie), and recorded its own.
  const auto recorded = sink.ofType(ev::kRunStarted)[0]["partition"];
  ASSERT_EQ(recorded.size(), 3u);
  EXPECT_EQ(recorded[0]["units"][0], 0);
  EXPECT_EQ(recorded[2]["units"][1], 6);
}

// The training windows (samples/s, utilization) leave evaluation out: counted in, an evaluation
// after every third step would make the window after it read many times slower. Checked on the
// events' own clocks, not on speeds (a busy machine, or the first step after an evaluation
// refilling caches, must not decide it): the training time a window's samples/s implies is its
// wall time less the evaluation's, not its whole wall time.
TEST(PipelineEngine, TrainingWindowsLeaveEvaluationOut) {
  Experiment e = tinyExperiment("cnn");
  e.data.synthetic_samples = 4096;  // a held-out set of 1024: each evaluation costs many steps
  e.training.steps = 12;
  e.training.log_interval = 1;
  e.training.eval_interval = 3;
  MemorySink sink;
  runSingleProcess(e, sink, nullptr);
  double prevT = -1, prevSamples = 0, evalT = -1;
  int checked = 0;
  for (const auto& ev : sink.events()) {
    const std::string type = ev.value("type", "");
    if (type == "eval") evalT = ev.value("t", 0.0);
    if (type != "step") continue;
    const double t = ev.value("t", 0.0), samples = ev.value("samples", 0.0);
    if (evalT > 0 && prevT > 0) {
      const double wall = t - prevT, evalSpan = evalT - prevT;
      const double implied = (samples - prevSamples) / ev.value("samples_per_s", 1e-9);
      ASSERT_GT(evalSpan, 0.0);
      EXPECT_LT(implied, wall - 0.5 * evalSpan) << "step " << ev.value("step", 0) << ": window " << wall << " s, evaluation "
                                                << evalSpan << " s, implied training time " << implied << " s";
      EXPECT_GT(implied, 0.0);
      ++checked;
    }
    evalT = -1;
    prevT = t;
    prevSamples = samples;
  }
  EXPECT_GE(checked, 3);
}

// A limited text split takes windows spread over the whole text (the first K windows would be one
// corner of it: for the fortunes corpus, Star Trek quotes only).
TEST(BatchSource, LimitedTextSamplesSpreadOverTheText) {
  TempDir tmp;
  const std::string file = (tmp.dir / "t.txt").string();
  {
    std::ofstream f(file);
    for (int i = 0; i < 100; ++i) f << static_cast<char>('a' + i % 26) << std::string(9, '.');  // 1000 bytes
  }
  Experiment e;
  e.data.dataset = DatasetKind::Text;
  e.data.path = file;
  e.data.context = 10;
  e.data.eval_fraction = 0.5;
  e.data.eval_limit = 5;
  const auto source = makeBatchSource(e, /*train=*/false);  // 500 bytes: 49 windows
  ASSERT_EQ(source->size(), 5);
  const Batch b = source->get({0, 1, 2, 3, 4});
  // Window w starts at byte 10 w of the held-out half: its first letter is that of line 50 + w.
  const int64_t windows = 49;
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t w = i * windows / 5;
    EXPECT_EQ(b.x[i][0].item<int64_t>(), 'a' + (50 + w) % 26) << "sample " << i;
  }
  EXPECT_NE(b.x[4][0].item<int64_t>(), 'a' + (50 + 4) % 26);  // not the fifth window
}

// zb-h1 splits each backward into its input part (BI, sent upstream at once) and its weight part
// (W, later): the same kernels on the same tensors, the weight gradients accumulated in the same
// microbatch order, so it trains the weights 1f1b trains bit for bit: with BatchNorm (cnn), with
// activation recompute, P = 2..4. The trace shows BI and W, never a whole B.
TEST(PipelineEngine, ZbH1TrainsBitIdenticallyTo1F1B) {
  for (const bool recompute : {false, true})
    for (int P : {2, 4}) {
      std::vector<std::vector<std::vector<torch::Tensor>>> states;
      for (const char* schedule : {"1f1b", "zb-h1"}) {
        TempDir tmp;
        Experiment e = tinyExperiment("cnn");
        e.data.synthetic_samples = 96;
        e.data.batch_size = 16;
        e.pipeline.microbatches = 4;
        e.pipeline.stages = P;
        e.pipeline.recompute = recompute;
        e.pipeline.schedule = scheduleFromName(schedule);
        e.training.steps = 3;
        MemorySink sink;
        EngineOptions opts;
        opts.saveStateDir = tmp.dir.string();
        RunOutcome out = runSingleProcess(e, sink, nullptr, opts);
        ASSERT_EQ(out.status, pm::RunStatus::Finished) << out.message;
        states.push_back(loadStages(tmp.dir, P));
        std::map<std::string, int> actions;
        for (const auto& t : sink.ofType(ev::kTrace)) ++actions[t.value("action", std::string())];
        const bool split = std::string(schedule) == "zb-h1";
        // 3 steps x 4 microbatches on every stage.
        EXPECT_EQ(actions["B"], split ? 0 : 12 * P) << schedule;
        EXPECT_EQ(actions["BI"], split ? 12 * P : 0) << schedule;
        EXPECT_EQ(actions["W"], split ? 12 * P : 0) << schedule;
      }
      SCOPED_TRACE("P=" + std::to_string(P) + (recompute ? " recompute" : ""));
      for (int s = 0; s < P; ++s) {
        ASSERT_EQ(states[0][s].size(), states[1][s].size());
        for (size_t i = 0; i < states[0][s].size(); ++i)
          EXPECT_TRUE(torch::equal(states[0][s][i], states[1][s][i])) << "stage " << s << " tensor " << i;
      }
    }
}
