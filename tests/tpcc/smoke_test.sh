#!/bin/sh
# CI's short run of the TPC-C comparison (bench/tpcc, aup-tpcc): same-state
# at W=1 with 2,000 transactions; then, on aup and on sqlite-grouped (the
# SQLite kind with the most of its own code: tuned, and one writer thread),
# a load of W=1, a 3-second run with 4 terminals and the consistency check,
# through aup-tpcc's commands (every SQLite kind's loading and transactions
# are tests/tpcc/sqlite_backend_test.cpp's). It checks that
# the answers and the states agree and that consistency holds, never how
# fast anything is. On aup a second run has 8 terminals sharing 2
# pipelined connections (--connections), and the refusals of
# --connections are checked. The first same-state runs aup's default engine (jit);
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
  if [ "$kind" = aup ]; then
    step "aup: run 2 s with 8 terminals sharing 2 connections, consistency"
    "$tpcc" run --backend aup --dir "$work/aup" --warehouses 1 --terminals 8 --connections 2 --seconds 2 \
      --warmup 0.5 --cpus none --json "$work/shared.json" >"$work/shared.txt"
    grep -q '^aup, W=1, 8 terminals over 2 connections: ' "$work/shared.txt"
    grep -q '"terminals":8,"connections":2,' "$work/shared.json"
    grep -q '"consistent":true' "$work/shared.json"
    grep -q '"user_us_per_transaction":' "$work/shared.json"
    if grep -q '"transactions":0,' "$work/shared.json"; then echo "no transaction completed"; exit 1; fi
  fi
  rm -rf "${work:?}/$kind"
done

# Refused before anything runs (exit 2, a sentence): more connections than
# terminals, and --connections for SQLite, which runs in this process.
refused() {
  expected=$1
  shift
  set +e
  "$tpcc" "$@" --cpus none >"$work/out" 2>"$work/err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || { echo "aup-tpcc $* exited $rc, not 2"; cat "$work/err"; exit 1; }
  grep -qF -e "$expected" "$work/err" || { echo "aup-tpcc $* said:"; cat "$work/err"; exit 1; }
  [ ! -e "$work/refused" ] || { echo "aup-tpcc $* made its directory"; exit 1; }
}
step "refusals of --connections"
refused "aup-tpcc: 9 connections for 8 terminals: --connections takes 1 to the terminals" \
  run --backend aup --dir "$work/refused" --terminals 8 --connections 9
refused "aup-tpcc: sqlite takes no --connections: SQLite runs in this process" \
  run --backend sqlite --dir "$work/refused" --terminals 8 --connections 2
refused "--connections: Value 0 not in range 1 to 1000" \
  run --backend aup --dir "$work/refused" --terminals 8 --connections 0
refused "--connections: Value 0 not in range 1 to 1000" matrix --out "$work/refused" --connections 8,0
step "ok"
