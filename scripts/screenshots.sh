#!/usr/bin/env bash
# Regenerate docs/screenshots/: every workbench tab at 1600x1000 (docs/screenshots/*.png, the
# README's) and at 1024x640, the smallest window it is laid out for (docs/screenshots/1024x640/*.png), from a fresh store of short runs
# made here (three schedules of cnn P=2 on 2,000 Fashion-MNIST images, and a 2x2 sweep of
# tiny-synthetic), so the pictures show what this revision draws.
# Usage: scripts/screenshots.sh [BUILD_DIR]   (default build; needs xvfb-run and imagemagick's import)
# Takes about five minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/bin
command -v xvfb-run >/dev/null && command -v import >/dev/null || {
  echo "screenshots.sh: needs xvfb-run and import: apt-get install -y xvfb imagemagick" >&2; exit 2; }
[ -x "$bin/pipemare-workbench" ] || { echo "screenshots.sh: no $bin/pipemare-workbench; build first" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=$work/runs.db
export XDG_CONFIG_HOME=$work/config   # default settings: no remembered geometry, smoothing or design
short=(--set data.train_limit=2000 --set data.eval_limit=500 --set training.epochs=1
       --set training.eval_interval=8)

echo "screenshots: recording runs into $db" >&2
for schedule in gpipe pipedream pipemare; do
  "$bin/pipemare" --db "$db" run experiments/cnn-gpipe-p2.json --quiet "${short[@]}" \
    --set pipeline.schedule=$schedule --name "cnn P=2 $schedule" >/dev/null
done
"$bin/pipemare" --db "$db" sweep experiments/tiny-synthetic.json --grid optimizer.lr=0.02,0.1 \
  --grid pipeline.schedule=gpipe,pipemare --set pipeline.stages=2 --set pipeline.microbatches=4 >/dev/null
last=$("$bin/pipemare" --db "$db" runs list --json | /usr/bin/python3 -c \
  'import json,sys; runs=json.load(sys.stdin); print(min(r["id"] for r in runs if "cnn P=2 pipemare" in r["name"]))')
first3=$("$bin/pipemare" --db "$db" runs list --json | /usr/bin/python3 -c \
  'import json,sys; runs=json.load(sys.stdin); print(",".join(str(r["id"]) for r in sorted(runs, key=lambda r: r["id"])[:3]))')

# shot SIZE OUT SECONDS ARGS...: the workbench filling a WxH screen, saved after SECONDS.
shot() {
  local size=$1 out=$2 wait_s=$3; shift 3
  mkdir -p "$(dirname "$out")"
  xvfb-run -a -s "-screen 0 ${size}x24" bash -c '
    "$@" & app=$!
    sleep '"$wait_s"'
    import -window root "'"$(readlink -f "$(dirname "$out")")/$(basename "$out")"'"
    kill $app 2>/dev/null; wait $app 2>/dev/null || true
  ' _ "$bin/pipemare-workbench" --db "$db" -geometry "${size}+0+0" "$@"
  echo "screenshots: $out" >&2
}

for size in 1600x1000 1024x640; do
  dir=docs/screenshots
  [ "$size" = 1600x1000 ] || dir=docs/screenshots/$size
  shot $size $dir/design.png 8 --tab design --experiment experiments/resnet20-pipemare.json
  shot $size $dir/live.png 25 --tab live --experiment experiments/cnn-gpipe-p2.json --run
  shot $size $dir/runs.png 6 --tab runs --run-id "$last"
  shot $size $dir/compare.png 6 --tab compare --compare "$first3" --metric eval/accuracy,train/loss
  shot $size $dir/sweeps.png 6 --tab sweeps
  shot $size $dir/timeline.png 6 --tab timeline --run-id "$last"
done
