#include "core/comm/device_context.h"

#include <cerrno>
#include <cstdlib>

#include "core/util/errors.h"
#include "core/util/torch_compat.h"

namespace pm {

EngineBuild engineBuild() {
  EngineBuild b;
  b.torch = compat::torchVersion();
  b.cuda = compat::cudaVersion();
  b.backends = {"gloo"};
  if (compat::kNcclCompiled) b.backends.push_back("nccl");
  return b;
}

void DeviceContext::makeCurrent() const {
  if (!device.is_cuda()) return;
#ifdef PIPEMARE_WITH_CUDA
  compat::setCurrentCudaDevice(device.index());
#endif
}

int localRankFromEnv(int fallback, std::string* source) {
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    errno = 0;
    const long x = std::strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < 0 || x > 65535)
      throw ConfigError(name, std::string("expected a whole number in 0..65535, found \"") + v + "\"");
    if (source) *source = std::string(name) + "=" + v;
    return static_cast<int>(x);
  }
  if (source) *source = "rank " + std::to_string(fallback);
  return fallback;
}

DeviceContext resolveDeviceContext(const std::vector<std::string>& devices, int localRank, const std::string& localRankSource) {
  DeviceContext c;
  c.localRank = localRank;
  if (devices.empty()) return c;
  const size_t i = devices.size() == 1 ? 0 : static_cast<size_t>(localRank);
  const std::string field = "execution.devices[" + std::to_string(i) + "]";
  if (localRank < 0 || i >= devices.size())
    throw ConfigError("execution.devices", "has " + std::to_string(devices.size()) + " entries, but this worker's local rank is " +
                                               std::to_string(localRank) + " (" + localRankSource + ")");
  const std::string& name = devices[i];
  c.source = field + " (" + localRankSource + ")";
  if (name == "cpu") return c;
  try {
    c.device = torch::Device(name);
  } catch (const std::exception&) {
    throw ConfigError(field, "\"" + name + "\" is not a device (expected \"cpu\" or \"cuda:K\")");
  }
  if (!c.device.is_cuda() || !c.device.has_index())
    throw ConfigError(field, "\"" + name + "\" is not a device (expected \"cpu\" or \"cuda:K\")");
  if (!torch::cuda::is_available())
    throw ConfigError(field, "device \"" + name + "\" requested, but this LibTorch has no CUDA (or no GPU is visible)");
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (c.device.index() >= count)
    throw ConfigError(field, "device \"" + name + "\" requested, but this node has " + std::to_string(count) + " GPU(s)");
  return c;
}

}  // namespace pm
