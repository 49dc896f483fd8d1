#!/bin/sh
# The JIT against the VM, full measurement: compute.aup (200 events of
# 20,000 loop rounds), tables.aup (200,000 events over 10,000 rows),
# TPC-C on the owner path (W=1's load and 200,000 transactions on aup's
# stdin, no socket) and TPC-C over sockets (W=1, 16 terminals, 10 s per
# run, stores in /dev/shm), each through `aup run --engine vm` and
# `--engine jit`, 5 repetitions: the socket case varies by about 5% from
# run to run, and whether jit becomes aup's default engine needs ~3%
# resolved. About 5 minutes.
# Writes bench/results/jit.json and jit.md and prints the Markdown.
# Usage: bench/jit/run.sh [--quick] [BUILD_DIR]   (default: build)
#   --quick: a few seconds, tiny inputs, one repetition; writes nothing.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
quick=no
if [ "${1:-}" = "--quick" ]; then
  quick=yes
  shift
fi
build=${1:-build}
ninja -C "$root/$build" cli/aup bench/tpcc/aup-tpcc bench/tpcc/aup-tpcc-gen bench/jit/jit_bench >/dev/null
cd "$root"
set -- --aup "$build/cli/aup" --compute bench/jit/compute.aup --tables bench/jit/tables.aup \
  --tpcc "$build/bench/tpcc/aup-tpcc" --tpcc-gen "$build/bench/tpcc/aup-tpcc-gen" \
  --tpcc-module examples/tpcc/tpcc.aup --engines vm,jit
if [ "$quick" = yes ]; then
  exec "$build/bench/jit/jit_bench" "$@" --quick
fi
exec "$build/bench/jit/jit_bench" "$@" \
  --events 200 --rounds 20000 --items 10000 --touches 200000 --width 8 --pipe-transactions 200000 \
  --warehouses 1 --terminals 16 --seconds 10 --warmup 1 --tpcc-dir /dev/shm --reps 5 \
  --out bench/results
