#pragma once
// Facts about this process and machine, recorded with every run.
#include <cstdint>
#include <string>

namespace pm {

std::string hostName();
std::string projectRevision();  // git revision the binary was built from
std::string projectVersion();
double wallClockSeconds();      // seconds since the Unix epoch
double monotonicSeconds();      // steady clock, for durations
int64_t processRssBytes();      // current resident set size, from /proc/self/statm
int64_t processPeakRssBytes();  // VmHWM from /proc/self/status

struct BlasInfo {
  std::string library;    // resolved path of the loaded libblas / libopenblas, "" if none found
  std::string kind;       // "openblas", "blis", "mkl", "reference", "unknown"
  bool isReference() const { return kind == "reference"; }
};
// Which BLAS library the dynamic linker loaded into this process.
BlasInfo loadedBlas();

// Set the thread count of the BLAS library (OpenBLAS' openblas_set_num_threads when present).
// Returns false when the library has no such entry point.
bool setBlasThreads(int threads);

}  // namespace pm
