#!/bin/sh
# Events over sockets, full measurement: `aup run --listen` at 1, 16 and 64
# connections, on a store in /dev/shm and on one in build/server-bench (the
# work volume), each against `--memory` in the same run; 5 s timed per
# run after 1 s of warm-up, 3 repetitions. Twice: pipelined (64 requests
# outstanding per connection: throughput) into bench/results/server.*, and
# closed-loop (each connection waits for its answer, as a terminal does:
# latency) into bench/results/server-closed.*. About 6 minutes; prints the
# Markdown.
# Usage: bench/server/run.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
ninja -C "$root/$build" cli/aup bench/server/server_bench >/dev/null
cd "$root"
"$build/bench/server/server_bench" --aup "$build/cli/aup" --bank examples/bank/bank.aup \
  --store shm=/dev/shm --store disk="$build/server-bench" \
  --connections 1,16,64 --seconds 5 --warmup 1 --accounts 10000 --window 64 --io-threads 2 --reps 3 \
  --out "$root/bench/results" --name server
"$build/bench/server/server_bench" --aup "$build/cli/aup" --bank examples/bank/bank.aup \
  --store shm=/dev/shm --store disk="$build/server-bench" \
  --connections 1,16,64 --seconds 5 --warmup 1 --accounts 10000 --window 1 --io-threads 2 --reps 3 \
  --out "$root/bench/results" --name server-closed
