#!/bin/sh
# TPC-C end to end: aup-tpcc-gen loads W=1 and makes 3,000 transactions,
# `aup run examples/tpcc/tpcc.aup --memory` answers them, and
# check_tpcc.py compares every answer with an independent model. The only
# failures allowed are the New-Order rollbacks the generator put in (code
# `failed`, message `item number is not valid`), as many as it says it put
# in; `consistency(1)` must be ok after the load and after the run.
# Usage: run_tpcc_test.sh AUP AUP-TPCC-GEN TPCC.AUP
set -u
aup=$1
gen=$2
module=$3
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

warehouses=1
transactions=3000
seed=20240611
# `now` for every event, so that entry and delivery dates are predictable;
# later than the generator's load time (1700000000000) by a day.
now=1700086400000

fail() { echo "FAIL: $*"; exit 1; }

start=$(date +%s.%N)
"$gen" load --warehouses $warehouses >"$tmp/load.ndjson" || fail "aup-tpcc-gen load exited $?"
"$gen" run --warehouses $warehouses --transactions $transactions --seed $seed --summary \
  >"$tmp/run.ndjson" 2>"$tmp/summary.json" || fail "aup-tpcc-gen run exited $?"
[ "$(wc -l <"$tmp/run.ndjson")" -eq $transactions ] || fail "run printed $(wc -l <"$tmp/run.ndjson") lines"

# The same arguments give the same bytes.
"$gen" run --warehouses $warehouses --transactions $transactions --seed $seed >"$tmp/again.ndjson" 2>/dev/null
cmp -s "$tmp/run.ndjson" "$tmp/again.ndjson" || fail "two runs with seed $seed differ"

{
  cat "$tmp/load.ndjson"
  echo '{"query":"consistency","args":{"w":1},"id":"consistency-after-load"}'
  cat "$tmp/run.ndjson"
  echo '{"query":"consistency","args":{"w":1},"id":"consistency-after-run"}'
} >"$tmp/requests.ndjson"
generated=$(date +%s.%N)

"$aup" run "$module" --memory --fixed-time $now <"$tmp/requests.ndjson" >"$tmp/responses.ndjson" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "aup run exited $rc: $(head -c 2000 "$tmp/err")"
ran=$(date +%s.%N)

python3 "$here/check_tpcc.py" "$tmp/requests.ndjson" "$tmp/responses.ndjson" "$tmp/summary.json" $now
status=$?
checked=$(date +%s.%N)

echo "generator summary: $(cat "$tmp/summary.json")"
python3 -c 'import sys; a = [float(x) for x in sys.argv[1:]]
print("seconds: generate %.2f, aup run %.2f, check %.2f, total %.2f" % (a[1] - a[0], a[2] - a[1], a[3] - a[2], a[3] - a[0]))' \
  "$start" "$generated" "$ran" "$checked"
[ "$status" -eq 0 ] || fail "responses differ from the model (above)"
echo "ok tpcc end to end"
