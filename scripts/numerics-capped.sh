#!/usr/bin/env bash
# scripts/numerics-capped.sh BUILD_DIR: the tests that compare numerics (ctest label `numerics`:
# engine against reference, real against single, resume against uninterrupted, recompute) once more
# with every kernel picker capped at AVX2: oneDNN (ONEDNN_ and, for older releases,
# DNNL_MAX_CPU_ISA), ATen's own dispatch and OpenBLAS. So a machine with AVX-512 or AMX also runs
# them on the kernels of a machine without. On a machine whose widest vector unit is AVX2 already
# (no avx512f, no amx_tile in /proc/cpuinfo) the suite's first run was that run: it says so and
# skips it (PIPEMARE_NUMERICS_CAPPED=always runs it anyway).
set -euo pipefail
build=${1:?usage: scripts/numerics-capped.sh BUILD_DIR}
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
wider=$(echo "$flags" | grep -o -w -E 'avx512f|amx_tile' | sort -u | tr '\n' ' ' || true)
if [ -z "$wider" ] && [ "${PIPEMARE_NUMERICS_CAPPED:-}" != always ]; then
  echo "numerics-capped: this CPU has no AVX-512 or AMX: its numerics tests already ran on AVX2 kernels; not run again"
  exit 0
fi
echo "numerics-capped: this CPU has ${wider:-(forced)}; the numerics tests again with kernels capped at AVX2 ($build)"
ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell \
  ctest --test-dir "$build" -j "$(nproc)" -L numerics --output-on-failure --timeout 600
