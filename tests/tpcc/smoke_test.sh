#!/bin/sh
# CI's short run of the TPC-C comparison (bench/tpcc, aup-tpcc): same-state
# at W=1 with 2,000 transactions; then, on aup and on sqlite-grouped (the
# SQLite kind with the most of its own code: tuned, and one writer thread),
# a load of W=1, a 3-second run with 4 terminals and the consistency check,
# through aup-tpcc's commands (every SQLite kind's loading and transactions
# are tests/tpcc/sqlite_backend_test.cpp's). It checks that
# the answers and the states agree and that consistency holds, never how
# fast anything is. The first same-state runs aup's default engine (jit);
# a second runs the server on `--engine vm`, so both engines are held to
# SQLite's answers and rows.
# Usage: smoke_test.sh AUP_TPCC AUP
set -eu
tpcc=$1
aup=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/aup-tpcc-smoke-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

step() { printf '== %s\n' "$*"; }

step "same-state, W=1, 2000 transactions (aup's default engine)"
"$tpcc" same-state --warehouses 1 --transactions 2000 --dir "$work/same" --cpus none --aup "$aup"
rm -rf "$work/same"

step "same-state, W=1, 2000 transactions, aup on --engine vm"
"$tpcc" same-state --warehouses 1 --transactions 2000 --dir "$work/same-vm" --cpus none \
  --aup "$aup" --engine vm
rm -rf "$work/same-vm"

for kind in aup sqlite-grouped; do
  step "$kind: load, run 3 s with 4 terminals, consistency"
  "$tpcc" load --backend "$kind" --dir "$work/$kind" --warehouses 1 --cpus none
  "$tpcc" run --backend "$kind" --dir "$work/$kind" --warehouses 1 --terminals 4 --seconds 3 --warmup 0.5 \
    --cpus none --json "$work/$kind.json"
  grep -q '"consistent":true' "$work/$kind.json"
  "$tpcc" consistency --backend "$kind" --dir "$work/$kind" --warehouses 1 --cpus none
  rm -rf "${work:?}/$kind"
done
step "ok"
