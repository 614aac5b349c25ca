#!/usr/bin/env bash
# The second LibTorch build, tested: PyPI's torch 2.11.0 with CUDA 13.0 and NCCL (scripts/setup-torch2.sh
# installs it outside the checkout, once per machine), built with the torch2 preset into build-torch2/
# (core, the CLI, the tests and the benchmarks; no Qt), then every suite but the soak and the
# workbench's, and the numerics suites once more with the kernels capped at AVX2 (on a CPU with AVX-512 or AMX). No GPU is needed:
# the tests that need one skip, saying so. Called by scripts/test.sh after the Debian build's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
prefix=$(scripts/setup-torch2.sh | tail -n 1)
py=/opt/pipemare/torch-2.11.0/bin/python
# find_package(Torch) on a CUDA build needs a toolkit of the CUDA major version torch was built with.
torch_cuda=$($py -c 'import torch; print(torch.version.cuda or "")' 2>/dev/null)
nvcc_cuda=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
if [ -z "$nvcc_cuda" ]; then
  echo "test-torch2: error: no nvcc in /usr/local/cuda (the CUDA $torch_cuda toolkit configures the torch2 build)" >&2
  exit 1
fi
if [ "${torch_cuda%%.*}" != "${nvcc_cuda%%.*}" ]; then
  echo "test-torch2: error: torch was built with CUDA $torch_cuda, nvcc is CUDA $nvcc_cuda (the major versions must match)" >&2
  exit 1
fi
echo "test-torch2: torch $($py -c 'import torch; print(torch.__version__)' 2>/dev/null) at $prefix, nvcc $nvcc_cuda"
cmake --preset torch2 >/dev/null
cmake --build build-torch2 -j "$(nproc)"
export QT_QPA_PLATFORM=offscreen
# The soak (label soak) runs alone in scripts/soak.sh; everything else here.
ctest --test-dir build-torch2 -j "$(nproc)" -LE soak --output-on-failure --timeout 600
scripts/numerics-capped.sh build-torch2
echo "test-torch2: passed in $(( $(date +%s) - start )) s"
