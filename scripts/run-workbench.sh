#!/usr/bin/env bash
# Command 1: set up, build, and run the main job. With a display: opens the workbench.
# Without one (DISPLAY and WAYLAND_DISPLAY unset): runs experiments/quickstart.json headless,
# as a `pipemare run` child process, and prints where the run was stored.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/bin/pipemare-workbench "$@"
