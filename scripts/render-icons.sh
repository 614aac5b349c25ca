#!/usr/bin/env bash
# Renders the workbench's icon (resources/icons/pipemare-workbench.svg, drawn by hand) into the PNG
# sizes beside it: the hicolor icon theme's fixed sizes (installed under share/icons/hicolor) and
# the window icon compiled into the workbench (ui/main/icons.qrc), which then needs no SVG plugin.
# The PNGs are kept in the repository so that a build needs no renderer; run this after editing the
# SVG. Needs rsvg-convert (Debian package librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")/../resources/icons"
for size in 16 24 32 48 64 128 256; do
  rsvg-convert --width "$size" --height "$size" pipemare-workbench.svg -o "pipemare-workbench-$size.png"
done
echo "render-icons: wrote $(ls pipemare-workbench-*.png | tr '\n' ' ')"
