#include "core/util/system_info.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__GLIBC__)  // defined by the C library headers above
#include <malloc.h>
#endif

#include "pipemare_revision.h"  // generated at build time: PIPEMARE_GIT_REV

namespace pm {

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string projectRevision() { return PIPEMARE_GIT_REV; }
std::string projectVersion() { return PIPEMARE_VERSION; }

double wallClockSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double monotonicSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int64_t processRssBytes() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, rss = 0;
  if (!(f >> pages >> rss)) return 0;
  return static_cast<int64_t>(rss) * sysconf(_SC_PAGESIZE);
}

int64_t processPeakRssBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

static int collectLibs(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name && *info->dlpi_name) out->emplace_back(info->dlpi_name);
  return 0;
}

BlasInfo loadedBlas() {
  std::vector<std::string> libs;
  dl_iterate_phdr(collectLibs, &libs);
  BlasInfo info;
  info.kind = "unknown";
  for (const auto& l : libs) {
    if (l.find("blas") == std::string::npos && l.find("mkl") == std::string::npos) continue;
    char resolved[PATH_MAX];
    std::string path = realpath(l.c_str(), resolved) ? std::string(resolved) : l;
    std::string kind;
    if (path.find("openblas") != std::string::npos) kind = "openblas";
    else if (path.find("blis") != std::string::npos) kind = "blis";
    else if (path.find("mkl") != std::string::npos) kind = "mkl";
    else if (path.find("atlas") != std::string::npos) kind = "atlas";
    else if (path.find("libblas.so") != std::string::npos) kind = "reference";
    else continue;
    // Prefer the library that libblas.so.3 resolves to (the alternatives system's choice).
    if (info.library.empty() || l.find("libblas.so") != std::string::npos) {
      info.library = path;
      info.kind = kind;
    }
  }
  // No BLAS library of its own: PyPI's LibTorch carries MKL inside libtorch_cpu.so (static).
  if (info.library.empty())
    if (void* sym = dlsym(RTLD_DEFAULT, "MKL_Get_Version_String")) {
      Dl_info where{};
      info.kind = "mkl";
      if (dladdr(sym, &where) && where.dli_fname) {
        char resolved[PATH_MAX];
        info.library = realpath(where.dli_fname, resolved) ? std::string(resolved) : std::string(where.dli_fname);
      }
    }
  return info;
}

bool setBlasThreads(int threads) {
  using SetFn = void (*)(int);
  void* sym = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  if (!sym) return false;
  reinterpret_cast<SetFn>(sym)(threads);
  return true;
}

bool keepLargeAllocations() {
#if defined(__GLIBC__)
  const char* mode = std::getenv("PIPEMARE_MALLOC");
  if (mode && std::string(mode) == "default") return false;
  // Fixed thresholds also turn off glibc's adaptive ones. 1 GiB: blocks up to that come from the
  // heap and stay with the process for reuse; larger ones are still mapped.
  // glibc before 2.35 refuses an mmap threshold above 32 MiB: then no block is mapped at all.
  const int big = 1 << 30;
  const bool mmapOff = mallopt(M_MMAP_THRESHOLD, big) == 1 || mallopt(M_MMAP_MAX, 0) == 1;
  const bool trimOff = mallopt(M_TRIM_THRESHOLD, big) == 1;
  return mmapOff && trimOff;
#else
  return false;
#endif
}

nlohmann::json engineBuildJson(const EngineBuild& b) { return nlohmann::json{{"torch", b.torch}, {"cuda", b.cuda}, {"backends", b.backends}}; }

std::string engineBuildText(const EngineBuild& b) {
  if (b.torch.empty()) return "not recorded";
  std::string backends;
  for (const auto& x : b.backends) backends += (backends.empty() ? "" : " ") + x;
  return "LibTorch " + b.torch + ", " + (b.cuda.empty() ? std::string("no CUDA") : "CUDA " + b.cuda) + ", backends " +
         (backends.empty() ? std::string("none") : backends);
}

EngineBuild engineBuildFromJson(const nlohmann::json& j) {
  EngineBuild b;
  if (!j.is_object()) return b;
  if (const auto t = j.find("torch"); t != j.end() && t->is_string()) b.torch = t->get<std::string>();
  if (const auto c = j.find("cuda"); c != j.end() && c->is_string()) b.cuda = c->get<std::string>();
  if (const auto k = j.find("backends"); k != j.end() && k->is_array())
    for (const auto& x : *k)
      if (x.is_string()) b.backends.push_back(x.get<std::string>());
  return b;
}

double processStartTime(long pid) {
  std::ifstream statFile("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(statFile, line)) return 0;
  // Field 22, counted after the command name's closing parenthesis (the name may hold spaces).
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long ticks = 0;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) ticks = std::strtoull(field.c_str(), nullptr, 10);
  static const double boot = [] {
    std::ifstream stat("/proc/stat");
    for (std::string key; stat >> key;) {
      if (key == "btime") {
        double t = 0;
        stat >> t;
        return t;
      }
      stat.ignore(1 << 20, '\n');
    }
    return 0.0;
  }();
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (ticks == 0 || boot <= 0 || hz <= 0) return 0;
  return boot + static_cast<double>(ticks) / static_cast<double>(hz);
}

}  // namespace pm
