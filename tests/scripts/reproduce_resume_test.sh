#!/usr/bin/env bash
# scripts/reproduce.sh, with and without --resume, against a store of real runs (tiny ones, named as
# the study names its runs): which runs it deletes and which points it starts. The engine's
# `runs` commands are the real ones; its training commands (sweep, run, plan) and the report are
# stubs that record how they were called (a sweep of resnet20-$FAIL_VARIANT exits $FAIL_RC).
#   reproduce_resume_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail
SRC=$1
REAL=$2/pipemare
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
cat > "$T/bin/pipemare" <<STUB
#!/usr/bin/env bash
args=("\$@")
[ "\$1" = --db ] && shift 2
case "\$1" in
  runs) [ "\$2" = delete ] && echo "delete \$3" >> "$T/calls"; exec "$REAL" "\${args[@]}" ;;
  plan) echo '{}' ;;
  *) echo "\$*" >> "$T/calls"
     if [ -n "\${FAIL_VARIANT:-}" ] && [[ "\$*" == *"resnet20-\$FAIL_VARIANT.json"* ]]; then exit "\$FAIL_RC"; fi ;;
esac
STUB
printf '#!/bin/sh\n' > "$T/bin/pipemare-report"
chmod +x "$T/bin/pipemare" "$T/bin/pipemare-report"

fail() { echo "FAIL: $*" >&2; echo "--- calls:" >&2; cat "$T/calls" >&2 || true; exit 1; }
# A finished run of the tiny preset, named and tagged as the study's run; prints its id.
add_run() {
  "$REAL" --db "$T/study.db" run "$SRC/experiments/tiny-synthetic.json" --quiet --name "$1" --tag "$2" \
    --set training.steps=2 2>&1 | sed -n 's/^stored as run \([0-9]*\) .*/\1/p'
}
set_status() {
  python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('update runs set status = ? where id = ?', (sys.argv[3], int(sys.argv[2]))); c.commit()" \
    "$T/study.db" "$1" "$2"
}
# The study's store (--quick: quality-n4 is gpipe, naive and T1+T2 at lr 0.3; stability gpipe,
# naive and T1+T2 at lr 0.01, 0.1 and 0.5): quality-n4 has gpipe finished and naive stopped, charlm
# gpipe finished, stability gpipe finished at lr 0.01 and diverged at lr 0.1.
make_store() {
  rm -rf "$T/study.db"* "$T/calls" "$T/out"
  touch "$T/calls"
  GPIPE=$(add_run "study-resnet20-gpipe [optimizer.lr=0.3]" study:quality-n4)
  NAIVE=$(add_run "study-resnet20-naive [optimizer.lr=0.3]" study:quality-n4)
  CHARLM=$(add_run study-charlm-gpipe study:charlm)
  STAB1=$(add_run "stability-resnet20-gpipe [optimizer.lr=0.01]" study:stability)
  STAB2=$(add_run "stability-resnet20-gpipe [optimizer.lr=0.1]" study:stability)
  [ -n "$GPIPE" ] && [ -n "$NAIVE" ] && [ -n "$CHARLM" ] && [ -n "$STAB1" ] && [ -n "$STAB2" ] || fail "could not record the store's runs"
  set_status "$NAIVE" stopped
  set_status "$STAB2" diverged
}
PARTS=quality-n4,charlm,stability
reproduce() {
  PIPEMARE_BIN="$T/bin" "$SRC/scripts/reproduce.sh" --quick --db "$T/study.db" --out "$T/out" --only "$PARTS" --parallel 1 "$@" \
    > "$T/log" 2>&1
}
sweeps_of() { grep -c "^sweep experiments/study/resnet20-$1.json .*--tag study:${2:-quality-n4} " "$T/calls" || true; }
runs_of() { grep -c "^run experiments/study/charlm-$1.json" "$T/calls" || true; }

# --dry-run says what --resume would delete and run, and does neither.
make_store
reproduce --resume --dry-run || fail "reproduce.sh --resume --dry-run exited $?: $(cat "$T/log")"
[ ! -s "$T/calls" ] || fail "--dry-run deleted or started something"
grep -q "^would delete run $NAIVE (study-resnet20-naive \[optimizer.lr=0.3\], stopped)$" "$T/log" || fail "--dry-run did not list the deletion: $(cat "$T/log")"
grep -q "^would run quality-n4: t1t2 at lr 0.3$" "$T/log" || fail "--dry-run did not list t1t2: $(cat "$T/log")"
grep -q "^would run stability: gpipe at lr 0.5$" "$T/log" || fail "--dry-run did not list stability gpipe's missing rate: $(cat "$T/log")"
! grep -q "would run quality-n4: gpipe" "$T/log" || fail "--dry-run listed a recorded point"
# quality-n4: naive, t1t2; charlm: 3; stability: gpipe 1, naive 3, t1t2 3
grep -q "^would run 12 run(s) in all" "$T/log" || fail "--dry-run's count: $(cat "$T/log")"

# --resume: the finished runs stay and are not run again; the stopped one is deleted and run again.
make_store
reproduce --resume || fail "reproduce.sh --resume exited $?: $(cat "$T/log")"
grep -qx "delete $NAIVE" "$T/calls" || fail "--resume did not delete the stopped run $NAIVE"
! grep -qx "delete $GPIPE" "$T/calls" || fail "--resume deleted the finished run $GPIPE"
! grep -qx "delete $CHARLM" "$T/calls" || fail "--resume deleted the finished run $CHARLM"
[ "$(sweeps_of gpipe)" = 0 ] || fail "--resume ran gpipe again, which the store has"
[ "$(sweeps_of naive)" = 1 ] || fail "--resume did not run naive (stopped) again"
[ "$(sweeps_of t1t2)" = 1 ] || fail "--resume did not run t1t2 (missing)"
grep -q "^sweep experiments/study/resnet20-naive.json .*--grid optimizer.lr=0.3 " "$T/calls" || fail "naive's sweep is not at lr 0.3"
[ "$(runs_of gpipe)" = 0 ] || fail "--resume ran charlm gpipe again"
for v in pipedream t1t2 t1t2-warmup; do [ "$(runs_of $v)" = 1 ] || fail "--resume did not run charlm $v"; done
grep -q "quality-n4, gpipe at lr 0.3: recorded already" "$T/log" || fail "--resume did not say what it kept: $(cat "$T/log")"
# Several rates: the finished (0.01) and diverged (0.1) points stay; the one missing runs, under the
# stability part's own run name.
! grep -qx "delete $STAB1" "$T/calls" || fail "--resume deleted the finished stability run"
! grep -qx "delete $STAB2" "$T/calls" || fail "--resume deleted the diverged stability run"
grep -q "^sweep experiments/study/resnet20-gpipe.json .*--tag study:stability --tag variant:gpipe --name stability-resnet20-gpipe --grid optimizer.lr=0.5 " "$T/calls" ||
  fail "--resume did not run stability gpipe at lr 0.5 alone"
grep -q "^sweep experiments/study/resnet20-naive.json .*--tag study:stability --tag variant:naive --name stability-resnet20-naive --grid optimizer.lr=0.01,0.1,0.5 " "$T/calls" ||
  fail "--resume did not run stability naive at all three rates"
[ "$(sweeps_of gpipe stability)" = 1 ] || fail "--resume ran stability gpipe more than once"

# Without --resume a part runs again whole: its runs are deleted first.
make_store
reproduce || fail "reproduce.sh --only exited $?: $(cat "$T/log")"
for id in $GPIPE $NAIVE $CHARLM; do grep -qx "delete $id" "$T/calls" || fail "--only did not delete run $id"; done
for v in gpipe naive t1t2; do [ "$(sweeps_of $v)" = 1 ] || fail "--only did not run $v"; done
for v in gpipe pipedream t1t2 t1t2-warmup; do [ "$(runs_of $v)" = 1 ] || fail "--only did not run charlm $v"; done

# A variant whose sweep has a failed point (exit 1) does not end the study; a usage or config
# error (exit 2) does, with its code, before the next variant starts.
PARTS=quality-n4
make_store
FAIL_VARIANT=naive FAIL_RC=1 reproduce || fail "a failed point (exit 1) ended the study: $(cat "$T/log")"
grep -q "the sweep of naive exited 1; going on" "$T/log" || fail "the failed point was not reported: $(cat "$T/log")"
[ "$(sweeps_of t1t2)" = 1 ] || fail "the study did not go on after a failed point"
make_store
rc=0
FAIL_VARIANT=naive FAIL_RC=2 reproduce || rc=$?
[ "$rc" = 2 ] || fail "a config error (exit 2) of a sweep ended the study with $rc, not 2: $(cat "$T/log")"
[ "$(sweeps_of t1t2)" = 0 ] || fail "the study went on after a config error"
echo "ok"
