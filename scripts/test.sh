#!/usr/bin/env bash
# Command 2: set up, build, and run every test suite (ctest, both cores) on the Debian LibTorch and on
# the torch2 build (PyPI torch 2.11.0); exits non-zero on
# any failure. Tests use small data they make themselves (and the Debian datasets if present).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Debian packages first; then torch 2.11.0's install (a 3 GB download, scripts/setup-torch2.sh,
# which the torch2 build below needs) goes on in the background while the Debian build compiles.
scripts/setup.sh --no-build
torch2_log=$(mktemp /tmp/pipemare-setup-torch2.XXXXXX)
scripts/setup-torch2.sh >"$torch2_log" 2>&1 &
torch2_setup=$!
trap 'kill "$torch2_setup" 2>/dev/null || true' EXIT
scripts/setup.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600
# The tests that compare numerics once more with every kernel picker capped at AVX2, on a machine
# with wider vector units (scripts/numerics-capped.sh).
scripts/numerics-capped.sh build
# The installation: `cmake --install` into a staging folder, the installed programs run from outside
# the checkout, the desktop entry and AppStream metadata validated, the .deb's files and fields
# (scripts/install-test.sh; about a minute, re-using build/).
scripts/install-test.sh
# The libFuzzer targets (experiment parser, IDX and text-corpus readers), briefly and from a fixed
# seed (the same inputs every run); longer, open-ended runs: scripts/fuzz.sh SECONDS.
PIPEMARE_FUZZ_RUNS=${PIPEMARE_FUZZ_RUNS:-40000} scripts/fuzz.sh
# The second LibTorch build: PyPI's torch 2.11.0 with CUDA 13.0 and NCCL (installed once per machine
# outside the checkout), core, the CLI and the suites that tell the builds apart, the numerics ones
# also capped at AVX2 (scripts/test-torch2.sh).
if ! wait "$torch2_setup"; then
  cat "$torch2_log" >&2
  echo "test: installing torch 2.11.0 (scripts/setup-torch2.sh) FAILED" >&2
  exit 1
fi
grep -v '^/' "$torch2_log" || true  # what it said, less the prefix it prints last
rm -f "$torch2_log"
scripts/test-torch2.sh
