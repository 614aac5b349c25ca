#!/usr/bin/env bash
# Builds core and the CLI against a newer PyPI torch than the torch2 pin (default 2.15.0, the newest
# at this writing; from 2.13 its headers need C++20, which CMakeLists.txt then selects), warnings as
# errors, then runs `pipemare version` and a tiny single-mode and real-mode run with it. Not part of
# CI (a third build); a repeatable check of what the next pin will meet.
#   scripts/check-torch-latest.sh [VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-2.15.0}
prefix=$(scripts/setup-torch2.sh "$VERSION" | tail -n 1)
lib=$(dirname "$(dirname "$prefix")")/lib
out=build-torch-$VERSION
start=$(date +%s)
cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPEMARE_WERROR=ON -DPIPEMARE_BUILD_UI=OFF -DPIPEMARE_BUILD_TESTS=OFF \
  -DPIPEMARE_BUILD_BENCH=OFF -DPIPEMARE_MAN_PAGES=OFF -DCMAKE_PREFIX_PATH="$prefix" -DTORCH_LIBRARY="$lib/libtorch.so" \
  -Dc10_LIBRARY="$lib/libc10.so" -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$(dirname "$(realpath "$lib/..")")/nvidia/nccl/lib" >"$out.log" 2>&1 || { tail -30 "$out.log"; exit 1; }
# (-rpath-link: the linker would otherwise resolve libtorch_cuda.so's libnccl.so.2 in the CUDA
# toolkit's folder, whose NCCL is older than the one 2.15 was built with, instead of the wheel's.)
grep "PipeMare: LibTorch" "$out.log"
cmake --build "$out" --target pipemare -j "$(nproc)" >>"$out.log" 2>&1 || { grep -E "error|FAILED" "$out.log" | head -30; exit 1; }
echo "check-torch-latest: built in $(( $(date +%s) - start )) s"
"$out/bin/pipemare" version
db=$(mktemp -d)/t.db
"$out/bin/pipemare" run tiny-synthetic --db "$db" --quiet
"$out/bin/pipemare" run tiny-synthetic --db "$db" --quiet --set pipeline.stages=2 --set execution.mode=real
"$out/bin/pipemare" runs list --db "$db"
