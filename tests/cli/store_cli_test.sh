#!/bin/sh
# `aup run --data` and `aup replay` as a user meets them: the default store
# directory, state that survives a restart, the lock against a second run,
# a torn tail cut, damage refused by file and offset, schema migration and
# refusal, the store's own key tables, and every replay option with its
# exit codes.
# Usage: store_cli_test.sh AUP SOURCE_ROOT
set -u
aup=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some steps run elsewhere
root=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'kill $holder 2>/dev/null; rm -rf "$tmp"' EXIT
holder=""
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_rc() {
  want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  got=$?
  [ "$got" -eq "$want" ] || fail "$* exited $got, expected $want: $(cat "$tmp/err")"
}
# run_in DIR ARGS... <input: aup run inside DIR
bank=$root/examples/bank/bank.aup
ft="--fixed-time 1700000000000"

# The default store is ./aup-data, created on the first run. The demo goes
# in two runs (lines read together are one batch, one log entry), so the
# log holds two entries: save 1 after the first ten requests.
mkdir "$tmp/w"
head -n 10 "$root/examples/bank/demo.ndjson" >"$tmp/demo1"
tail -n +11 "$root/examples/bank/demo.ndjson" >"$tmp/demo2"
(cd "$tmp/w" && "$aup" run "$bank" $ft <"$tmp/demo1" >"$tmp/demo.out" 2>"$tmp/err") ||
  fail "run on the default store: $(cat "$tmp/err")"
(cd "$tmp/w" && "$aup" run "$bank" $ft <"$tmp/demo2" >>"$tmp/demo.out" 2>/dev/null) ||
  fail "second run on the default store"
[ -f "$tmp/w/aup-data/schema" ] || fail "run without --data creates ./aup-data"
grep -q "created the store aup-data" "$tmp/err" || fail "run says it created the store"
cmp -s "$tmp/demo.out" "$root/examples/bank/demo.out.ndjson" || fail "answers on a store equal the golden answers"

# A restart finds the state.
echo '{"query":"total"}' | (cd "$tmp/w" && "$aup" run "$bank" $ft) >"$tmp/out" 2>"$tmp/err"
before=$(echo '{"query":"total"}' | "$aup" run "$bank" --memory $ft)
[ -n "$before" ] || fail "memory run answers"
grep -q '"ok":true' "$tmp/out" || fail "restart answers a query: $(cat "$tmp/out" "$tmp/err")"
grep -q "created" "$tmp/err" && fail "a restart does not create the store again"
echo '{"query":"accounts_all"}' | (cd "$tmp/w" && "$aup" run "$bank" $ft) >"$tmp/after" 2>/dev/null
grep -q '"owner":"ann"' "$tmp/after" || fail "accounts survive a restart: $(cat "$tmp/after")"

# --memory writes nothing.
mkdir "$tmp/m"
(cd "$tmp/m" && "$aup" run "$bank" --memory </dev/null >/dev/null 2>&1) || fail "run --memory"
[ -e "$tmp/m/aup-data" ] && fail "--memory creates no store"

# A second run on the same store is refused (exit 2) naming the holder.
store=$tmp/w/aup-data
mkfifo "$tmp/fifo"
"$aup" run "$bank" --data "$store" <"$tmp/fifo" >/dev/null 2>&1 &
holder=$!
exec 9>"$tmp/fifo"
tries=0
until grep -q "$holder" "$store/LOCK" 2>/dev/null || [ $tries -ge 100 ]; do sleep 0.05; tries=$((tries + 1)); done
expect_rc 2 "$aup" run "$bank" --data "$store"
grep -q "is in use by another aup (pid $holder)" "$tmp/err" || fail "the lock names the holder: $(cat "$tmp/err")"
exec 9>&-
wait $holder || fail "the holder exits cleanly at end of input"
holder=""

# replay: the summary, --verify, --entries, --dump, --vars, --at.
expect_rc 0 "$aup" replay --data "$store"
grep -q "^store $store: 2 tables, 1 var, " "$tmp/out" || fail "replay summary: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$store" --verify
grep -q "^verified: schema, 3 images" "$tmp/out" || fail "replay --verify: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$store" --entries
entries=$(wc -l <"$tmp/out")
[ "$entries" -ge 1 ] || fail "replay --entries lists entries"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/out" || fail "--entries is NDJSON"
expect_rc 0 "$aup" replay --data "$store" --dump accounts
grep -q '"owner":"ann"' "$tmp/out" || fail "replay --dump accounts: $(cat "$tmp/out")"
python3 - "$tmp/out" "$tmp/after" <<'PY' || fail "--dump equals the rows the module sees"
import json, sys
dump = [json.loads(l) for l in open(sys.argv[1])]
seen = json.loads(open(sys.argv[2]).read())["result"]
sys.exit(0 if dump == seen else 1)
PY
expect_rc 0 "$aup" replay --data "$store" --vars
grep -q '"next_transfer":' "$tmp/out" || fail "replay --vars: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$store" --dump accounts --at 1
grep -q '"owner":"ann","balance":70,' "$tmp/out" || fail "--at 1: the state after the first save: $(cat "$tmp/out")"
expect_rc 2 "$aup" replay --data "$store" --dump nope
grep -q "no table \`nope\`" "$tmp/err" || fail "unknown table named: $(cat "$tmp/err")"
expect_rc 2 "$aup" replay --data "$tmp/none"
grep -q "$tmp/none" "$tmp/err" || fail "a missing store is named"
expect_rc 2 "$aup" replay --data "$store" --at 99999 --vars
(cd "$tmp/m" && "$aup" replay >/dev/null 2>"$tmp/err") && fail "replay with no store in ./aup-data fails"
grep -q "aup-data" "$tmp/err" || fail "replay names the default store: $(cat "$tmp/err")"

# A torn tail: the last entry half written. replay reports it; run cuts it.
cp -r "$store" "$tmp/torn"
seg=$(ls "$tmp/torn" | grep '^log-' | sort -t- -k2 -n | tail -1)
python3 - "$tmp/torn/$seg" <<'PY'
import struct, sys
# Find the last entry (log_format.h: 4-byte length, ..., 40-byte header,
# entries at 8-byte boundaries after the 64-byte segment header) and cut
# its last payload byte in half by zeroing it and everything after.
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
at, last = 64, None
while at + 40 <= len(data):
    n = struct.unpack_from("<I", data, at)[0]
    if n == 0:
        break
    last = (at, n)
    at += (40 + n + 7) // 8 * 8
start, n = last
for i in range(start + 40 + n - 1, len(data)):
    data[i] = 0
open(path, "wb").write(data)
PY
expect_rc 0 "$aup" replay --data "$tmp/torn" --verify
grep -q "torn tail: $seg at byte" "$tmp/out" || fail "replay reports the torn tail: $(cat "$tmp/out" "$tmp/err")"
echo '{"query":"total"}' | "$aup" run "$bank" --data "$tmp/torn" >"$tmp/out" 2>"$tmp/err" || fail "run on a torn log"
grep -q "torn write" "$tmp/err" || fail "run says it cut a torn write: $(cat "$tmp/err")"
expect_rc 0 "$aup" replay --data "$tmp/torn" --verify
grep -q "torn tail\|torn write" "$tmp/out" "$tmp/err" && fail "after the cut the log ends cleanly"

# Damage: an entry in the middle of the log changed. Both commands refuse,
# exit 1, naming the segment and the byte.
cp -r "$store" "$tmp/bad"
seg=$(ls "$tmp/bad" | grep '^log-' | sort -t- -k2 -n | tail -1)
python3 - "$tmp/bad/$seg" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[64 + 40] ^= 0xFF  # the first entry's first payload byte
open(path, "wb").write(data)
PY
expect_rc 1 "$aup" replay --data "$tmp/bad" --verify
grep -q "$seg at byte 64" "$tmp/err" || fail "replay names the damaged entry: $(cat "$tmp/err")"
expect_rc 1 "$aup" run "$bank" --data "$tmp/bad"
grep -q "$seg at byte 64" "$tmp/err" || fail "run names the damaged entry: $(cat "$tmp/err")"

# Schema: an added table migrates; a changed field type is refused with the list.
sed 's/^var next_transfer: num = 1$/var next_transfer: num = 1\nvar audits: num = 0\nrecord Note { id: num, body: text }\ntable notes: Note key id/' \
  "$bank" >"$tmp/bank2.aup"
cp -r "$store" "$tmp/mig"
expect_rc 0 "$aup" run "$tmp/bank2.aup" --data "$tmp/mig"
grep -q "migrated $tmp/mig: " "$tmp/err" || fail "migration reported: $(cat "$tmp/err")"
expect_rc 0 "$aup" replay --data "$tmp/mig" --dump notes
# The same tables with one field's type changed, and the var gone.
cat >"$tmp/bank3.aup" <<'AUP'
record Account { id: num, owner: num, balance: num, opened: num, closed: bool = false }
record Transfer { id: num, from: num, to: num, amount: num, at: num }
table accounts: Account key id
table transfers: Transfer key id
AUP
expect_rc 1 "$aup" run "$tmp/bank3.aup" --data "$store"
grep -q "does not match the module" "$tmp/err" || fail "a changed type is refused: $(cat "$tmp/err")"
grep -q "owner" "$tmp/err" || fail "the refusal names the field: $(cat "$tmp/err")"
grep -q "next_transfer" "$tmp/err" || fail "the refusal names the missing var: $(cat "$tmp/err")"
expect_rc 0 "$aup" replay --data "$store" --verify

# Idempotency keys: a store that kept none starts keeping them with --keys
# (its own tables, said on stderr; not a migration of the module), keeps
# them without it, and replay shows them as the store's own.
mkdir "$tmp/k"
echo '{"event":"open","args":{"id":1,"owner":"ann"}}' | "$aup" run "$bank" --data "$tmp/k/s" $ft >/dev/null 2>&1 ||
  fail "seeding a store for keys"
deposit='{"event":"deposit","args":{"id":1,"amount":5},"key":"d1"}'
echo "$deposit" | "$aup" run "$bank" --data "$tmp/k/s" --keys 10 $ft >"$tmp/out" 2>"$tmp/err" || fail "run --keys: $(cat "$tmp/err")"
grep -q "^aup: the store $tmp/k/s keeps idempotency keys from now on (its own tables \`\$keys\` and \`\$key_order\`)$" \
  "$tmp/err" || fail "run says the store keeps keys from now on: $(cat "$tmp/err")"
grep -q "migrated" "$tmp/err" && fail "gaining the key tables is not a migration: $(cat "$tmp/err")"
printf '%s\n' "$deposit" '{"query":"balance","args":{"id":1}}' | "$aup" run "$bank" --data "$tmp/k/s" $ft >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "a store that keeps keys opens quietly without --keys: $(cat "$tmp/err")"
grep -q '"result":5}' "$tmp/out" || fail "the retry is answered from its key, applying nothing: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$tmp/k/s"
grep -q "^  table \$keys (the store's own): 1 row; " "$tmp/out" || fail "replay shows the store's own tables: $(cat "$tmp/out")"
grep -q "^  table accounts: 1 row; " "$tmp/out" || fail "replay shows the module's tables as before: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$tmp/k/s" --dump '$keys'
grep -q '^{"key":"d1","digest":"[0-9a-f]\{16\}","answer":"{\\"balance\\":5}","n":0,"at":1.7e+12}$' "$tmp/out" ||
  fail "replay --dump '\$keys': $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$tmp/k/s" --verify
# Whether the store keeps keys is read by the store alone, through its Io:
# the schema file's open is the store's third (after LIVE and READERS), and
# a fault there refuses the run with its error (nothing read it before).
echo "$deposit" | AUP_FAULTS=fail:open:3:EIO "$aup" run "$bank" --data "$tmp/k/s" $ft >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "a fault on the schema file's open: exit $rc, expected 2: $(cat "$tmp/err")"
grep -q "^aup: fault plan: open (3) fails: Input/output error$" "$tmp/err" || fail "the fault fired: $(cat "$tmp/err")"
grep -q "^aup run: cannot open $tmp/k/s/schema: Input/output error$" "$tmp/err" ||
  fail "the schema file's open is the one refused: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "nothing answered: $(cat "$tmp/out")"

# An event and a query in one read, the batch's commit failing: the event
# is answered `unavailable` and the query reads the state before it, never
# the event that was undone (a query runs only on committed state).
mkdir "$tmp/q"
printf '{"event":"open","args":{"id":1,"owner":"ann"}}\n{"event":"deposit","args":{"id":1,"amount":100}}\n' |
  "$aup" run "$bank" --data "$tmp/q/s" $ft >/dev/null 2>"$tmp/err" || fail "seeding a store: $(cat "$tmp/err")"
printf '{"event":"deposit","args":{"id":1,"amount":5},"id":"d"}\n{"query":"balance","args":{"id":1},"id":"q"}\n' |
  AUP_FAULTS=fail:fdatasync:1:EIO "$aup" run "$bank" --data "$tmp/q/s" $ft >"$tmp/out" 2>"$tmp/err"
grep -q '"id":"d","ok":false,"error":{"code":"unavailable"' "$tmp/out" ||
  fail "the event of a failed commit is answered unavailable: $(cat "$tmp/out" "$tmp/err")"
grep -q '"id":"q","ok":true,"result":100}' "$tmp/out" ||
  fail "the query after it reads the state before it: $(cat "$tmp/out")"
[ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "two answers: $(cat "$tmp/out")"

# replay: counts read as English, --verify counts the state's rows, and
# --dump with --vars is refused rather than one of them ignored.
mkdir "$tmp/one"
echo '{"event":"open","args":{"id":1,"owner":"ann"}}' | "$aup" run "$bank" --data "$tmp/one/s" >/dev/null 2>&1
expect_rc 0 "$aup" replay --data "$tmp/one/s"
grep -q "table accounts: 1 row; " "$tmp/out" || fail "replay: 1 row: $(cat "$tmp/out")"
grep -q "log: 1 segment, 1 entry, " "$tmp/out" || fail "replay: 1 segment, 1 entry: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$tmp/one/s" --verify
grep -q "^verified: schema, 3 images holding 0 rows, 1 log entry; 1 row in the state$" "$tmp/out" ||
  fail "replay --verify counts the state's rows: $(cat "$tmp/out")"
expect_rc 2 "$aup" replay --data "$tmp/one/s" --dump accounts --vars
# --at means something only with --dump or --vars: alone it is refused.
expect_rc 2 "$aup" replay --data "$tmp/one/s" --at 1
grep -q "needs --dump or --vars" "$tmp/err" || fail "replay --at alone: $(cat "$tmp/err")"
expect_rc 0 "$aup" replay --data "$tmp/one/s" --vars --at 1
# --data naming a regular file is the caller's mistake (2), not damage (1).
: >"$tmp/plain-file"
expect_rc 2 "$aup" replay --data "$tmp/plain-file"
grep -q "^aup replay: --data $tmp/plain-file: not a directory" "$tmp/err" || fail "replay --data a file: $(cat "$tmp/err")"

# A table with a composite key (key order not field order, texts that
# begin others and one holding a 0x00 byte): replay --dump prints its rows,
# the key's fields among them, in key order; --at as of a save; --verify
# reads it. Its schema file and image are format 2 (the bank's stay 1).
cat >"$tmp/lines.aup" <<'AUP'
record Line { qty: num, d: text, w: num, o: num }
table lines: Line key (w, d, o)
event put { w: num, d: text, o: num, qty: num }
on put { lines.put(Line { qty: put.qty, d: put.d, w: put.w, o: put.o }) }
event del { w: num, d: text, o: num }
on del { lines.remove(del.w, del.d, del.o) }
AUP
printf '%s\n' '{"event":"put","args":{"w":2,"d":"b","o":1,"qty":10}}' \
  '{"event":"put","args":{"w":1,"d":"b","o":2,"qty":20}}' '{"event":"put","args":{"w":1,"d":"a","o":3,"qty":30}}' \
  '{"event":"put","args":{"w":1,"d":"a\u0000","o":0,"qty":40}}' |
  "$aup" run "$tmp/lines.aup" --data "$tmp/lines" >/dev/null 2>"$tmp/err" || fail "run with a composite key: $(cat "$tmp/err")"
printf '%s\n' '{"event":"del","args":{"w":1,"d":"b","o":2}}' '{"event":"put","args":{"w":1,"d":"ab","o":0,"qty":50}}' |
  "$aup" run "$tmp/lines.aup" --data "$tmp/lines" >/dev/null 2>"$tmp/err" || fail "rerun with a composite key: $(cat "$tmp/err")"
expect_rc 0 "$aup" replay --data "$tmp/lines" --dump lines
printf '%s\n' '{"qty":30,"d":"a","w":1,"o":3}' '{"qty":40,"d":"a\u0000","w":1,"o":0}' '{"qty":50,"d":"ab","w":1,"o":0}' \
  '{"qty":10,"d":"b","w":2,"o":1}' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "replay --dump of a composite key, in key order: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$tmp/lines" --dump lines --at 1
printf '%s\n' '{"qty":30,"d":"a","w":1,"o":3}' '{"qty":40,"d":"a\u0000","w":1,"o":0}' '{"qty":20,"d":"b","w":1,"o":2}' \
  '{"qty":10,"d":"b","w":2,"o":1}' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "replay --dump --at 1 of a composite key: $(cat "$tmp/out")"
expect_rc 0 "$aup" replay --data "$tmp/lines" --verify
grep -q "^verified: schema, 2 images holding 0 rows, 2 log entries; 4 rows in the state$" "$tmp/out" ||
  fail "replay --verify of a composite key: $(cat "$tmp/out")"
[ "$(od -An -tu1 -j8 -N1 "$tmp/lines/schema" | tr -d ' ')" = 2 ] || fail "a composite key's schema file is format 2"
[ "$(od -An -tu1 -j8 -N1 "$tmp/lines/image-lines" | tr -d ' ')" = 2 ] || fail "a composite key's image is format 2"
[ "$(od -An -tu1 -j8 -N1 "$store/schema" | tr -d ' ')" = 1 ] || fail "the bank's schema file stays format 1"

# The vars' image missing, or an older copy of it put back, once the log no
# longer reaches back to the save it covers (checkpoints have released the
# log's first segment): entries the vars need are gone. `replay --verify`
# says so naming the vars (exit 1), and `run` refuses to open the store.
# Each run below is one batch (one log entry) of 40 new accounts and a
# transfer, which sets the var; small segments and image thresholds.
mkdir "$tmp/vs"
small="--segment-size 4096 --image-min 512 --log-min 2048"
for r in 0 1 2 3 4 5 6 7 8 9 10 11; do
  i=1
  : >"$tmp/vs/in"
  while [ $i -le 40 ]; do
    a=$((r * 40 + i))
    printf '{"event":"open","args":{"id":%d,"owner":"o%d"}}\n{"event":"deposit","args":{"id":%d,"amount":5}}\n' \
      $a $a $a >>"$tmp/vs/in"
    i=$((i + 1))
  done
  printf '{"event":"transfer","args":{"from":%d,"to":1,"amount":1}}\n' $((r * 40 + 2)) >>"$tmp/vs/in"
  # shellcheck disable=SC2086
  "$aup" run "$bank" --data "$tmp/vs/s" --engine vm $small $ft <"$tmp/vs/in" >/dev/null 2>"$tmp/err" ||
    fail "run $r of the vars' store: $(cat "$tmp/err")"
  [ $r -eq 1 ] && cp "$tmp/vs/s/image.vars" "$tmp/vs/stale.vars"
done
expect_rc 0 "$aup" replay --data "$tmp/vs/s" --verify
expect_rc 0 "$aup" replay --data "$tmp/vs/s"
grep -q ' saves 1\.\.' "$tmp/out" && fail "the vars' store: its log still begins at save 1: $(cat "$tmp/out")"
cp "$tmp/vs/s/image.vars" "$tmp/vs/kept.vars"
for how in missing stale; do
  if [ $how = missing ]; then rm "$tmp/vs/s/image.vars"; else cp "$tmp/vs/stale.vars" "$tmp/vs/s/image.vars"; fi
  expect_rc 1 "$aup" replay --data "$tmp/vs/s" --verify
  grep -q "^aup replay: log entries are missing: the oldest follows save [0-9]*, the image of the vars covers only up to " \
    "$tmp/err" || fail "replay --verify with the vars' image $how names the vars: $(cat "$tmp/out" "$tmp/err")"
  grep -q "^verified" "$tmp/out" && fail "replay --verify with the vars' image $how says verified"
  expect_rc 1 "$aup" run "$bank" --data "$tmp/vs/s" --engine vm
  grep -q "is missing log entries: .* but the image of the vars covers only up to save " "$tmp/err" ||
    fail "run with the vars' image $how refuses naming the vars: $(cat "$tmp/err")"
done
cp "$tmp/vs/kept.vars" "$tmp/vs/s/image.vars"
expect_rc 0 "$aup" replay --data "$tmp/vs/s" --verify

# A composite key whose fields sit in another order than in the record
# (tests/programs/key_order.aup: key (s, n) over { n, s }): replay --dump
# prints the rows in key order, s then n, not in the record's order.
ko=$root/tests/programs/key_order.aup
printf '%s\n' '{"event":"add","args":{"s":"b","n":1}}' '{"event":"add","args":{"s":"a","n":10}}' \
  '{"event":"add","args":{"s":"b","n":0}}' '{"event":"add","args":{"s":"c","n":-1}}' |
  "$aup" run "$ko" --data "$tmp/ko" --engine vm >/dev/null 2>"$tmp/err" || fail "run key_order: $(cat "$tmp/err")"
printf '%s\n' '{"event":"add","args":{"s":"ab","n":5}}' '{"event":"add","args":{"s":"a","n":2}}' \
  '{"event":"add","args":{"s":"a","n":3}}' '{"event":"drop","args":{"s":"a","n":3}}' |
  "$aup" run "$ko" --data "$tmp/ko" --engine vm >/dev/null 2>"$tmp/err" || fail "rerun key_order: $(cat "$tmp/err")"
expect_rc 0 "$aup" replay --data "$tmp/ko" --dump t
printf '%s\n' '{"n":2,"s":"a"}' '{"n":10,"s":"a"}' '{"n":5,"s":"ab"}' '{"n":0,"s":"b"}' '{"n":1,"s":"b"}' \
  '{"n":-1,"s":"c"}' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "replay --dump of key (s, n) over { n, s }, in key order: $(cat "$tmp/out")"

[ "$failures" -eq 0 ] || exit 1
echo ok
