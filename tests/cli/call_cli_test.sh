#!/bin/sh
# `aup call` against a running server: every bank event and query in the
# short form answers exactly what the same request as a JSON line answers
# through `aup run` on stdin; exit codes 0 (ok), 1 (the request failed), 2
# (usage, a request the schema refuses, no server); the messages.
# Usage: call_cli_test.sh AUP SOURCE_ROOT
set -u
aup=$1
root=$2
tmp=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
bank=$root/examples/bank/bank.aup
time=1700000000000

# A server on `$1`; its pid in $server, the address it says it listens on
# in $address (a TCP port of 0 is chosen by the system).
start_server() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  : >"$tmp/server.err"
  "$aup" run "$bank" --memory --fixed-time $time --listen "$1" 2>"$tmp/server.err" &
  server=$!
  address=
  for _ in $(seq 1 100); do
    address=$(sed -n 's/^aup: listening on \(.*\)/\1/p' "$tmp/server.err" | head -1)
    [ -n "$address" ] && break
    sleep 0.1
  done
  [ -n "$address" ] || { echo "FAIL: the server did not start: $(cat "$tmp/server.err")"; exit 1; }
}

# Each line: the short form, then (after " | ") the same request as JSON.
cat >"$tmp/requests" <<'REQ'
open id=1 owner=ann | {"event":"open","args":{"id":1,"owner":"ann"}}
open 2 "bob \"b\"" | {"event":"open","args":{"id":2,"owner":"bob \"b\""}}
deposit id=1 amount=100 | {"event":"deposit","args":{"id":1,"amount":100}}
transfer from=1 to=2 amount=30 | {"event":"transfer","args":{"from":1,"to":2,"amount":30}}
transfer 1 2 500 | {"event":"transfer","args":{"from":1,"to":2,"amount":500}}
balance 1 | {"query":"balance","args":{"id":1}}
balance id=9 | {"query":"balance","args":{"id":9}}
history id=2 since=1 | {"query":"history","args":{"id":2,"since":1}}
total | {"query":"total","args":{}}
accounts_all | {"query":"accounts_all","args":{}}
transfers_made | {"query":"transfers_made","args":{}}
recent n=5 | {"query":"recent","args":{"n":5}}
close 2 | {"event":"close","args":{"id":2}}
close id=2 | {"event":"close","args":{"id":2}}
REQ
sed 's/.* | //' "$tmp/requests" | "$aup" run "$bank" --memory --fixed-time $time >"$tmp/want" 2>"$tmp/run.err" ||
  fail "aup run on stdin: $(cat "$tmp/run.err")"
# The whole list against a fresh server on each kind of address.
for listen in "unix:$tmp/s" :0; do
  start_server "$listen"
  i=0
  : >"$tmp/got"
  while IFS= read -r line; do
    i=$((i + 1))
    short=${line%% | *}
    eval "set -- $short"
    "$aup" call "$address" "$@" >>"$tmp/got" 2>"$tmp/call.err"
    rc=$?
    want_rc=0; sed -n "${i}p" "$tmp/want" | grep -q '"ok":false' && want_rc=1
    [ "$rc" -eq "$want_rc" ] || fail "aup call $address $short exited $rc, expected $want_rc: $(cat "$tmp/call.err")"
    if [ "$want_rc" -eq 1 ]; then
      grep -q "^aup call: [a-z_]*: " "$tmp/call.err" || fail "a failed $short says its code: $(cat "$tmp/call.err")"
    fi
  done <"$tmp/requests"
  diff "$tmp/want" "$tmp/got" >"$tmp/diff" || fail "aup call $address answers differ from aup run's: $(cat "$tmp/diff")"
done
start_server "unix:$tmp/s"
sed 's/.* | //' "$tmp/requests" | head -5 | while IFS= read -r json; do "$aup" call "$address" "$json" >/dev/null 2>&1; done

# A raw JSON request goes as it is, id and all.
"$aup" call "unix:$tmp/s" '{"query":"balance","args":{"id":1},"id":"x"}' >"$tmp/out" 2>&1
[ "$(cat "$tmp/out")" = '{"id":"x","ok":true,"result":70}' ] || fail "a raw request: $(cat "$tmp/out")"

# Refused before sending (exit 2), each with what is wrong and the usage.
expect_usage() {
  want=$1; shift
  "$aup" call "unix:$tmp/s" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "aup call $* exited $rc, expected 2"
  [ -s "$tmp/out" ] && fail "aup call $* printed an answer: $(cat "$tmp/out")"
  grep -qF "$want" "$tmp/err" || fail "aup call $*: expected \"$want\", got: $(cat "$tmp/err")"
}
expect_usage "no event or query \`balanse\`; did you mean \`balance\`?; events: open, deposit, transfer, close;" balanse 1
expect_usage "amount: expected number, got \`ten\`; usage: deposit id=num amount=num" deposit 1 ten
expect_usage "amount: expected number, got string; usage: deposit id=num amount=num" deposit 1 '"ten"'
expect_usage "missing field \`amount\`; usage: deposit id=num amount=num" deposit id=1
expect_usage "unknown field \`amont\`; did you mean \`amount\`?" deposit id=1 amont=5
expect_usage "balance takes 1 argument; \`2\` is one too many" balance 1 2
# The same mistakes sent as JSON: the server's message is the short form's.
same_words() {
  short=$1 json=$2
  "$aup" call "unix:$tmp/s" "$json" >/dev/null 2>"$tmp/server_says"
  [ $? -eq 1 ] || fail "$json: the server did not refuse it"
  said=$(sed -n 's/^aup call: bad_args: //p' "$tmp/server_says")
  [ -n "$said" ] || fail "$json: no bad_args message: $(cat "$tmp/server_says")"
  eval "set -- $short"
  "$aup" call "unix:$tmp/s" "$@" >/dev/null 2>"$tmp/err"
  # (then, for a misspelt name, the closest one; then the usage)
  grep -q "^aup call: $said[;].* usage: " "$tmp/err" || fail "$short: not the server's \"$said\": $(cat "$tmp/err")"
}
same_words "deposit id=1" '{"event":"deposit","args":{"id":1}}'
same_words "deposit id=1 amount='\"ten\"'" '{"event":"deposit","args":{"id":1,"amount":"ten"}}'
same_words "balance id=true" '{"query":"balance","args":{"id":true}}'
same_words "deposit id=1 amont=5 amount=5" '{"event":"deposit","args":{"id":1,"amont":5,"amount":5}}'
"$aup" call "unix:$tmp/nobody" total >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "no server: exit 2"
grep -qF "aup call: cannot connect to unix:$tmp/nobody: " "$tmp/err" || fail "no server says so: $(cat "$tmp/err")"
"$aup" call "unix:$tmp/s" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "no request: exit 2"
"$aup" call --help >"$tmp/out" 2>&1
grep -q "Exit status: 0 answered ok, 1 the request failed" "$tmp/out" || fail "--help tells the exit codes"

# The schema request itself, as any client may send it.
"$aup" call "unix:$tmp/s" '{"schema":{}}' >"$tmp/out" 2>&1
grep -q '^{"ok":true,"result":{"events":\[{"name":"open","args":\[{"name":"id","type":"num"}' "$tmp/out" ||
  fail "schema: $(cat "$tmp/out")"

[ "$failures" -eq 0 ] && echo "call: all checks passed"
exit $((failures > 0))
