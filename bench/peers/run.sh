#!/bin/sh
# Durable transfers beside Redis and Tarantool, full measurement: the bank's
# transfer on aup, Redis (appendfsync always) and Tarantool (wal_mode
# fsync; one shared connection and a connection per client) at 1, 16 and
# 64 closed-loop clients, each server pinned to CPU 0 and the load
# generator to CPU 1, data in BUILD_DIR/peers-bench (the work volume);
# 10 s timed per run after 2 s of warm-up, 3 repetitions, with the bare
# fdatasync rate of the volume in each, and the floor (peers_floor: the
# transport and the group commit only). About 11 minutes; writes
# bench/results/peers.{json,md} and prints the Markdown.
#
# Needs the Debian packages redis-server and tarantool (2.x):
#   apt-get install redis-server tarantool
# A missing one is skipped with a message; nothing is installed here.
# Usage: bench/peers/run.sh [BUILD_DIR] [extra peers_bench flags, e.g. --io-threads 2]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
ninja -C "$root/$build" cli/aup bench/peers/peers_bench >/dev/null
cd "$root"
"$build/bench/peers/peers_bench" --aup "$build/cli/aup" --bank examples/bank/bank.aup \
  --data "$build/peers-bench" --systems aup,redis,tarantool,floor --clients 1,16,64 \
  --seconds 10 --warmup 2 --sync-seconds 3 --accounts 10000 --cpus 0:1 --reps 3 \
  --out bench/results "$@"
