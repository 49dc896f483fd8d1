#!/bin/sh
# CI's short run of the TPC-C comparison (bench/tpcc, aup-tpcc): same-state
# at W=1 with 2,000 transactions; then, for each backend, a load of W=1, a
# 3-second run with 4 terminals and the consistency check. It checks that
# the answers and the states agree and that consistency holds, never how
# fast anything is. When AUP is given and `AUP run --help` lists --engine,
# same-state once more with the server on `--engine jit`.
# Usage: smoke_test.sh AUP_TPCC [AUP]
set -eu
tpcc=$1
aup=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/aup-tpcc-smoke-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

step() { printf '== %s\n' "$*"; }

step "same-state, W=1, 2000 transactions"
"$tpcc" same-state --warehouses 1 --transactions 2000 --dir "$work/same" --cpus none
rm -rf "$work/same"

if [ -n "$aup" ] && "$aup" run --help 2>/dev/null | grep -q -e '--engine'; then
  step "same-state, W=1, 2000 transactions, aup on --engine jit"
  "$tpcc" same-state --warehouses 1 --transactions 2000 --dir "$work/same-jit" --cpus none \
    --aup "$aup" --engine jit
  rm -rf "$work/same-jit"
else
  step "same-state with --engine jit: skipped (no AUP given, or \`aup run\` has no --engine)"
fi

for kind in aup sqlite sqlite-tuned sqlite-grouped; do
  step "$kind: load, run 3 s with 4 terminals, consistency"
  "$tpcc" load --backend "$kind" --dir "$work/$kind" --warehouses 1 --cpus none
  "$tpcc" run --backend "$kind" --dir "$work/$kind" --warehouses 1 --terminals 4 --seconds 3 --warmup 0.5 \
    --cpus none --json "$work/$kind.json"
  grep -q '"consistent":true' "$work/$kind.json"
  "$tpcc" consistency --backend "$kind" --dir "$work/$kind" --warehouses 1 --cpus none
  rm -rf "${work:?}/$kind"
done
step "ok"
