#!/bin/sh
# Replication's cost and its failover, full measurement (docs/benchmarks.md,
# "Replication"):
#  1. the bank's transfer on one aup node, on a primary with one replica
#     and --sync-replicas 0, and with --sync-replicas 1, at 1, 16 and 64
#     closed-loop clients, in one run (peers_bench: the primary pinned to
#     CPU 0, the load and the replica to CPU 1; 10 s timed after 2 s of
#     warm-up, 3 repetitions; transfers/s, p50/p99, server and replica CPU
#     per transfer, the replica's lag sampled under the load);
#  2. failover time: the failover soak with kill -9 of the primary only,
#     20 failovers, --sync-replicas 1, 16 clients (three nodes and a
#     three-member etcd on this machine), 6 s of steady load between two
#     kills, its checker included;
#  3. the plot of transfers/s and p99 across the failover of median time.
# About 9 minutes. Writes bench/results/replication.{json,md},
# replication-failover.{json,md,dat,gp,svg}; prints the Markdown.
# Needs etcd-server (and gnuplot-nox for the SVG); nothing is installed here.
# Usage: bench/replication/run.sh [BUILD_DIR] [--failovers N]   (default: build, 20)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
failovers=20
if [ "${1:-}" = "--failovers" ]; then failovers=$2; fi
ninja -C "$root/$build" cli/aup bench/peers/peers_bench >/dev/null
cd "$root"
"$build/bench/peers/peers_bench" --aup "$build/cli/aup" --bank examples/bank/bank.aup \
  --data "$build/replication-bench" --systems aup,aup-k0,aup-k1 --clients 1,16,64 \
  --seconds 10 --warmup 2 --sync-seconds 3 --accounts 10000 --cpus 0:1 --replica-cpus 1 --reps 3 \
  --out bench/results --name replication
python3 tests/cluster/failover_soak.py "$build/cli/aup" . --sync-replicas 1 --only kill \
  --failovers "$failovers" --clients 16 --seed 5 --dwell 6 --timeline --report bench/results/replication-failover.json
python3 bench/replication/plot.py bench/results/replication-failover.json bench/results
