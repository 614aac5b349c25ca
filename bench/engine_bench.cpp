// Engine benchmarks (issue: pipeline engine). Prints figures; asserts nothing.
//  1. P = 1 engine against a plain LibTorch training loop on `cnn`, batch 128, same BLAS and threads.
//  2. real P = 2 gpipe and 1f1b, N = 8, on `cnn`: measured utilization per stage against N/(N+P-1).
//  3. real P = 2 (one thread per stage) against P = 1 (one thread): throughput ratio, gpipe N = 8.
// Each figure is the median of several runs measured in this process, in this run.
// Usage: engine_bench [--runs K] [--steps S] [--pipemare PATH]
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/engine/batch_source.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/reference_training.h"
#include "core/engine/training_plan.h"
#include "core/models/model_zoo.h"
#include "core/runner/launcher.h"
#include "core/util/system_info.h"

using namespace pm;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Experiment cnnExperiment(int stages, int N, const std::string& schedule, int64_t steps) {
  Experiment e;
  e.name = "bench";
  e.model.name = "cnn";
  e.data.dataset = "fashion-mnist";
  e.data.batch_size = 128;
  e.data.train_limit = 128 * (steps + 1);
  e.data.eval_limit = 256;
  e.pipeline.stages = stages;
  e.pipeline.microbatches = N;
  e.pipeline.schedule = schedule;
  e.pipeline.partition.method = "explicit";
  if (stages == 2) e.pipeline.partition.boundaries = {2};  // conv1-2 | conv3, conv4, fc1, fc2 (time-balanced)
  e.optimizer.lr = 0.05;
  e.optimizer.momentum = 0.9;
  e.training.steps = steps;
  e.training.log_interval = 1;
  e.training.eval_interval = 100000;  // evaluate only at the end
  e.training.trace_steps = 0;
  e.execution.threads_per_stage = 1;
  e.execution.mode = stages > 1 ? "real" : "single";
  return e;
}

struct Measured {
  double samplesPerS = 0;
  std::vector<double> utilization;  // per stage, over steady-state windows
};

// Throughput over the steps after the first two (warm-up), from the step events' time stamps.
Measured measure(const std::vector<Json>& events, int stages) {
  Measured m;
  std::vector<std::pair<double, double>> steps;  // (t, samples)
  std::vector<double> compute(static_cast<size_t>(stages)), wall(static_cast<size_t>(stages));
  for (const auto& e : events) {
    const std::string type = e.value("type", "");
    if (type == "step") steps.push_back({e.value("t", 0.0), static_cast<double>(e.value("samples", int64_t{0}))});
    if (type == "stage" && e.value("step", int64_t{0}) > 2) {
      const size_t s = static_cast<size_t>(e.value("stage", 0));
      if (s < compute.size()) {
        compute[s] += e.value("compute_s", 0.0);
        wall[s] += e.value("compute_s", 0.0) + e.value("wait_s", 0.0) + e.value("idle_s", 0.0);
      }
    }
  }
  if (steps.size() >= 4) {
    const auto& a = steps[2];
    const auto& b = steps.back();
    m.samplesPerS = (b.second - a.second) / std::max(1e-9, b.first - a.first);
  }
  for (size_t s = 0; s < compute.size(); ++s) m.utilization.push_back(wall[s] > 0 ? compute[s] / wall[s] : 0);
  return m;
}

Measured runEngine(const Experiment& e, const std::string& pipemare) {
  MemorySink sink;
  if (e.execution.mode == "real") {
    LaunchRequest req;
    req.experiment = e;
    req.workerBinary = pipemare;
    launchWorkers(req, sink, nullptr);
  } else {
    runSingleProcess(e, sink, nullptr);
  }
  return measure(sink.events(), e.pipeline.stages);
}

// The plain loop: same model, data, microbatching and optimizer, no engine.
double plainLoop(const Experiment& e) { return trainWithoutPipeline(e).samplesPerSecond; }

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  int64_t steps = 30;
  char self[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string("bench/engine_bench");
  std::string pipemare = dir.substr(0, dir.rfind('/')) + "/../bin/pipemare";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--pipemare")) pipemare = argv[i + 1];
  }
  torch::set_num_threads(1);
  setBlasThreads(1);
  std::printf("engine_bench: cnn, batch 128, %lld steps per run, median of %d runs, 1 thread per stage, BLAS %s\n",
              static_cast<long long>(steps), runs, loadedBlas().kind.c_str());

  // 1. P = 1 engine vs plain loop (N = 1 and N = 8).
  for (int N : {1, 8}) {
    std::vector<double> engine, plain;
    for (int r = 0; r < runs; ++r) {
      plain.push_back(plainLoop(cnnExperiment(1, N, "gpipe", steps)));
      engine.push_back(runEngine(cnnExperiment(1, N, "gpipe", steps), pipemare).samplesPerS);
    }
    std::printf("1. P=1 engine vs plain LibTorch loop, N=%d: %.1f vs %.1f samples/s, ratio %.3f (target >= 0.95)\n", N,
                median(engine), median(plain), median(engine) / median(plain));
  }

  // 2 + 3. real P = 2.
  const double P1 = [&] {
    std::vector<double> v;
    for (int r = 0; r < runs; ++r) v.push_back(runEngine(cnnExperiment(1, 8, "gpipe", steps), pipemare).samplesPerS);
    return median(v);
  }();
  for (const char* schedule : {"gpipe", "1f1b", "pipedream", "pipedream-2bw", "pipemare"}) {
    std::vector<double> tput, u0, u1;
    for (int r = 0; r < runs; ++r) {
      Experiment e = cnnExperiment(2, 8, schedule, steps);
      if (std::string(schedule) == "pipedream-2bw") e.pipeline.update_interval = 2;
      if (std::string(schedule) == "pipemare") e.pipemare.t1 = true;
      Measured m = runEngine(e, pipemare);
      tput.push_back(m.samplesPerS);
      u0.push_back(m.utilization.at(0));
      u1.push_back(m.utilization.at(1));
    }
    const bool async = std::string(schedule) != "gpipe" && std::string(schedule) != "1f1b";
    const double theory = async ? 1.0 : 8.0 / 9.0;
    std::printf("2. real P=2 %-13s N=8: utilization stage0 %.3f stage1 %.3f, theory %.3f (%s)\n", schedule, median(u0),
                median(u1), theory, async ? "steady state 1; pipemare target >= 0.93" : "N/(N+P-1); target within 0.05");
    std::printf("3. real P=2 %-13s N=8: %.1f samples/s vs P=1 %.1f: speedup %.2fx (%s)\n", schedule, median(tput), P1,
                median(tput) / P1, async ? "pipemare target >= 1.85x, limit 2x" : "gpipe target >= 1.6x, theory 1.78x");
  }
  return 0;
}
