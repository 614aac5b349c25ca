// gpu_bench: the GPU check's in-process measurements (scripts/gpu-check.sh), needing only core and
// LibTorch (no Qt, GoogleTest or dataset package), on synthetic data:
//  a. `cnn` and `resnet50` in single mode on the device at P = 1, 2 and 4: the engine's samples/s
//     against a plain LibTorch loop (same model, data, microbatching and optimizer, no engine) on
//     the same device, in interleaved rounds, as a ratio of medians;
//  b. the loss of the first steps on the device against the same run on the CPU (the largest
//     relative difference, step by step);
//  d. per stage, the CUDA caching allocator's peak against the engine's accounted peak.
// Without a GPU it says so and rehearses everything on the CPU, smaller, so that a GPU machine
// meets no new code path but the device.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/comm/device_context.h"
#include "core/config/experiment.h"
#include "core/engine/pipeline_engine.h"
#include "core/engine/reference_training.h"
#include "core/events/event_sink.h"
#include "core/util/stats.h"

using namespace pm;

namespace {

Experiment benchExperiment(const std::string& model, int stages, int batch, int64_t steps, const std::string& device) {
  Experiment e;
  e.name = "gpu-bench";
  e.model.name = model;
  e.data.dataset = DatasetKind::Synthetic;
  e.data.batch_size = batch;
  e.data.synthetic_samples = batch * (steps + 1);
  e.pipeline.stages = stages;
  e.pipeline.microbatches = std::max(stages, 2);
  e.pipeline.schedule = ScheduleKind::GPipe;
  e.optimizer.lr = 0.05;
  e.optimizer.momentum = 0.9;
  e.training.steps = steps;
  e.training.log_interval = 1;
  e.training.eval_interval = 1000000;  // the final evaluation only
  e.execution.mode = ExecutionMode::Single;
  e.execution.devices = {device};
  return e;
}

// The engine's training throughput over the steps after the first two (start-up left out; all of
// them in a short rehearsal), and the per-step losses and last stage events.
struct EngineRun {
  double samplesPerS = 0;
  std::vector<double> losses;
  std::vector<Json> lastStageEvents;  // per stage
};
EngineRun runEngine(const Experiment& e) {
  MemorySink sink;
  const RunOutcome out = runSingleProcess(e, sink, nullptr);
  if (out.status != RunStatus::Finished) throw std::runtime_error("engine run " + std::string(toString(out.status)) + ": " + out.message);
  EngineRun r;
  std::vector<std::pair<double, double>> steps;  // (t, samples)
  r.lastStageEvents.resize(static_cast<size_t>(e.pipeline.stages));
  for (const auto& ev : sink.events()) {
    const std::string type = ev.value("type", "");
    if (type == ev::kStep) {
      r.losses.push_back(ev.value("loss", 0.0));
      steps.emplace_back(ev.value("t", 0.0), ev.value("samples", 0.0));
    } else if (type == ev::kStage) {
      const int s = ev.value("stage", 0);
      if (s >= 0 && s < e.pipeline.stages) r.lastStageEvents[static_cast<size_t>(s)] = ev;
    }
  }
  // After the first two steps (start-up) when there are enough, else over all of them.
  if (steps.size() >= 2) {
    const auto& a = steps[steps.size() >= 4 ? 2 : 0];
    const auto& b = steps.back();
    r.samplesPerS = (b.second - a.second) / std::max(1e-9, b.first - a.first);
  }
  return r;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpu_bench: the engine on a GPU against a plain LibTorch loop, GPU against CPU losses, CUDA memory per stage"};
  std::string device = "cuda:0";
  int rounds = 3;
  int64_t steps = 30;
  int64_t lossSteps = 50;
  app.add_option("--device", device, "the device (cuda:K; cpu rehearses)");
  app.add_option("--rounds", rounds, "interleaved rounds per figure (medians)");
  app.add_option("--steps", steps, "training steps per throughput run");
  app.add_option("--loss-steps", lossSteps, "steps compared between the device and the CPU");
  CLI11_PARSE(app, argc, argv);
  const EngineBuild build = engineBuild();
  std::printf("gpu_bench: %s\n", engineBuildText(build).c_str());
  const bool gpu = torch::cuda::is_available();
  if (device != "cpu" && !gpu) {
    std::printf("gpu_bench: no GPU is visible (torch::cuda::is_available() is false): rehearsing on the CPU, smaller\n");
    device = "cpu";
    rounds = 1;
    steps = 4;
    lossSteps = 6;
  } else if (gpu) {
    std::printf("gpu_bench: %d GPU(s) visible; measuring on %s\n", static_cast<int>(torch::cuda::device_count()), device.c_str());
  }
  const bool onCpu = device == "cpu";
  int failures = 0;

  // a. throughput, engine against the plain loop, interleaved rounds.
  std::printf("\na. single mode on %s, engine against a plain LibTorch loop (median of %d interleaved rounds)\n", device.c_str(), rounds);
  std::printf("| model | P | N | batch | engine samples/s | plain loop samples/s | ratio |\n|---|---|---|---|---|---|---|\n");
  for (const std::string model : {"cnn", "resnet50"}) {
    const int batch = model == "cnn" ? 128 : (onCpu ? 4 : 64);
    const int64_t n = model == "cnn" ? steps : std::max<int64_t>(onCpu ? 3 : 10, steps / 3);
    for (int P : {1, 2, 4}) {
      std::vector<double> engine, plain;
      try {
        for (int r = 0; r < rounds; ++r) {
          const Experiment e = benchExperiment(model, P, batch, n, device);
          engine.push_back(runEngine(e).samplesPerS);
          Experiment flat = e;
          flat.pipeline.stages = 1;
          plain.push_back(trainWithoutPipeline(flat).samplesPerSecond);
        }
        const double me = median(engine), mp = median(plain);
        std::printf("| %s | %d | %d | %d | %.1f | %.1f | %.3f |\n", model.c_str(), P, std::max(P, 2), batch, me, mp,
                    mp > 0 ? me / mp : 0.0);
      } catch (const std::exception& ex) {
        ++failures;
        std::printf("| %s | %d | - | %d | failed: %s | | |\n", model.c_str(), P, batch, ex.what());
      }
      std::fflush(stdout);
    }
  }

  // b. the losses of the first steps on the device against the CPU.
  std::printf("\nb. cnn, P = 2 gpipe, the first %lld losses on %s against the CPU\n", static_cast<long long>(lossSteps), device.c_str());
  try {
    const EngineRun here = runEngine(benchExperiment("cnn", 2, 32, lossSteps, device));
    const EngineRun cpu = onCpu ? here : runEngine(benchExperiment("cnn", 2, 32, lossSteps, "cpu"));
    double worst = 0;
    int64_t at = 0;
    for (size_t i = 0; i < std::min(here.losses.size(), cpu.losses.size()); ++i) {
      const double rel = std::abs(here.losses[i] - cpu.losses[i]) / std::max(1e-12, std::abs(cpu.losses[i]));
      if (rel > worst) worst = rel, at = static_cast<int64_t>(i) + 1;
    }
    std::printf("steps compared: %zu; first loss %.6f (device) vs %.6f (cpu); last %.6f vs %.6f; largest relative difference %.3g "
                "at step %lld\n",
                std::min(here.losses.size(), cpu.losses.size()), here.losses.empty() ? 0.0 : here.losses.front(),
                cpu.losses.empty() ? 0.0 : cpu.losses.front(), here.losses.empty() ? 0.0 : here.losses.back(),
                cpu.losses.empty() ? 0.0 : cpu.losses.back(), worst, static_cast<long long>(at));
    if (onCpu) std::printf("(rehearsal: the CPU against itself; the figure is 0 by construction)\n");
  } catch (const std::exception& ex) {
    ++failures;
    std::printf("failed: %s\n", ex.what());
  }

  // d. memory per stage: the CUDA caching allocator against the engine's accounting.
  std::printf("\nd. cnn, P = 2 gpipe on %s: per stage, accounted peak against the CUDA allocator\n", device.c_str());
  std::printf("| stage | accounted total MiB (window peak) | cuda allocated peak MiB | cuda reserved MiB |\n|---|---|---|---|\n");
  try {
    const EngineRun r = runEngine(benchExperiment("cnn", 2, 128, std::max<int64_t>(steps / 3, 3), device));
    for (size_t s = 0; s < r.lastStageEvents.size(); ++s) {
      const Json& st = r.lastStageEvents[s];
      const double accounted = st.contains("memory") ? st["memory"].value("total", 0.0) : 0.0;
      if (st.contains("cuda"))
        std::printf("| %zu | %.1f | %.1f | %.1f |\n", s, mib(accounted), mib(st["cuda"].value("allocated_peak", 0.0)),
                    mib(st["cuda"].value("reserved", 0.0)));
      else
        std::printf("| %zu | %.1f | - (not a CUDA stage) | - |\n", s, mib(accounted));
    }
    // In single mode every stage shares one device: its allocator's figures cover all of them.
    if (!onCpu) std::printf("(one process, one device: the allocator's figures are the device's, all stages together)\n");
  } catch (const std::exception& ex) {
    ++failures;
    std::printf("failed: %s\n", ex.what());
  }
  std::printf("\ngpu_bench: %s\n", failures == 0 ? "done" : (std::to_string(failures) + " part(s) failed").c_str());
  return failures == 0 ? 0 : 1;
}
