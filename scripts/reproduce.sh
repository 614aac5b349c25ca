#!/usr/bin/env bash
# The reproduction study (docs: reports/study.md is what it writes).
#   scripts/reproduce.sh [--quick] [--db FILE] [--out DIR] [--parallel J] [--only PARTS] [--resume] [--dry-run]
# --only quality,quality-full,quality-n8,quality-n4,quality-long,quality-m0,charlm,hardware,planner,stability,stability-cnn,frontier runs just those parts again: their earlier
# runs in the store are deleted first, the others are kept, and the whole report is redrawn.
# --resume continues an interrupted study instead: each part keeps its finished (and diverged)
# runs and runs only the points it lacks; stopped, failed or interrupted runs are run again.
# --dry-run prints what the study would delete and run (with --resume: what a part still lacks),
# and changes nothing.
# Runs every part of the study into one store, then draws the report with pipemare-report: a
# one-screen summary of the paper's three claims, then one section per question, detail in an
# appendix. Each section states the revisions, seeds and CPU hours of its runs (from the store).
#   Quality (section 1, appendix A1-A7):
#     quality: ResNet-20 on Fashion-MNIST, one stage per unit (P = 11): gpipe, 1f1b, pipedream,
#       pipedream-2bw, naive async, pipemare T1, pipemare T1+T2, at two learning rates, on the
#       first 12,000 training images;
#     quality-full: gpipe, naive async, T1+T2, T1+T2 annealed over all 3 epochs (K), T1+T2 with
#       delay-scaled momentum and T1+T2 after a synchronous warm-up of one epoch and of a quarter
#       epoch on all 60,000 (5x the steps; 15 minutes a run), and a second seed of gpipe, naive,
#       T1+T2 and T1+T2 with warm-up at lr 0.1, and those four at lr 0.3;
#     quality-n8: gpipe, pipedream, naive async, T1 and T1+T2 on all 60,000 with N = 8 microbatches
#       (stage 0's delay 2 steps, not 5), gpipe and naive at the higher lr 0.3, and a second seed
#       of gpipe, naive and T1+T2 at lr 0.1;
#     quality-n4: gpipe, naive async and T1+T2 with N = 4 (stage 0's delay 3 steps) at lr 0.1 and 0.3, two seeds;
#     quality-long: gpipe, naive async and T1+T2 with N = 2 on all 60,000 for 10 epochs at lr 0.1 and 0.3,
#       and a second seed of gpipe, naive and T1+T2 at lr 0.1;
#     quality-m0: gpipe, pipedream, naive async, T1 and T1+T2 as quality-full but with plain SGD
#       (momentum 0), at lr 0.3 and 1.0, and a second seed of gpipe, naive and T1+T2;
#     charlm on the fortunes corpus: gpipe, pipedream, pipemare T1+T2 with and without warm-up;
#   Hardware (section 2): real P = 2 runs of cnn for every schedule, and P = 1 as the baseline
#     (alone, then two side by side: the machine's 2-core ceiling), in 3 rounds (1 with --quick);
#   Planner (section 3): ResNet-50 with P = 107 (N = 8 and 32); seconds;
#   Stability (section 4): the edges plan --stability --probe predicts (the analytic bound and the
#     probe), and a learning rate x schedule map (gpipe, naive async, T1, T1+T2, pipedream) on
#     ResNet-20 with P = 11 as in quality, two seeds;
#   stability-cnn (section 4b): the same on the zoo's cnn, P = 6, N = 1, on a x1.5 grid.
#   Frontier (section 5): PipeMare against the synchronous frontier (interleaved 1F1B, ZB-H1,
#     ZB-V): the planner's rows at P = 107 (N = 8, 32 and 107, where interleaving applies), real
#     runs of every schedule on cnn (P = 2) and resnet20 (P = 2, and P = 4 oversubscribing the 2
#     cores) in 3 rounds (1 with --quick), and one quality check of the chunked schedules beside gpipe and 1f1b.
# Wall time on 2 cores (CPU hours are about twice these; the report gives each section's from its
# runs): quality 13 min, quality-full 160, quality-n8 180, quality-n4 50, quality-long 125,
# quality-m0 90, charlm 5, hardware 6, stability 110, stability-cnn 30, frontier 12; about 780 minutes in all. --quick: smaller data
# and grids, about 10 minutes, into reports/quick/.
# The store of the committed report ships compressed as reports/study.db.xz: with the default --db
# it is unpacked first, so that --only PARTS adds those parts to it and the whole report is redrawn.
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
OUT=""
DB=""
PAR=2
RESUME=0
DRY=0
ONLY=quality,quality-full,quality-n8,quality-n4,quality-long,quality-m0,charlm,hardware,planner,stability,stability-cnn,frontier
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --out) OUT="$2"; shift ;;
    --db) DB="$2"; shift ;;
    --parallel) PAR="$2"; shift ;;
    --only) ONLY="$2"; shift ;;
    --resume) RESUME=1 ;;
    --dry-run) DRY=1 ;;
    *) echo "usage: scripts/reproduce.sh [--quick] [--db FILE] [--out DIR] [--parallel J] [--only PARTS] [--resume] [--dry-run]" >&2; exit 2 ;;
  esac
  shift
done
# --quick writes beside the committed report, never over it.
[ -n "$OUT" ] || { [ "$QUICK" = 1 ] && OUT=reports/quick || OUT=reports; }
[ -n "$DB" ] || DB="$OUT/study.db"
if [ "$QUICK" = 0 ] && [ ! -f "$DB" ] && [ -f "$DB.xz" ]; then
  if [ "$DRY" = 1 ]; then  # reads a copy: a dry run leaves the folder as it was
    TMPDB=$(mktemp -d)
    trap 'rm -rf "$TMPDB"' EXIT
    xz -dc "$DB.xz" > "$TMPDB/study.db"
    DB=$TMPDB/study.db
  else
    xz -dk "$DB.xz"
  fi
fi
BIN=${PIPEMARE_BIN:-build/bin}  # another folder: a copy of the binaries that a rebuild cannot change mid-study
if [ ! -x "$BIN/pipemare" ] || [ ! -x "$BIN/pipemare-report" ]; then
  scripts/setup.sh
  cmake --preset release >/dev/null
  cmake --build build -j"$(nproc)" --target pipemare pipemare-report
fi
mkdir -p "$OUT"
PM="$BIN/pipemare"
for part in ${ONLY//,/ }; do
  case "$part" in quality|quality-full|quality-n8|quality-n4|quality-long|quality-m0|charlm|hardware|planner|stability|stability-cnn|frontier) ;;
    *) echo "reproduce.sh: --only: unknown part '$part' (quality, quality-full, quality-n8, quality-n4, quality-long, quality-m0, charlm, hardware, planner, stability, stability-cnn, frontier)" >&2; exit 2 ;;
  esac
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }
# The id, status and name of each run of a part (tag study:PART), a line each, tab-separated.
part_runs() {
  [ -f "$DB" ] || return 0
  "$PM" --db "$DB" runs list --tag "study:$1" --json |
    awk '/^    "id": /{id=$2; sub(/,$/, "", id)} /^    "name": /{n=$0; sub(/^    "name": "/, "", n); sub(/",$/, "", n)}
         /^    "status": /{st=$2; gsub(/[",]/, "", st); print id "\t" st "\t" n}'
}
# A part run again replaces its earlier runs in the store; with --resume it keeps the finished and
# diverged ones (results) and deletes the rest, which run again.
forget() {
  part_runs "$1" | while IFS=$'\t' read -r id st name; do
    if [ "$RESUME" = 0 ] || { [ "$st" != finished ] && [ "$st" != diverged ]; }; then
      if [ "$DRY" = 1 ]; then
        printf 'would delete run %s (%s, %s)\n' "$id" "$name" "$st"
      else
        "$PM" --db "$DB" runs delete "$id" >/dev/null
      fi
    fi
  done
}
# With --resume: the names of the part's finished and diverged runs, a line each (nothing without
# --resume). Call it as names=$(recorded_names PART) || exit 2: a store that cannot be read ends
# the study, as running its points again would record them twice.
recorded_names() {
  [ "$RESUME" = 1 ] || return 0
  local runs
  runs=$(part_runs "$1") || { echo "reproduce.sh: cannot read the runs of study:$1 in $DB" >&2; return 2; }
  awk -F'\t' '$2 == "finished" || $2 == "diverged" {print $3}' <<<"$runs"
}
# throttle WHAT COMMAND...: starts the command in the background, at most PAR at a time; drain
# waits for the ones left. A command that fails is judged by sweep_failed, named WHAT.
pids=()
whats=()
throttle() {
  local what=$1
  shift
  "$@" &
  pids+=($!)
  whats+=("$what")
  if [ "${#pids[@]}" -ge "$PAR" ]; then
    wait "${pids[0]}" || sweep_failed "${whats[0]}" $?
    pids=("${pids[@]:1}")
    whats=("${whats[@]:1}")
  fi
}
drain() {
  local i
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || sweep_failed "${whats[$i]}" $?; done
  pids=()
  whats=()
}
# sweep_variants TAG LRS "VARIANTS" [--set ... | --grid FIELD=VALUE ...]: each variant's preset
# (experiments/study/$STUDY_MODEL-VARIANT.json, STUDY_MODEL resnet20 by default) swept over the
# learning rates, PAR runs at a time, recorded under study:TAG and variant:VARIANT (the report reads
# the variant from that tag; runs named "$NAME_PREFIX-$STUDY_MODEL-VARIANT [optimizer.lr=LR FIELD=VALUE]",
# NAME_PREFIX study by default).
# A variant with a single rate to run goes on in the background beside the next one.
sweep_variants() {
  local tag=$1 lrs=$2 variants=$3 v lr todo prefix=${NAME_PREFIX:-study} model=${STUDY_MODEL:-resnet20} suffix="" prev="" a
  shift 3
  for a in "$@"; do
    [ "$prev" = --grid ] && suffix+=" $a"
    prev=$a
  done
  local naming=() names
  names=$(recorded_names "$tag") || exit 2
  for v in $variants; do
    todo=""
    for lr in ${lrs//,/ }; do
      if grep -qxF "$prefix-$model-$v [optimizer.lr=$lr$suffix]" <<<"$names"; then continue; fi
      todo+="${todo:+,}$lr"
    done
    if [ -z "$todo" ]; then
      printf 'reproduce.sh: %s, %s at lr %s%s: recorded already\n' "$tag" "$v" "$lrs" "$suffix" >&2
      continue
    fi
    [ "$prefix" = study ] || naming=(--name "$prefix-$model-$v")
    if [ "$DRY" = 1 ]; then
      printf 'would run %s: %s at lr %s%s\n' "$tag" "$v" "$todo" "$suffix"
      WOULD=$((WOULD + $(tr ',' '\n' <<<"$todo" | wc -l)))
    elif [[ "$todo" == *,* ]]; then
      drain
      "$PM" sweep "experiments/study/$model-$v.json" --db "$DB" --tag "study:$tag" --tag "variant:$v" ${naming[@]+"${naming[@]}"} \
        --grid "optimizer.lr=$todo" --parallel "$PAR" "$@" || sweep_failed "$v" $?
    else
      throttle "$v" "$PM" sweep "experiments/study/$model-$v.json" --db "$DB" --tag "study:$tag" --tag "variant:$v" ${naming[@]+"${naming[@]}"} \
        --grid "optimizer.lr=$todo" "$@"
    fi
  done
  drain
}
# A sweep (or run) exits 1 when a point failed (a diverged point is a result, exit 0): the study
# goes on and the report shows what was recorded, rather than losing hours of runs to one failure.
# Only exit 1 (a failed point) goes on: Ctrl-C (130) and usage or config errors (2) end the study.
sweep_failed() {
  [ "$2" -eq 1 ] || { drain_quietly; exit "$2"; }
  printf 'reproduce.sh: the sweep of %s exited %s; going on (its recorded runs stay in the report)\n' "$1" "$2" >&2
}
# Before the study ends on an error: waits for the commands still running, whatever they exit.
drain_quietly() {
  local p
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" || true; done
  pids=()
  whats=()
}
log() { printf '\n== %s (%s)\n' "$1" "$(date +%H:%M:%S)" >&2; }
START=$(date +%s)
WOULD=0  # --dry-run: the runs it would start

if [ "$QUICK" = 1 ]; then
  Q=(--set data.train_limit=2560 --set data.eval_limit=2000 --set training.epochs=1)
  QUALITY_VARIANTS="gpipe naive t1t2"
  QUALITY_LRS="0.1"
  CHARLM=(--set training.steps=60 --set training.eval_interval=30)
  HW_STEPS=20
  HW_REPS=1
  FR_REPS=1
  STAB_LRS="0.01,0.1,0.5"
  STAB_VARIANTS="gpipe naive t1t2"
  STAB_SEED2_VARIANTS=""
  STAB=(--set data.train_limit=2560 --set data.eval_limit=2000 --set training.epochs=1)
  STABC_LRS="0.01,0.1,0.5"
  STABC_SEED2_VARIANTS=""
  STABC=(--set data.train_limit=2560 --set data.eval_limit=2000 --set training.epochs=1)
  QFULL=(--set data.train_limit=5120 --set data.eval_limit=2000 --set training.epochs=1)
  QFULL_VARIANTS="gpipe t1t2"
  QFULL_SEED2_VARIANTS=""
  QFULL_HIGH_VARIANTS=""
  QN8=(--set data.train_limit=5120 --set data.eval_limit=2000 --set training.epochs=1 --set pipeline.microbatches=8)
  QN8_VARIANTS="gpipe t1t2"
  QN8_HIGH_VARIANTS=""
  QN8_HIGH_LR=0.3
  QN8_MORE=""
  QN8_SEED2_VARIANTS=""
  QN4=(--set data.train_limit=5120 --set data.eval_limit=2000 --set training.epochs=1 --set pipeline.microbatches=4)
  QN4_VARIANTS="gpipe naive t1t2"
  QN4_LRS="0.3"
  QN4_SEED2=0
  QLONG=(--set data.train_limit=5120 --set data.eval_limit=2000 --set training.epochs=2)
  QLONG_VARIANTS="gpipe t1t2"
  QLONG_LRS="0.3"
  QLONG_SEED2_VARIANTS=""
  QM0=(--set data.train_limit=5120 --set data.eval_limit=2000 --set training.epochs=1 --set optimizer.momentum=0)
  QM0_VARIANTS="gpipe naive t1t2"
  QM0_LRS="1.0"
  QM0_SEED2=""
  QM0_MORE=""
else
  Q=()
  QUALITY_VARIANTS="gpipe 1f1b pipedream 2bw naive t1 t1t2"
  QUALITY_LRS="0.1,0.02"
  CHARLM=()
  HW_STEPS=60
  HW_REPS=3
  FR_REPS=3
  # A geometric grid (x2.5) around the analytic edges (0.016 async, 0.12 gpipe) on the quality
  # part's training (12,000 images, 3 epochs), where gpipe passes 0.85 at its best rate; 0.04 and
  # 0.1 between where training broke (x1.6 there), so that a prediction within 2x can be told.
  STAB_LRS="0.004,0.01,0.025,0.04,0.063,0.1,0.16,0.4"
  STAB_VARIANTS="gpipe naive t1 t1t2 pipedream"
  # A second seed of every point: a rate near the edge can train with one seed and not another.
  STAB_SEED2_VARIANTS="$STAB_VARIANTS"
  STAB=()
  # cnn (section 4b): a x1.5 grid, fine enough to tell whether a predicted edge is within 2x.
  STABC_LRS="0.009,0.013,0.02,0.03,0.045,0.068,0.1,0.15,0.23,0.34"
  STABC_SEED2_VARIANTS="$STAB_VARIANTS"
  STABC=()
  QFULL=(--set data.train_limit=0)
  QFULL_VARIANTS="gpipe naive t1t2 t1t2-k3 t1t2-dm t1t2-warmup t1t2-warmup0.25"
  # A second seed at the high rate for the variants the targets judge: single runs differ by
  # up to a point between seeds, the size of the target itself.
  QFULL_SEED2_VARIANTS="gpipe naive t1t2 t1t2-warmup"
  # And a higher rate, where gpipe still trains: does the naive baseline break there?
  QFULL_HIGH_VARIANTS="gpipe naive t1t2 t1t2-warmup"
  QN8=(--set data.train_limit=0 --set pipeline.microbatches=8)
  # Rate by rate, the variants the targets judge first and pipedream and t1 last (QN8_MORE): a
  # study stopped early has gpipe and T1+T2 at lr 0.1 (side by side), then naive, then gpipe and
  # naive at the high rate.
  QN8_VARIANTS="gpipe t1t2 naive"
  QN8_HIGH_VARIANTS="gpipe naive"
  QN8_HIGH_LR=0.3
  QN8_MORE="pipedream t1"
  QN8_SEED2_VARIANTS="gpipe t1t2 naive"  # at lr 0.1, before QN8_MORE: the judged figures' spread
  QN4=(--set data.train_limit=0 --set pipeline.microbatches=4)
  QN4_VARIANTS="gpipe naive t1t2"
  QN4_LRS="0.1,0.3"
  QN4_SEED2=1  # single runs differ by up to 3 points between seeds here
  QLONG=(--set data.train_limit=0 --set training.epochs=10)
  QLONG_VARIANTS="gpipe naive t1t2"
  QLONG_LRS="0.1,0.3"
  QLONG_SEED2_VARIANTS="gpipe t1t2 naive"  # at lr 0.1: the summary judges its quality row here
  QM0=(--set data.train_limit=0 --set optimizer.momentum=0)
  QM0_VARIANTS="gpipe naive t1t2"  # the variants the targets judge, with two seeds
  QM0_LRS="0.3,1.0"
  QM0_SEED2="gpipe naive t1t2"
  QM0_MORE="pipedream t1"  # one seed, last: a study stopped early has the judged runs
fi

if want quality; then
forget quality
log "(1) quality: ResNet-20, P = 11"
sweep_variants quality "$QUALITY_LRS" "$QUALITY_VARIANTS" ${Q[@]+"${Q[@]}"}
fi

if want quality-full; then
forget quality-full
log "(1b) quality, longer training: all training images"
sweep_variants quality-full "$QUALITY_LRS" "$QFULL_VARIANTS" "${QFULL[@]}"
sweep_variants quality-full 0.1 "$QFULL_SEED2_VARIANTS" "${QFULL[@]}" --grid training.seed=2
sweep_variants quality-full 0.3 "$QFULL_HIGH_VARIANTS" "${QFULL[@]}"
fi

if want quality-n8; then
forget quality-n8
log "(1c) quality, shorter delays: N = 8 microbatches, all training images"
# With delays of 2 steps the naive baseline may hold up at lr 0.1; the higher rate asks whether it
# breaks there.
for lr in ${QUALITY_LRS//,/ }; do
  sweep_variants quality-n8 "$lr" "$QN8_VARIANTS" "${QN8[@]}"
  if [ "$lr" = "${QUALITY_LRS%%,*}" ] && [ -n "$QN8_HIGH_VARIANTS" ]; then
    sweep_variants quality-n8 "$QN8_HIGH_LR" "$QN8_HIGH_VARIANTS" "${QN8[@]}"
  fi
done
sweep_variants quality-n8 0.1 "$QN8_SEED2_VARIANTS" "${QN8[@]}" --grid training.seed=2
sweep_variants quality-n8 "$QUALITY_LRS" "$QN8_MORE" "${QN8[@]}"
fi

if want quality-n4; then
forget quality-n4
log "(1d) quality, middle delays: N = 4 microbatches, all training images"
sweep_variants quality-n4 "$QN4_LRS" "$QN4_VARIANTS" "${QN4[@]}"
if [ "$QN4_SEED2" = 1 ]; then
  sweep_variants quality-n4 "$QN4_LRS" "$QN4_VARIANTS" "${QN4[@]}" --grid training.seed=2
fi
fi

if want quality-long; then
forget quality-long
log "(1e) quality, longer training: N = 2, all training images, 10 epochs"
sweep_variants quality-long "$QLONG_LRS" "$QLONG_VARIANTS" "${QLONG[@]}"
sweep_variants quality-long 0.1 "$QLONG_SEED2_VARIANTS" "${QLONG[@]}" --grid training.seed=2
fi

if want quality-m0; then
forget quality-m0
log "(1f) quality without momentum: plain SGD, N = 2, all training images"
sweep_variants quality-m0 "$QM0_LRS" "$QM0_VARIANTS" "${QM0[@]}"
if [ -n "$QM0_SEED2" ]; then
  sweep_variants quality-m0 "$QM0_LRS" "$QM0_SEED2" "${QM0[@]}" --grid training.seed=2
fi
if [ -n "$QM0_MORE" ]; then
  sweep_variants quality-m0 "$QM0_LRS" "$QM0_MORE" "${QM0[@]}"
fi
fi

if want charlm; then
forget charlm
log "(2) charlm"
CHARLM_DONE=$(recorded_names charlm) || exit 2
for v in gpipe pipedream t1t2 t1t2-warmup; do
  if grep -qxF "study-charlm-$v" <<<"$CHARLM_DONE"; then
    echo "reproduce.sh: charlm, $v: recorded already" >&2
    continue
  fi
  if [ "$DRY" = 1 ]; then
    echo "would run charlm: $v"
    WOULD=$((WOULD + 1))
    continue
  fi
  throttle "charlm $v" "$PM" run "experiments/study/charlm-$v.json" --db "$DB" --quiet --tag study:charlm ${CHARLM[@]+"${CHARLM[@]}"}
done
drain
fi

# The hardware part's rounds are one measurement: --resume keeps a finished one whole and runs an
# unfinished one again whole.
finished_runs() { part_runs "$1" | awk -F'\t' '$2 == "finished"' | wc -l; }
if want hardware && [ "$RESUME" = 1 ] && [ "$(finished_runs hardware)" -ge $((7 * HW_REPS)) ] &&
  [ "$(finished_runs hardware-ceiling)" -ge $((2 * HW_REPS)) ]; then
  echo "reproduce.sh: hardware: recorded already" >&2
elif want hardware && [ "$DRY" = 1 ]; then
  RESUME=0 forget hardware
  RESUME=0 forget hardware-ceiling
  echo "would run hardware: $HW_REPS rounds of the baseline, the ceiling pair and 6 P = 2 runs"
  WOULD=$((WOULD + 9 * HW_REPS))
elif want hardware; then
RESUME=0 forget hardware
RESUME=0 forget hardware-ceiling
log "(3) hardware: real P = 2 runs of cnn, $HW_REPS rounds"
HWSET=(--set training.steps=$HW_STEPS --set training.log_interval=5 --set training.trace_steps=5)
HW=(--db "$DB" --quiet --tag study:hardware "${HWSET[@]}")
# Each round measures the baseline, the ceiling and every schedule once, so that a slow spell of
# the machine falls on one round of all of them rather than on one schedule; the report gives
# each figure's median over the rounds and their spread.
for round in $(seq "$HW_REPS"); do
  "$PM" run experiments/cnn-gpipe-p2.json "${HW[@]}" --name "cnn P=1" --set pipeline.stages=1 --set execution.mode=single
  # This machine's 2-core ceiling: two independent P = 1 runs side by side, against the one above alone.
  side_pids=()
  for side in a b; do
    "$PM" run experiments/cnn-gpipe-p2.json --db "$DB" --quiet --tag study:hardware-ceiling "${HWSET[@]}" \
      --name "cnn P=1, side by side ($side)" --set pipeline.stages=1 --set execution.mode=single &
    side_pids+=($!)
  done
  for p in "${side_pids[@]}"; do wait "$p"; done
  for s in gpipe 1f1b pipedream pipedream-2bw pipemare; do
    extra=()
    [ "$s" = pipedream-2bw ] && extra=(--set pipeline.update_interval=8)
    [ "$s" = pipemare ] && extra=(--set pipemare.t1=true --set pipemare.t2=true)
    "$PM" run experiments/cnn-gpipe-p2.json "${HW[@]}" --name "cnn P=2 $s" --set pipeline.schedule=$s ${extra[@]+"${extra[@]}"}
  done
  # PipeMare with the paper's timing: forwards 2(P-1-s) ahead, which hides the message round trip.
  "$PM" run experiments/cnn-gpipe-p2.json "${HW[@]}" --name "cnn P=2 pipemare, paper timing" --set pipeline.schedule=pipemare \
    --set pipemare.t1=true --set pipemare.t2=true --set pipeline.timing=paper
done
fi

if want planner && [ "$DRY" = 1 ]; then
  echo "would plan: ResNet-50, P = 107, N = 8 and 32 (seconds)"
elif want planner; then
log "(4) planner: ResNet-50, P = 107"
for n in 8 32; do
  "$PM" plan --model resnet50 --stages 107 --microbatches $n --optimizer sgd-momentum --json > "$OUT/plan-resnet50-N$n.json"
done
fi

# The synchronous frontier. Every schedule on the same ranks, N = 8, stages balanced by measured
# time, 30 steps; each round runs every schedule of every setting once, so that a slow spell of the
# machine falls on one round of all of them. The chunked schedules cut the model into 2P stages.
FR_SCHEDULES="gpipe 1f1b interleaved-1f1b zb-h1 zb-v pipedream pipedream-2bw pipemare"
FR_SETTINGS="cnn:2 resnet20:2 resnet20:4"
# Its rounds are one measurement, as the hardware part's: --resume keeps a finished one whole and
# runs an unfinished one again whole.
if want frontier && [ "$RESUME" = 1 ] && [ "$(finished_runs frontier)" -ge $((24 * FR_REPS)) ] &&
  [ "$(finished_runs frontier-check)" -ge 4 ]; then
  echo "reproduce.sh: frontier: recorded already" >&2
elif want frontier && [ "$DRY" = 1 ]; then
  RESUME=0 forget frontier
  RESUME=0 forget frontier-check
  echo "would plan the frontier (ResNet-50, P = 107, N = 8, 32, 107) and run $FR_REPS rounds of 24 runs and 4 check runs"
  WOULD=$((WOULD + 24 * FR_REPS + 4))
elif want frontier; then
RESUME=0 forget frontier
RESUME=0 forget frontier-check
log "(5) frontier: the planner at P = 107, real runs of every schedule, $FR_REPS rounds"
# As the paper's model counts (equal stages), and with each layer's op costs from its FLOPs.
for n in 8 32 107; do
  "$PM" plan --model resnet50 --stages 107 --microbatches $n --optimizer sgd-momentum --json > "$OUT/frontier-resnet50-N$n.json"
  "$PM" plan --model resnet50 --stages 107 --microbatches $n --optimizer sgd-momentum --stage-costs flops --json \
    > "$OUT/frontier-resnet50-N$n-flops.json"
done
for round in $(seq "$FR_REPS"); do
  for setting in $FR_SETTINGS; do
    model=${setting%%:*}
    p=${setting##*:}
    data=()
    # ResNet-20 costs about 10x cnn per sample: smaller minibatches keep a run near 10 s.
    [ "$model" = resnet20 ] && data=(--set data.batch_size=64 --set data.train_limit=1984)
    for s in $FR_SCHEDULES; do
      extra=()
      [ "$s" = pipedream-2bw ] && extra=(--set pipeline.update_interval=8)
      [ "$s" = pipemare ] && extra=(--set pipemare.t1=true --set pipemare.t2=true)
      "$PM" run experiments/cnn-gpipe-p2.json --db "$DB" --quiet --tag study:frontier --name "frontier $model P=$p $s" \
        --set model.name="$model" --set pipeline.stages="$p" --set pipeline.schedule="$s" --set training.steps=30 \
        --set training.log_interval=5 --set training.trace_steps=5 ${data[@]+"${data[@]}"} ${extra[@]+"${extra[@]}"}
    done
  done
done
# Quality: the chunked schedules compute gpipe's update (the same mean gradient, up to summation
# order), so one short training of each beside gpipe and 1f1b checks it, the loss logged at every
# step; no study of their quality is needed.
for s in gpipe 1f1b interleaved-1f1b zb-v; do
  "$PM" run experiments/cnn-gpipe-p2.json --db "$DB" --quiet --tag study:frontier-check --name "frontier check resnet20 P=2 $s" \
    --set model.name=resnet20 --set pipeline.schedule="$s" --set data.batch_size=64 --set data.train_limit=6400 \
    --set data.eval_limit=2000 --set training.log_interval=1
done
fi

if want stability; then
forget stability
log "(5) stability: learning rate x schedule, ResNet-20, P = 11, predicted and measured"
# The predicted edge of every schedule (curvature per stage at initialization, delayed heavy ball),
# which the report marks on each column of the measured map.
if [ "$DRY" = 1 ]; then
  echo "would predict the stability edges (plan --stability, about a minute)"
elif [ "$RESUME" = 0 ] || [ ! -s "$OUT/stability-resnet20.json" ]; then
  "$PM" plan --stability experiments/study/resnet20-gpipe.json --probe --json ${STAB[@]+"${STAB[@]}"} > "$OUT/stability-resnet20.json"
fi
NAME_PREFIX=stability sweep_variants stability "$STAB_LRS" "$STAB_VARIANTS" ${STAB[@]+"${STAB[@]}"}
NAME_PREFIX=stability sweep_variants stability "$STAB_LRS" "$STAB_SEED2_VARIANTS" ${STAB[@]+"${STAB[@]}"} --grid training.seed=2
fi

if want stability-cnn; then
forget stability-cnn
log "(5b) stability: learning rate x schedule, cnn, P = 6, N = 1, predicted and measured"
# The second model of the stability section: both predictions (the analytic bound and the probe),
# then the measured map on a grid fine enough (x1.5) to decide whether a prediction is within 2x.
if [ "$DRY" = 1 ]; then
  echo "would predict the stability edges of cnn (plan --stability --probe, a few minutes)"
elif [ "$RESUME" = 0 ] || [ ! -s "$OUT/stability-cnn.json" ]; then
  "$PM" plan --stability experiments/study/cnn-gpipe.json --probe --json ${STABC[@]+"${STABC[@]}"} > "$OUT/stability-cnn.json"
fi
STUDY_MODEL=cnn NAME_PREFIX=stability sweep_variants stability-cnn "$STABC_LRS" "$STAB_VARIANTS" ${STABC[@]+"${STABC[@]}"}
STUDY_MODEL=cnn NAME_PREFIX=stability sweep_variants stability-cnn "$STABC_LRS" "$STABC_SEED2_VARIANTS" ${STABC[@]+"${STABC[@]}"} --grid training.seed=2
fi

if [ "$DRY" = 1 ]; then
  echo "would run $WOULD run(s) in all, then draw the report into $OUT"
  exit 0
fi
log "report"
# Without a store (only parts that record no runs, e.g. --only planner) the report says so.
DBARG=()
[ -f "$DB" ] && DBARG=(--db "$DB")
"$BIN/pipemare-report" ${DBARG[@]+"${DBARG[@]}"} --out "$OUT" --plans "$OUT"
echo "study finished in $(( ($(date +%s) - START) / 60 )) min: $OUT/study.md" >&2
