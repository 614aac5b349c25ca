#!/usr/bin/env bash
# GPU check: builds core + the `pipemare` CLI against the C++ libraries inside a CUDA PyTorch
# install (found through torch.utils.cmake_prefix_path; no Qt needed), then runs `cnn` with P = 1
# and a 2-stage single-process pipeline on the GPU and prints their throughput. A few minutes on
# one GPU. Usage: scripts/gpu-check.sh [python3]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
prefix=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
cuda=$($PY -c 'import torch; print(torch.cuda.is_available())')
echo "gpu-check: torch $($PY -c 'import torch; print(torch.__version__)') at $prefix, cuda available: $cuda"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DPIPEMARE_BUILD_UI=OFF -DPIPEMARE_BUILD_TESTS=OFF -DPIPEMARE_BUILD_BENCH=OFF >/dev/null
cmake --build build-gpu --target pipemare -j "$(nproc)"
db=$(mktemp -d)/gpu.db
for stages in 1 2; do
  echo "== cnn, P=$stages, single-process, cuda:0"
  build-gpu/bin/pipemare run experiments/cnn-gpipe-p2.json --db "$db" \
    --set pipeline.stages=$stages --set execution.mode=single --set 'execution.devices=["cuda:0"]' \
    --set training.epochs=0.5 2>&1 | grep -E "samples/s|finished|error"
done
