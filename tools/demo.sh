#!/bin/sh
# The main job on the bundled examples: install what is missing, build, and
# check the bank and TPC-C modules.
set -eu
cd "$(dirname "$0")/.."
sh tools/deps.sh
sh tools/build.sh build >/dev/null
for module in examples/bank/bank.aup examples/tpcc/tpcc.aup; do
  ./build/cli/aup check "$module"
done
echo "--- a module with mistakes, to show the diagnostics:"
printf 'record Stock { id: num, quantity: num }\ntable stock: Stock key id\nevent take { id: num, n: num }\non take {\n  let s = stock[take.id]\n  s.quantiy = s.quantity - take.n\n}\n' >build/demo-mistake.aup
./build/cli/aup check build/demo-mistake.aup || true
