#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and runs each for a
# bounded time: the experiment parser, the IDX reader and the text-corpus reader.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60)
#   PIPEMARE_FUZZ_RUNS=N scripts/fuzz.sh     N inputs per target from a fixed seed: the same inputs
#                                            every time (scripts/test.sh, CI)
# Seeds: the preset experiments, small IDX files (plain and gzipped) and text. The corpora grow
# in build-fuzz/corpus/; a crashing input is saved in build-fuzz/artifacts/ and the script fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (Debian: clang, libclang-rt-14-dev); skipped"
  exit 0
fi
# Quiet when it works; the configure or build output in full when it does not.
log_build=$(mktemp)
if ! { cmake --preset fuzz && cmake --build build-fuzz -j "${PIPEMARE_JOBS:-$(nproc)}"; } >"$log_build" 2>&1; then
  echo "fuzz: building the fuzz targets FAILED:"
  grep -E -B2 -A12 'error|FAILED' "$log_build" | head -80
  rm -f "$log_build"
  exit 1
fi
rm -f "$log_build"

corpus=build-fuzz/corpus
mkdir -p "$corpus"/fuzz_experiment "$corpus"/fuzz_idx "$corpus"/fuzz_text_corpus build-fuzz/artifacts
# Seeds (idempotent).
find experiments -name '*.json' -exec cp -n {} "$corpus"/fuzz_experiment/ \;
printf '{"pipeline":{"stages":2}}\0pipeline.schedule=pipemare\npipemare.t1=true' >"$corpus"/fuzz_experiment/seed-overrides
printf '\x00\x00\x08\x01\x00\x00\x00\x03\x01\x02\x03' >"$corpus"/fuzz_idx/seed-1d
printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x02\x01\x02\x03\x04\x05\x06\x07\x08' >"$corpus"/fuzz_idx/seed-3d
gzip -c -n "$corpus"/fuzz_idx/seed-3d >"$corpus"/fuzz_idx/seed-3d.gz
printf '\x07\x40%s' "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs." \
  >"$corpus"/fuzz_text_corpus/seed-text

status=0
for target in fuzz_experiment fuzz_idx fuzz_text_corpus; do
  if [ -n "${PIPEMARE_FUZZ_RUNS:-}" ]; then
    budget=(-runs="$PIPEMARE_FUZZ_RUNS" -seed=1)
    echo "fuzz: $target, $PIPEMARE_FUZZ_RUNS inputs from seed 1"
  else
    budget=(-max_total_time="$SECONDS_PER_TARGET")
    echo "fuzz: $target for ${SECONDS_PER_TARGET}s"
  fi
  log=build-fuzz/$target.log
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      build-fuzz/bin/$target "${budget[@]}" -timeout=10 -rss_limit_mb=2048 \
      -max_len=8192 -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/$target- "$corpus/$target" >"$log" 2>&1; then
    runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "fuzz: $target ok: ${runs:-?} inputs, corpus $(ls "$corpus/$target" | wc -l) files"
  else
    echo "fuzz: $target FAILED (see $log; the input is in build-fuzz/artifacts/)"
    tail -40 "$log"
    status=1
  fi
done
exit $status
