#!/usr/bin/env bash
# The benchmark suite, one command: sets up and builds, then runs the engine benchmarks (P=1
# engine vs a plain LibTorch loop and vs PyTorch's Python API, every schedule at P=2 vs P=1,
# measured utilization, time and memory vs the planner) and the store benchmark, printing
# figures and a closing table. Medians of several runs; nothing is asserted.
#   scripts/bench.sh [--runs K] [--steps S]
# The PyTorch row needs Debian's python3-torch (apt install python3-torch); without it the row
# says it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
export OMP_NUM_THREADS=1
build/bench/engine_bench "$@"
echo
build/bench/store_bench
