#!/usr/bin/env bash
# Installs every Debian package the project needs (non-interactive, idempotent; runs
# `apt-get update` once, only when something is missing), then configures and builds the
# release preset into build/ (ccache is used when present).
#   scripts/setup.sh            install + build everything
#   scripts/setup.sh --no-build install only
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ ccache pkg-config git
  qt6-base-dev libqt6sql6-sqlite libqcustomplot-dev
  libtorch-dev libgloo-dev
  libsqlite3-dev zlib1g-dev nlohmann-json3-dev libcli11-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas0-pthread
  dataset-fashion-mnist fortunes
  python3-torch  # scripts/export-model.py and the tests make TorchScript models and tensor files with it
  xvfb xauth
  help2man desktop-file-utils appstream dpkg-dev
  clang libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} missing package(s): ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all ${#PACKAGES[@]} packages present"
fi

# LibTorch uses whichever libblas.so.3 the alternatives system selects; make sure it is OpenBLAS.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) echo "setup: BLAS is $blas" ;;
  *) echo "setup: warning: libblas.so.3 resolves to '$blas' (not OpenBLAS); LibTorch will be slow" ;;
esac

if [ "${1:-}" = "--no-build" ]; then exit 0; fi
JOBS=${PIPEMARE_JOBS:-$(nproc)}
cmake --preset release >/dev/null
echo "setup: building (release preset, $JOBS jobs)..."
cmake --build build -j "$JOBS"
