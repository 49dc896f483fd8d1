#!/bin/sh
# The main job on the bundled examples: install what is missing, build,
# check both modules, build the bank to a module file, run it on a fresh
# store with its demo requests, restart it to show the state survived, and
# read the store back with `aup replay`.
set -eu
cd "$(dirname "$0")/.."
sh tools/deps.sh
sh tools/build.sh build >/dev/null
for module in examples/bank/bank.aup examples/tpcc/tpcc.aup; do
  ./build/cli/aup check "$module"
done
./build/cli/aup build examples/bank/bank.aup -o build/bank.aupm
rm -rf build/demo-store
echo "--- aup run build/bank.aupm --data build/demo-store < examples/bank/demo.ndjson"
./build/cli/aup run build/bank.aupm --data build/demo-store < examples/bank/demo.ndjson
echo "--- a second process, after the first has exited: the state survived"
echo '{"query":"accounts_all"}
{"query":"total"}' | ./build/cli/aup run build/bank.aupm --data build/demo-store
echo "--- aup replay --data build/demo-store (read without the module)"
./build/cli/aup replay --data build/demo-store
echo "--- aup replay --data build/demo-store --dump accounts"
./build/cli/aup replay --data build/demo-store --dump accounts
echo "--- aup replay --data build/demo-store --verify"
./build/cli/aup replay --data build/demo-store --verify
echo "--- a module with a mistake, to show a diagnostic:"
./build/cli/aup check examples/tour/mistake.aup || true
