#!/bin/sh
# The main job on the bundled examples: install what is missing, build,
# check both modules, build the bank to a module file, and run it in memory
# on its demo requests.
set -eu
cd "$(dirname "$0")/.."
sh tools/deps.sh
sh tools/build.sh build >/dev/null
for module in examples/bank/bank.aup examples/tpcc/tpcc.aup; do
  ./build/cli/aup check "$module"
done
./build/cli/aup build examples/bank/bank.aup -o build/bank.aupm
echo "--- aup run build/bank.aupm --memory < examples/bank/demo.ndjson"
./build/cli/aup run build/bank.aupm --memory < examples/bank/demo.ndjson
echo "--- a module with a mistake, to show a diagnostic:"
printf 'record Stock { id: num, quantity: num }\ntable stock: Stock key id\nevent take { id: num, n: num }\non take {\n  let s = stock[take.id]\n  s.quantiy = s.quantity - take.n\n}\n' >build/demo-mistake.aup
./build/cli/aup check build/demo-mistake.aup || true
