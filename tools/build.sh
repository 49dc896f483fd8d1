#!/bin/sh
# Configures (or reconfigures) and builds one build directory.
# Usage: tools/build.sh DIR [meson setup options...]
set -eu
dir=$1; shift
cd "$(dirname "$0")/.."
if [ -d "$dir" ]; then
  # Reconfigure so new test files under tests/check/ are picked up.
  meson setup --reconfigure "$dir" "$@" >/dev/null
else
  meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir" -j"$(nproc)"
