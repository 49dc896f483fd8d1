#!/bin/sh
# Events on a pipe, full measurement: 1M bank transfers, 500k ledger adds,
# the same adds plus 200k view queries; 7 repetitions, own timing. Writes
# bench/results/events.json and events.md and prints the Markdown.
# Usage: bench/events/run.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
ninja -C "$root/$build" cli/aup bench/events/events_bench >/dev/null
cd "$root"
"$build/bench/events/events_bench" --aup "$build/cli/aup" \
  --bank examples/bank/bank.aup --ledger bench/events/ledger.aup \
  --accounts 10000 --transfers 1000000 --adds 500000 --views 200000 --reps 7 \
  --out bench/results
