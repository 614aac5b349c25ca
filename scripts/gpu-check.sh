#!/usr/bin/env bash
# The GPU check, for a lent GPU machine (torch with CUDA, nvcc, CMake, ninja and Python in its image;
# nothing fetchable). Rehearsed on the CPU by scripts/test-torch2.sh's build (no GPU: it says so and
# runs what it can), so that only the GPU is new when it meets one. Steps, each printing figures:
#   0. nvcc's CUDA against torch.version.cuda (the major versions must match to configure);
#   1. core + the CLI + gpu_bench built against the machine's own torch
#      (torch.utils.cmake_prefix_path), with gpu-bundle/ (scripts/gpu-bundle.sh, made beforehand)
#      standing in for the Debian -dev packages a bare machine lacks;
#   2. gpu_bench: (a) cnn and resnet50 in single mode on cuda:0 at P = 1, 2, 4 against a plain
#      LibTorch loop on the same GPU, (b) the first 50 losses on the GPU against the CPU,
#      (d) per-stage CUDA allocator memory against the engine's accounting;
#   3. (c) real mode P = 2 on one GPU over Gloo (two processes, host-staged through pinned memory);
#   4. the NCCL placement rule: P = 2 with NCCL on one GPU is refused at validation (exit 2).
# Usage: scripts/gpu-check.sh [--configure-only | --reuse BUILD_DIR] [PYTHON]
#   --configure-only   step 0 and the configuration of step 1, then stop (rehearses the bundle's CMake side)
#   --reuse DIR        skip the configuration: build the targets in an already configured DIR (the
#                      rehearsal here reuses build-torch2 configured with PIPEMARE_BUILD_BENCH=ON)
#   PIPEMARE_GPU_BUDGET_S (default 480): seconds for it all.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=full
builddir=build-gpu
case "${1:-}" in
  --configure-only) mode=configure; shift ;;
  --reuse) mode=reuse; builddir=$2; shift 2 ;;
esac
PY=${1:-python3}
budget=${PIPEMARE_GPU_BUDGET_S:-480}
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
section() { echo; echo "== $* (at $(( $(date +%s) - start )) s)"; }

section "0. versions"
info=$($PY -c 'import torch; print(torch.__version__, torch.version.cuda or "none", torch.cuda.is_available(), torch.utils.cmake_prefix_path)' 2>/dev/null) || {
  echo "gpu-check: error: $PY cannot import torch"; exit 1; }
read -r tver tcuda tavail prefix <<<"$info"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
ncuda=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
echo "torch $tver (CUDA $tcuda, cuda available: $tavail) at $prefix; nvcc $nvcc: CUDA ${ncuda:-none}"
if [ "$tcuda" != "none" ] && [ "${tcuda%%.*}" != "${ncuda%%.*}" ]; then
  echo "gpu-check: error: torch was built with CUDA $tcuda but nvcc is ${ncuda:-missing}: find_package(Torch) needs matching major versions"
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

section "1. build (core, pipemare, gpu_bench) against this torch"
bundle=$PWD/gpu-bundle
extra=()
if [ -d "$bundle" ]; then
  extra=(-DCMAKE_PREFIX_PATH="$prefix;$bundle" -DCMAKE_CXX_FLAGS="-isystem $bundle/include"
         -DSQLite3_INCLUDE_DIR="$bundle/include" -DSQLite3_LIBRARY="$bundle/lib/libsqlite3.so"
         -DZLIB_ROOT="$bundle" -DOPENSSL_ROOT_DIR="$bundle")
  echo "using $bundle for the libraries this machine may lack"
else
  extra=(-DCMAKE_PREFIX_PATH="$prefix")
fi
[ -x "$nvcc" ] && extra+=(-DCMAKE_CUDA_COMPILER="$nvcc")
# The machine's torch libraries by name: find_library would take a system LibTorch (Debian's, where
# one is installed) before the prefix's.
torchlib=$(dirname "$(dirname "$prefix")")/lib
extra+=(-DTORCH_LIBRARY="$torchlib/libtorch.so" -Dc10_LIBRARY="$torchlib/libc10.so")
t0=$(date +%s)
mkdir -p "$builddir"
log=$builddir/gpu-check.log
if [ $mode != reuse ]; then
  cmake -S . -B "$builddir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPEMARE_BUILD_UI=OFF -DPIPEMARE_BUILD_TESTS=OFF \
    -DPIPEMARE_BUILD_BENCH=ON -DPIPEMARE_MAN_PAGES=OFF "${extra[@]}" >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
  grep -E "PipeMare: LibTorch|Found (SQLite3|ZLIB|OpenSSL|nlohmann_json|CLI11)" "$log"
  if [ $mode = configure ]; then echo "configured $builddir in $(( $(date +%s) - t0 )) s (--configure-only: stopping here)"; exit 0; fi
fi
timeout "$(left)" cmake --build "$builddir" --target pipemare gpu_bench -j "$(nproc)" >>"$log" 2>&1 || {
  grep -E "error|FAILED" "$log" | head -20; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
pm="$builddir/bin/pipemare"
"$pm" version

section "2. gpu_bench (a: throughput against a plain loop, b: GPU against CPU losses, d: memory)"
timeout "$(( $(left) - 90 ))" "$builddir/bench/gpu_bench" --device cuda:0
bench=$?
[ $bench -eq 124 ] && echo "gpu-check: gpu_bench stopped at the time budget"

section "3. (c) real mode, P = 2 on one GPU over Gloo (host-staged)"
db=$(mktemp -d)/gpu.db
dev=cuda:0
[ "$tavail" = "True" ] || { dev=cpu; echo "(no GPU visible: rehearsing on the CPU)"; }
timeout "$(( $(left) - 20 ))" "$pm" run experiments/tiny-synthetic.json --db "$db" \
  --set model.name=cnn --set pipeline.stages=2 --set pipeline.microbatches=4 --set execution.mode=real \
  --set execution.backend=gloo --set "execution.devices=[\"$dev\"]" --set data.batch_size=128 \
  --set data.synthetic_samples=8192 --set training.steps=40 --set training.log_interval=10 2>&1 | tail -4
real=${PIPESTATUS[0]}
"$pm" compare 1 --db "$db" 2>&1 | head -8

section "4. NCCL placement: two stages on one GPU are refused (expect exit 2)"
"$pm" validate experiments/tiny-synthetic.json --set pipeline.stages=2 --set execution.mode=real \
  --set execution.backend=nccl --set 'execution.devices=["cuda:0"]' >"$builddir/gpu-check.validate.txt" 2>&1
echo "exit $? ($(tail -1 "$builddir/gpu-check.validate.txt"))"

section "done"
echo "gpu_bench exit $bench, real-mode run exit $real, whole check $(( $(date +%s) - start )) s"
[ $bench -eq 0 ] && [ $real -eq 0 ]
