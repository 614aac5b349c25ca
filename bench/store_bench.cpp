// store_bench: throughput of the SQLite run store.
//  (a) metric rows inserted per second, batched (1,000,000 rows, flush() every 10,000)
//  (b) time to load 1,000,000 metric points of one run with loadMetric()
// Each measurement runs 5 times, each time in a fresh temporary database; medians are printed
// next to the targets. Timings are reported, never asserted.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/store/run_store.h"
#include "core/util/stats.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace fs = std::filesystem;
using pm::median;

namespace {

constexpr int kRepeats = 5;
constexpr int64_t kRows = 1000000;
constexpr int64_t kFlushEvery = 10000;
constexpr double kInsertTarget = 200000;  // rows/s
constexpr double kLoadTarget = 1.0;       // seconds

std::string makeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "pipemare-store-bench-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  return buf.data();
}

std::string withThousands(double v) {
  std::string digits = std::to_string(static_cast<long long>(v + 0.5));
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return out;
}

struct Sample {
  double insertRowsPerSec;
  double loadSeconds;
};

Sample runOnce(const std::string& dir, int rep) {
  const std::string db = (fs::path(dir) / ("bench-" + std::to_string(rep) + ".db")).string();
  Sample s{};
  int64_t run = 0;
  {
    pm::RunStore store(db);
    run = store.createRun("bench", R"({"pipeline":{"schedule":"pipemare","stages":4,"microbatches":8}})");
    double t0 = pm::monotonicSeconds();
    for (int64_t i = 0; i < kRows; ++i) {
      store.appendMetric(run, "train/loss", i, 1.7e9 + i * 0.01, 1.0 / static_cast<double>(i + 1));
      if ((i + 1) % kFlushEvery == 0) store.flush();
    }
    store.flush();
    double t1 = pm::monotonicSeconds();
    s.insertRowsPerSec = static_cast<double>(kRows) / (t1 - t0);
  }
  {
    pm::RunStore reader(db);  // a fresh connection, as a front end would open it
    double t0 = pm::monotonicSeconds();
    auto points = reader.loadMetric(run, "train/loss");
    double t1 = pm::monotonicSeconds();
    if (static_cast<int64_t>(points.size()) != kRows) {
      std::fprintf(stderr, "store_bench: loaded %zu points, expected %lld\n", points.size(),
                   static_cast<long long>(kRows));
      std::exit(1);
    }
    s.loadSeconds = t1 - t0;
  }
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix, ec);
  return s;
}

}  // namespace

int main() {
  try {
    const std::string dir = makeTempDir();
    std::printf("store_bench: SQLite run store, %d runs each in a fresh database under %s\n", kRepeats, dir.c_str());
    std::printf("  (a) insert %s metric rows, flush() every %s rows\n", withThousands(kRows).c_str(),
                withThousands(kFlushEvery).c_str());
    std::printf("  (b) loadMetric() of %s points of one run (fresh connection)\n\n", withThousands(kRows).c_str());

    std::vector<double> inserts, loads;
    for (int rep = 0; rep < kRepeats; ++rep) {
      Sample s = runOnce(dir, rep);
      inserts.push_back(s.insertRowsPerSec);
      loads.push_back(s.loadSeconds);
      std::printf("  run %d: insert %12s rows/s   load %7.3f s\n", rep + 1, withThousands(s.insertRowsPerSec).c_str(),
                  s.loadSeconds);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);

    double insMed = median(inserts), loadMed = median(loads);
    double insMin = *std::min_element(inserts.begin(), inserts.end());
    double insMax = *std::max_element(inserts.begin(), inserts.end());
    double loadMin = *std::min_element(loads.begin(), loads.end());
    double loadMax = *std::max_element(loads.begin(), loads.end());

    const char* rule = "  ---------------------------------------------------------------------------------------------";
    std::printf("\n%s\n", rule);
    std::printf("  %-30s %14s %14s %14s %16s %6s\n", "measurement", "median", "min", "max", "target", "result");
    std::printf("%s\n", rule);
    std::printf("  %-30s %14s %14s %14s %16s %6s\n", "insert metrics (rows/s)", withThousands(insMed).c_str(),
                withThousands(insMin).c_str(), withThousands(insMax).c_str(),
                (">= " + withThousands(kInsertTarget)).c_str(), insMed >= kInsertTarget ? "OK" : "MISS");
    char med[32], mn[32], mx[32];
    std::snprintf(med, sizeof med, "%.3f s", loadMed);
    std::snprintf(mn, sizeof mn, "%.3f s", loadMin);
    std::snprintf(mx, sizeof mx, "%.3f s", loadMax);
    std::printf("  %-30s %14s %14s %14s %16s %6s\n", "load 1M points (loadMetric)", med, mn, mx, "< 1.000 s",
                loadMed < kLoadTarget ? "OK" : "MISS");
    std::printf("%s\n", rule);
    return 0;
  } catch (const pm::Error& e) {
    std::fprintf(stderr, "store_bench: %s\n", e.what());
    return 1;
  }
}
