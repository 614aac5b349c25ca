// pipemare version: what this engine is (version, the revision it was built from, the LibTorch,
// CUDA and communication backends it was built on), the BLAS library
// LibTorch loaded into it and the folder of the presets it finds (installed, or the source checkout's
// from the build tree). The workbench's About box shows it; scripts/test.sh checks that an installed
// engine names its installed presets.
#include <cstdio>

#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/comm/device_context.h"
#include "core/util/paths.h"
#include "core/util/system_info.h"

namespace pm::cli {

int versionCommand(bool json) {
  const BlasInfo blas = loadedBlas();
  const EngineBuild build = engineBuild();
  if (json) {
    const Json j = {{"version", projectVersion()},
                    {"revision", projectRevision()},
                    {"build", engineBuildJson(build)},
                    {"blas", {{"kind", blas.kind}, {"library", blas.library}}},
                    {"presets", presetDirectory()}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("pipemare %s (revision %s)\nbuilt on: %s\nBLAS: %s%s%s\npresets: %s\n", projectVersion().c_str(),
                projectRevision().c_str(), engineBuildText(build).c_str(), blas.kind.c_str(), blas.library.empty() ? "" : ", ",
                blas.library.c_str(), presetDirectory().c_str());
  }
  return 0;
}

}  // namespace pm::cli
