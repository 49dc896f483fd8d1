#!/bin/sh
# The store benchmark (bench/store/store_bench.py): builds aup, then runs
# bank transfers through `aup run --data` on the volume of build/ (the work
# volume), writing bench/results/store.{json,md}. About three minutes.
set -eu
cd "$(dirname "$0")/../.."
ninja -C build -j2 cli/aup >/dev/null
python3 bench/store/store_bench.py build/cli/aup examples/bank/bank.aup --dir build/bench-store "$@"
python3 bench/store/fill_docs.py .
