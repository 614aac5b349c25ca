#!/usr/bin/env bash
# The soak test alone: 10,000 steps (or STEPS) of mlp as a real P=2 pipeline, printing each
# process's RSS growth after warm-up (must stay under 5 %) and checking the recorded metrics.
#   scripts/soak.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/tests/soak_test ]; then scripts/setup.sh; fi
PIPEMARE_SOAK_STEPS=${1:-10000} build/tests/soak_test
