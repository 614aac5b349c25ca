#!/usr/bin/env bash
# The two LibTorch builds side by side on this machine's CPU: cnn at P = 1 (single mode) and
# pipemare at real P = 2, each build in turn within every round (interleaved), training throughput
# as the median over the rounds of the step events' samples/s after the first two logging windows
# (start-up and evaluation left out), and the torch2 build's ratio to the Debian build's.
#   scripts/bench-builds.sh [ROUNDS] [STEPS]     (default 3 rounds, 60 steps; both builds built first)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
steps=${2:-60}
builds=(build build-torch2)
for b in "${builds[@]}"; do [ -x "$b/bin/pipemare" ] || { echo "bench-builds: build $b first" >&2; exit 2; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases=("p1:--set pipeline.stages=1 --set pipeline.microbatches=4 --set execution.mode=single --set pipeline.schedule=gpipe"
       "p2:--set pipeline.stages=2 --set pipeline.microbatches=4 --set execution.mode=real --set pipeline.schedule=pipemare")
rate() {  # the median samples/s of a run's step events after the first two
  python3 -c '
import json, statistics, sys
r = [e["samples_per_s"] for e in map(json.loads, open(sys.argv[1])) if e.get("type") == "step" and "samples_per_s" in e][2:]
print("%.1f" % statistics.median(r) if r else "nan")' "$1"
}
for ((r = 1; r <= rounds; ++r)); do
  for c in "${cases[@]}"; do
    name=${c%%:*}
    for b in "${builds[@]}"; do
      # shellcheck disable=SC2086
      "$b/bin/pipemare" run experiments/tiny-synthetic.json --db "$tmp/$name-$b.db" --events stdout --quiet \
        --set model.name=cnn --set data.batch_size=128 --set data.synthetic_samples=16384 --set training.steps="$steps" \
        --set training.log_interval=5 --set training.eval_interval=100000 ${c#*:} >"$tmp/ev" 2>/dev/null
      echo "$(rate "$tmp/ev")" >>"$tmp/$name-$b.rates"
    done
  done
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "| case | Debian LibTorch 1.13 samples/s | torch2 (2.11.0) samples/s | torch2 / Debian | rounds |"
echo "|---|---|---|---|---|"
for c in "${cases[@]}"; do
  name=${c%%:*}
  a=$(median "$tmp/$name-build.rates"); t=$(median "$tmp/$name-build-torch2.rates")
  label=$([ "$name" = p1 ] && echo "cnn P=1 single, gpipe N=4" || echo "cnn P=2 real, pipemare N=4")
  echo "| $label | $a ($(paste -sd, "$tmp/$name-build.rates")) | $t ($(paste -sd, "$tmp/$name-build-torch2.rates")) | $(awk -v a="$a" -v t="$t" 'BEGIN {printf "%.3f", t / a}') | $rounds |"
done
