#!/usr/bin/env bash
# The core test suites under AddressSanitizer + UndefinedBehaviorSanitizer (the `asan` preset,
# build-asan/; core and its tests only). Any sanitizer report fails the run.
#   scripts/asan.sh [CTEST_ARGS...]      default: the unit tests (ctest -L unit)
# About 40 minutes to build from scratch on 2 cores (LibTorch's headers under ASan; ccache makes
# rebuilds quick), so it is a script rather than part of .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build
cmake --preset asan >/dev/null
# The core test suites (tests/core; the `unit` label).
cmake --build build-asan -j "${PIPEMARE_JOBS:-$(nproc)}" --target util_test events_test config_test data_test store_test models_test \
  pipeline_schedule_test planner_test comm_test engine_test runner_test cli_verbs_test analysis_test
# LibTorch is not instrumented: its own allocations are fine, but its one-time globals look like
# leaks at exit, so leak checking stays off; every other ASan / UBSan finding aborts the test.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [ $# -eq 0 ]; then set -- -L unit; fi
ctest --test-dir build-asan -j "${PIPEMARE_JOBS:-$(nproc)}" --output-on-failure --timeout 1800 "$@"
