#pragma once
// Facts about this process and machine, recorded with every run.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pm {

std::string hostName();
std::string projectRevision();  // git revision the binary was built from
std::string projectVersion();
double wallClockSeconds();      // seconds since the Unix epoch
double monotonicSeconds();
// When process `pid` started, in wall-clock seconds (the boot time plus its start in clock ticks,
// /proc); 0 when it cannot be told (no such process). With the pid it names one process: a pid
// reused by a later process has a later start.
double processStartTime(long pid);      // steady clock, for durations
int64_t processRssBytes();      // current resident set size, from /proc/self/statm
int64_t processPeakRssBytes();  // VmHWM from /proc/self/status

struct BlasInfo {
  std::string library;    // resolved path of the loaded libblas / libopenblas, "" if none found
  std::string kind;       // "openblas", "blis", "mkl", "reference", "unknown"
  bool isReference() const { return kind == "reference"; }
};
// Which BLAS library the dynamic linker loaded into this process.
BlasInfo loadedBlas();

// What an engine binary was built on: the LibTorch release, the CUDA version ("" for a CPU-only
// build) and the communication backends compiled in ("gloo", "nccl").
struct EngineBuild {
  std::string torch;
  std::string cuda;
  std::vector<std::string> backends;
};
// As JSON {"torch": ..., "cuda": ..., "backends": [...]} (the store's runs.build, run_started's
// `build`); this binary's: engineBuild() in core/comm/device_context.h; a value that is not such an object reads as an empty EngineBuild.
nlohmann::json engineBuildJson(const EngineBuild& b);
EngineBuild engineBuildFromJson(const nlohmann::json& j);
// For people: "LibTorch 2.11.0, CUDA 13.0, backends gloo nccl" ("no CUDA"; "not recorded" when empty).
std::string engineBuildText(const EngineBuild& b);


// Keeps glibc's malloc from handing large blocks back to the kernel after every use. By default
// a block above the (adaptive) mmap threshold is mapped and unmapped on each allocation, and the
// heap's top is trimmed, so a training step's activations page-fault afresh every time:
// measured on cnn with a 128-sample minibatch, 200-250 samples/s instead of 830-850. Called at the
// start of the engine's processes. PIPEMARE_MALLOC=default leaves glibc's behaviour as it is.
// Returns whether it changed anything (false on other C libraries or when disabled).
bool keepLargeAllocations();

// Set the thread count of the BLAS library (OpenBLAS' openblas_set_num_threads when present).
// Returns false when the library has no such entry point.
bool setBlasThreads(int threads);

}  // namespace pm
