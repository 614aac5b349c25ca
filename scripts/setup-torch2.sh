#!/usr/bin/env bash
# Installs the second LibTorch build: PyTorch from PyPI, pinned, with its CUDA 13.0 libraries
# (the nvidia-* wheels it depends on), into a virtual environment outside the checkout, so that
# every clone on this machine (CI's included) reuses it. Idempotent: an install that imports at
# the pinned version is kept. Prints the CMake prefix of its C++ libraries on the last line.
#   scripts/setup-torch2.sh [VERSION]     (default: the pin below)
#   PIPEMARE_TORCH2_ROOT=DIR              where the environments live (default /opt/pipemare)
# At run time the wheel's own nvidia-* libraries (CUDA runtime, cuBLAS, cuDNN, NCCL, found through
# libtorch_cuda.so's run path) serve it, as on a GPU machine; the CUDA 13.0 toolkit in
# /usr/local/cuda is needed only to configure (find_package(Torch) looks for nvcc and its headers).
# The torch2 preset's CMake prefix is $ROOT/torch-VERSION/torch/share/cmake.
set -euo pipefail
VERSION=${1:-2.11.0}
ROOT=${PIPEMARE_TORCH2_ROOT:-/opt/pipemare}
VENV="$ROOT/torch-$VERSION"
PY=${PIPEMARE_PYTHON:-python3}
NUMPY=2.3.5  # torch warns on every import without NumPy; pinned beside it

have() { "$VENV/bin/python" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$VERSION' else 1)" 2>/dev/null; }

if ! have; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip' 2>/dev/null; then
    echo "setup-torch2: installing python3-venv" >&2
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv python3-pip >/dev/null
    PY=/usr/bin/python3
  fi
  $SUDO mkdir -p "$ROOT"
  rm -rf "$VENV.partial"
  start=$(date +%s)
  echo "setup-torch2: installing torch==$VERSION from PyPI into $VENV (about 3 GB with its CUDA libraries)..." >&2
  "$PY" -m venv "$VENV.partial"
  # --no-compile: Python compiles what it imports on first use instead of all of torch's sources
  # here (CPU the Debian build, running beside this install in CI, can use).
  "$VENV.partial/bin/pip" install --no-cache-dir --no-compile -q --disable-pip-version-check "torch==$VERSION" "numpy==$NUMPY" >&2
  # A venv names its own path in its scripts; the folder is moved into place only once complete,
  # so an interrupted install is never taken for a finished one.
  rm -rf "$VENV"
  mv "$VENV.partial" "$VENV"
  grep -rlI --null "$VENV.partial" "$VENV/bin" "$VENV/pyvenv.cfg" | xargs -0 -r sed -i "s#$VENV.partial#$VENV#g"
  echo "setup-torch2: torch $VERSION installed in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1))" >&2
  have || { echo "setup-torch2: error: $VENV does not import torch $VERSION after install" >&2; exit 1; }
fi
# $VENV/torch links to the package (whatever the Python version's site-packages is called); its
# CMake files find the libraries relative to themselves, so the link is to the package folder.
pkg=$("$VENV/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
[ "$(readlink "$VENV/torch" 2>/dev/null)" = "$pkg" ] || ln -sfn "$pkg" "$VENV/torch"
rm -f "$VENV/cmake"
echo "$VENV/torch/share/cmake"
