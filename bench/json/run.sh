#!/bin/sh
# JSON parsing, full measurement: 200k transfer lines and 200k New-Order
# lines through aup's parser, simdjson On-Demand and DOM, 7 rotating
# repetitions; 10k random doubles read bit for bit. Writes
# bench/results/json.json and json.md and prints the Markdown. Needs
# simdjson (libsimdjson-dev) at build time. Pinned to the last CPU when
# taskset is available.
# Usage: bench/json/run.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
if ! ninja -C "$root/$build" bench/json/json_bench >/dev/null 2>&1; then
  echo "bench/json: json_bench is not built (is libsimdjson-dev installed? then: meson setup --reconfigure $build)" >&2
  exit 1
fi
pin=""
if command -v taskset >/dev/null 2>&1; then
  pin="taskset -c $(($(nproc) - 1))"
fi
cd "$root"
$pin "$build/bench/json/json_bench" --lines 200000 --reps 7 --numbers 2000 --out bench/results
