#!/bin/sh
# Events over sockets, full measurement: `aup run --listen` at 1, 16 and 64
# connections, on a store in /dev/shm and on one in build/server-bench (the
# work volume), each against `--memory` in the same run; 5 s timed per
# run after 1 s of warm-up, 3 repetitions. Pipelined (64 requests
# outstanding per connection: throughput) into bench/results/server.*, and
# closed-loop (each connection waits for its answer, as a terminal does:
# latency) into bench/results/server-closed.*, both with two I/O threads;
# then both again with the owner serving the connections itself
# (--io-threads 0) into bench/results/server-owner{,-closed}.*. Each store
# over the Unix socket, loopback TCP (the line protocol) and HTTP: rows
# *STORE tcp* and *STORE http*, whose CPU ÷ memory is against the Unix
# socket's in the same run. About 36 minutes; prints the Markdown.
# Usage: bench/server/run.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
ninja -C "$root/$build" cli/aup bench/server/server_bench >/dev/null
cd "$root"
for io in 2 0; do
  suffix=""
  [ "$io" -eq 0 ] && suffix="-owner"
  for window in 64 1; do
    name="server$suffix"
    [ "$window" -eq 1 ] && name="$name-closed"
    "$build/bench/server/server_bench" --aup "$build/cli/aup" --bank examples/bank/bank.aup \
      --store shm=/dev/shm --store disk="$build/server-bench" \
      --connections 1,16,64 --seconds 5 --warmup 1 --accounts 10000 --window "$window" --io-threads "$io" \
      --transports unix,tcp,http \
      --reps 3 --out bench/results --name "$name"
  done
done
