#!/usr/bin/env bash
# Builds the Debian package from the release build in build/: CPack's DEB generator packs what
# `cmake --install build` installs, under /usr, with its Depends from dpkg-shlibdeps plus
# libopenblas0-pthread and qt6-qpa-plugins, and Recommends dataset-fashion-mnist, fortunes (the
# settings are at the end of CMakeLists.txt). Writes build/packages/pipemare_<version>_<arch>.deb and
# prints its path; install it with `sudo apt install ./build/packages/pipemare_*.deb`.
#   scripts/package.sh              set up and build (scripts/setup.sh), then package
#   scripts/package.sh --no-build   package what build/ holds (scripts/install-test.sh, after a build)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--no-build" ]; then scripts/setup.sh; fi
[ -f build/CPackConfig.cmake ] || { echo "package: build/ is not configured; run scripts/setup.sh" >&2; exit 2; }
rm -f build/packages/pipemare_*.deb
if ! (cd build && cpack -G DEB >cpack.log 2>&1); then
  cat build/cpack.log >&2
  echo "package: cpack failed (log above, kept in build/cpack.log)" >&2
  exit 1
fi
deb=$(ls build/packages/pipemare_*.deb)
echo "package: $deb"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends
