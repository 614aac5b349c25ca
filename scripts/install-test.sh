#!/usr/bin/env bash
# The installation as users get it, checked from the release build in build/ (scripts/test.sh runs
# this after its build; alone: after scripts/setup.sh). Nothing is installed system-wide.
#  1. `cmake --install build` into a DESTDIR staging folder (the configured prefix, /usr/local);
#  2. the installed programs run from a folder outside the checkout, with an environment of PATH and
#     HOME only, and (where the system lets this script make a mount namespace) the checkout hidden
#     under an empty folder: `pipemare version` names the installed presets, `pipemare validate` an
#     installed preset, `pipemare run tiny-synthetic` (a preset by name) records into a store in a
#     temporary folder, and the headless workbench runs it through the `pipemare` beside it;
#  3. desktop-file-validate and appstreamcli validate on the installed desktop entry and metadata, and
#     the man pages help2man wrote;
#  4. scripts/package.sh --no-build: the .deb's file list (dpkg-deb -c) and control fields (dpkg-deb -I).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd -P)
stage=$(mktemp -d /tmp/pipemare-install-test.XXXXXX)
trap 'rm -rf "$stage"' EXIT
fail() {
  echo "install-test: FAIL: $*" >&2
  exit 1
}
note() { echo "install-test: $*"; }

# 1. Install into the staging folder.
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' build/CMakeCache.txt)
DESTDIR="$stage/root" cmake --install build >"$stage/install.log" 2>&1 || { cat "$stage/install.log"; fail "cmake --install build"; }
root=$(realpath "$stage/root$prefix")
for f in bin/pipemare bin/pipemare-workbench bin/pipemare-report \
         share/pipemare/experiments/quickstart.json share/pipemare/experiments/tiny-synthetic.json \
         share/pipemare/experiments/study/resnet20-t1.json \
         share/doc/pipemare/README.md share/doc/pipemare/docs/experiment-format.md share/doc/pipemare/docs/screenshots/design.png \
         share/applications/pipemare-workbench.desktop share/metainfo/io.github.pipemare.workbench.metainfo.xml \
         share/icons/hicolor/scalable/apps/pipemare-workbench.svg share/icons/hicolor/48x48/apps/pipemare-workbench.png \
         share/man/man1/pipemare.1 share/man/man1/pipemare-workbench.1 share/man/man1/pipemare-report.1; do
  [ -e "$root/$f" ] || fail "not installed: $prefix/$f"
done
note "installed into DESTDIR $stage/root (prefix $prefix)"

# 2. The installed programs, out of the checkout's reach.
work="$stage/work"
mkdir -p "$work"
hide=0
if unshare -rm sh -c 'mount -t tmpfs pipemare-hidden "$1"' sh "$src" 2>/dev/null; then hide=1; fi
installed() {  # PROGRAM ARGS...: bin/PROGRAM of the installation, in $work, PATH and HOME only
  local cmd=(env -i PATH=/usr/bin:/bin HOME="$work" "$root/bin/$1" "${@:2}")
  if [ "$hide" = 1 ]; then
    (cd "$work" && unshare -rm sh -c 'mount -t tmpfs pipemare-hidden "$1" && shift && exec "$@"' sh "$src" "${cmd[@]}")
  else
    (cd "$work" && "${cmd[@]}")
  fi
}
if [ "$hide" = 1 ]; then note "the checkout $src is hidden from the installed programs"; else
  note "no mount namespace here: the checkout stays visible, the programs run from $work with PATH and HOME only"; fi
out=$(installed pipemare version 2>&1) || fail "pipemare version: $out"
grep -qxF "presets: $root/share/pipemare/experiments" <<<"$out" || fail "the installed pipemare does not use the installed presets:
$out"
installed pipemare validate "$root/share/pipemare/experiments/quickstart.json" >"$stage/validate.log" 2>&1 ||
  { cat "$stage/validate.log"; fail "the installed pipemare validate quickstart.json"; }
installed pipemare validate study/resnet20-t1 >"$stage/validate.log" 2>&1 ||
  { cat "$stage/validate.log"; fail "the installed pipemare validate study/resnet20-t1 (a preset by name)"; }
installed pipemare run tiny-synthetic --db "$work/runs.db" --quiet >"$stage/run.log" 2>&1 ||
  { cat "$stage/run.log"; fail "the installed pipemare run tiny-synthetic"; }
runs=$(installed pipemare --db "$work/runs.db" runs list --json 2>&1) || fail "pipemare runs list: $runs"
grep -q '"status": "finished"' <<<"$runs" || fail "the installed run did not finish: $runs"
# Without a display the workbench runs the experiment with the `pipemare` beside it.
installed pipemare-workbench --db "$work/workbench.db" --experiment tiny-synthetic >"$stage/workbench.log" 2>&1 ||
  { cat "$stage/workbench.log"; fail "the installed pipemare-workbench (headless) --experiment tiny-synthetic"; }
grep -q "stored as run 1 in " "$stage/workbench.log" || { cat "$stage/workbench.log"; fail "the headless workbench recorded no run"; }
echo "$out" >"$stage/version.log"
if grep -qF "$src" "$stage/version.log" "$stage/run.log" "$stage/workbench.log"; then fail "an installed program named the checkout $src"; fi
note "installed pipemare and pipemare-workbench ran from $work"

# 3. The desktop entry, the AppStream metadata (no network: the screenshots' URLs are not fetched) and
# the man pages.
desktop-file-validate "$root/share/applications/pipemare-workbench.desktop" || fail "desktop-file-validate"
appstreamcli validate --no-net "$root/share/metainfo/io.github.pipemare.workbench.metainfo.xml" >"$stage/appstream.log" 2>&1 ||
  { cat "$stage/appstream.log"; fail "appstreamcli validate"; }
appstreamcli validate-tree --no-net "$root" >"$stage/appstream.log" 2>&1 ||
  { cat "$stage/appstream.log"; fail "appstreamcli validate-tree (metadata, desktop entry and icon together)"; }
man="$root/share/man/man1/pipemare.1"
for want in '^\.SH SYNOPSIS' '^\.SH COMMANDS' '^\.SS "pipemare run"' '^\.SS "pipemare runs list"' '^\.SS "pipemare version"'; do
  grep -q "$want" "$man" || fail "pipemare.1 lacks $want"
done
note "desktop entry, AppStream metadata and man pages pass"

# 4. The .deb, built from the same build folder.
scripts/package.sh --no-build >"$stage/package.log" 2>&1 || { cat "$stage/package.log"; fail "scripts/package.sh"; }
deb=$(ls build/packages/pipemare_*.deb)
dpkg-deb -c "$deb" | awk '{print $NF}' >"$stage/deb-files"
for f in ./usr/bin/pipemare ./usr/bin/pipemare-workbench ./usr/bin/pipemare-report \
         ./usr/share/pipemare/experiments/quickstart.json ./usr/share/pipemare/experiments/tiny-synthetic.json \
         ./usr/share/doc/pipemare/README.md ./usr/share/applications/pipemare-workbench.desktop \
         ./usr/share/metainfo/io.github.pipemare.workbench.metainfo.xml \
         ./usr/share/icons/hicolor/scalable/apps/pipemare-workbench.svg ./usr/share/man/man1/pipemare.1; do
  grep -qxF "$f" "$stage/deb-files" || fail "the .deb lacks $f"
done
if grep -v -e '^\./$' -e '^\./usr/' "$stage/deb-files"; then fail "the .deb holds files outside /usr"; fi
dpkg-deb -I "$deb" >"$stage/deb-info"
depends=$(dpkg-deb -f "$deb" Depends)
for d in libopenblas0-pthread qt6-qpa-plugins libtorch libqt6widgets6 libc6; do  # named, and from dpkg-shlibdeps
  grep -q "\b$d" <<<"$depends" || { cat "$stage/deb-info"; fail "the .deb's Depends lacks $d"; }
done
[ "$(dpkg-deb -f "$deb" Recommends)" = "dataset-fashion-mnist, fortunes" ] || { cat "$stage/deb-info"; fail "the .deb's Recommends"; }
[ "$(dpkg-deb -f "$deb" Package)" = "pipemare" ] || fail "the .deb's Package field"
note "$deb: $(wc -l <"$stage/deb-files") entries; Depends: $depends"
