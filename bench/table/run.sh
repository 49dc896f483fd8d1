#!/bin/sh
# Table seek benchmark, full measurement: 1k, 30k, 300k and 1M rows, 7
# alternating repetitions. Writes bench/results/table.json and table.md and
# prints the Markdown. Pinned to the last CPU when taskset is available.
# Usage: bench/table/run.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
ninja -C "$root/$build" bench/table/table_bench >/dev/null
pin=""
if command -v taskset >/dev/null 2>&1; then
  pin="taskset -c $(($(nproc) - 1))"
fi
cd "$root"
$pin "$build/bench/table/table_bench" --sizes 1000,30000,300000,1000000 --reps 7 \
  --out bench/results
