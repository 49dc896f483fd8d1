#!/bin/sh
# `aup shell` read from a pipe, as scripts drive it: one answer a line for
# the short form and raw JSON alike, mistakes on stderr without stopping,
# dot commands (.tables with keys and indexes, .mode), a store the shell
# opens itself (MODULE --data DIR, kept across sessions) and a running
# server (ADDRESS); exit codes 0, 1, 2, --bail, an `unavailable` answer; a
# store a server holds and a module without a store said plainly.
# (tests/cli/shell_pty_test.py types into it on a terminal.)
# Usage: shell_test.sh AUP SOURCE_ROOT
set -u
aup=$1
root=$2
tmp=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
bank=$root/examples/bank/bank.aup
export AUP_HISTORY=  # no history file from a pipe, and none of the caller's

printf '%s\n' 'open id=1 owner=ann' 'deposit 1 100' '{"query":"balance","args":{"id":1},"id":7}' \
  'balanse 1' 'transfer 1 9 5' '' 'balance 1' >"$tmp/in"
"$aup" shell "$bank" --data "$tmp/store" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "a session whose failed requests were answered exits 0, as aup run does, got $rc"
cat >"$tmp/want" <<'OUT'
{"ok":true}
{"ok":true,"result":{"balance":100}}
{"id":7,"ok":true,"result":100}
{"ok":false,"error":{"code":"not_found","message":"`accounts` has no key 9 (bank.aup:30:11)"}}
{"ok":true,"result":100}
OUT
diff "$tmp/want" "$tmp/out" >"$tmp/diff" || fail "answers, one a line: $(cat "$tmp/diff")"
grep -q "^aup shell: no event or query \`balanse\`; did you mean \`balance\`?" "$tmp/err" ||
  fail "a misspelt name is told on stderr: $(cat "$tmp/err")"
grep -q "created the store" "$tmp/err" || fail "the store's own messages pass through: $(cat "$tmp/err")"

# The store outlives the session; a session of ok requests exits 0.
echo 'balance 1' | "$aup" shell "$bank" --data "$tmp/store" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "an ok session exits 0: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = '{"ok":true,"result":100}' ] || fail "the store kept its state: $(cat "$tmp/out")"

# Dot commands.
printf '%s\n' .events .queries .tables .timing '.timing on' 'total' .nope .quit 'total' |
  "$aup" shell "$bank" --memory >"$tmp/out" 2>"$tmp/err"
grep -qx "transfer from=num to=num amount=num -> {transfer: num, balance: num}" "$tmp/out" || fail ".events: $(cat "$tmp/out")"
grep -qx "history id=num since=num -> \[Transfer\]" "$tmp/out" || fail ".queries: $(cat "$tmp/out")"
grep -qx "accounts   key (id)" "$tmp/out" || fail ".tables shows keys: $(cat "$tmp/out")"
grep -qx "transfers  key (id)" "$tmp/out" || fail ".tables shows keys: $(cat "$tmp/out")"
grep -q '^([0-9.]* ms)$' "$tmp/out" || fail ".timing on: $(cat "$tmp/out")"
[ "$(grep -c '"accounts":0' "$tmp/out")" -eq 1 ] || fail ".quit stops reading: $(cat "$tmp/out")"
grep -q "no command \`.timing\`" "$tmp/err" || fail ".timing without on/off: $(cat "$tmp/err")"
grep -q "no command \`.nope\`; .help lists them" "$tmp/err" || fail "an unknown dot command: $(cat "$tmp/err")"

# .tables with indexes; .mode from a pipe: table and line print rows (a
# failure as its code and message), json the answer lines again.
cat >"$tmp/people.aup" <<'AUP'
record Person { id: num, name: text, email: text }
table people: Person key id
index by_name on people (name)
unique index by_email on people (email)
event add { id: num, name: text, email: text }
on add { people.add(Person { id: add.id, name: add.name, email: add.email }) }
query everyone() {
  let out: [Person] = []
  for p in people { out.push(p) }
  return out
}
AUP
printf '%s\n' .tables 'add 1 Ann a@x' 'add 2 Bo b@x' .mode '.mode table' everyone 'add 1 Cy c@x' '.mode line' \
  everyone '.mode json' everyone '.mode wide' |
  "$aup" shell "$tmp/people.aup" --memory >"$tmp/out" 2>"$tmp/err"
cat >"$tmp/want" <<'OUT'
people  key (id)  index by_name (name)  unique index by_email (email)
{"ok":true}
{"ok":true}
json
+----+------+-------+
| id | name | email |
+----+------+-------+
|  1 | Ann  | a@x   |
|  2 | Bo   | b@x   |
+----+------+-------+
duplicate: `people` already has key 1 (people.aup:6:17)
   id = 1
 name = Ann
email = a@x

   id = 2
 name = Bo
email = b@x
{"ok":true,"result":[{"id":1,"name":"Ann","email":"a@x"},{"id":2,"name":"Bo","email":"b@x"}]}
OUT
diff "$tmp/want" "$tmp/out" >"$tmp/diff" || fail ".tables with indexes, .mode table|line|json: $(cat "$tmp/diff")"
grep -q "^aup shell: \`.mode wide\`: .mode takes table, line or json$" "$tmp/err" || fail ".mode wide: $(cat "$tmp/err")"

# Exit status: 1 when a request failed; --bail stops at the first that
# failed (a refused line counts); an `unavailable` answer (the commit
# failed: nothing was committed) is a failure too, even among ok answers.
printf '%s\n' 'open 1 ann' 'balance 9' 'balance 1' | "$aup" shell "$bank" --memory --bail >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "--bail: exit 1, got $rc"
[ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "--bail: nothing after the failed request: $(cat "$tmp/out")"
grep -q "^aup shell: --bail: stopped after line 2, the first that failed$" "$tmp/err" || fail "--bail says where: $(cat "$tmp/err")"
printf '%s\n' 'balanse 1' 'total' | "$aup" shell "$bank" --memory --bail >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && [ ! -s "$tmp/out" ] || fail "--bail stops at a refused line: $(cat "$tmp/out")"
printf '%s\n' 'balance 9' 'total' | "$aup" shell "$bank" --memory >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && [ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "without --bail every line is read, exit 0: $(cat "$tmp/out")"
printf '%s\n' 'open 1 ann' | "$aup" shell "$bank" --data "$tmp/u" >/dev/null 2>&1 || fail "seeding a store"
printf '%s\n' 'deposit 1 5' 'total' | AUP_FAULTS=fail:fdatasync:1:EIO "$aup" shell "$bank" --data "$tmp/u" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
grep -q '"code":"unavailable"' "$tmp/out" || fail "the failed commit is answered unavailable: $(cat "$tmp/out" "$tmp/err")"
[ "$rc" -eq 1 ] || fail "an unavailable answer exits 1, got $rc"
grep -q "^aup shell: some events were answered \`unavailable\`: the store could not commit them$" "$tmp/err" ||
  fail "an unavailable answer is said on stderr: $(cat "$tmp/err")"

# A module without a store, and a store a server holds: said plainly,
# nothing sent, exit 2.
"$aup" shell "$bank" </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "a module without --data or --memory: exit 2"
grep -q "^aup shell: $bank is a module: open a store with it, \`--data DIR\` (kept on disk) or \`--memory\`" "$tmp/err" ||
  fail "a module without a store is explained: $(cat "$tmp/err")"
grep -q "not an address" "$tmp/err" && fail "a module is not called a bad address: $(cat "$tmp/err")"
"$aup" shell "$root/examples/tour/mistake.aup" --memory </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "a module that does not build: exit 2"
grep -q "^aup shell: \`aup run $root/examples/tour/mistake.aup --memory\` ended before it answered (exit status 1; why is above): nothing was sent to the store$" "$tmp/err" ||
  fail "a child that ends before answering: $(cat "$tmp/err")"
grep -q "perhaps applied" "$tmp/err" && fail "nothing was sent, so nothing is perhaps applied: $(cat "$tmp/err")"

# A running server.
"$aup" run "$bank" --memory --listen "unix:$tmp/s" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.1; done
printf '%s\n' 'open 5 "Eve \"E\""' 'accounts_all' | "$aup" shell "unix:$tmp/s" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "a session against a server: $(cat "$tmp/err")"
grep -q '"owner":"Eve \\"E\\""' "$tmp/out" || fail "a quoted text is a JSON string: $(cat "$tmp/out")"
# Its store, opened by another shell: the server is named, and its address.
"$aup" run "$bank" --data "$tmp/served" --listen "unix:$tmp/s2" 2>"$tmp/server2.err" &
server2=$!
for _ in $(seq 1 100); do [ -S "$tmp/s2" ] && break; sleep 0.1; done
echo total | "$aup" shell "$bank" --data "$tmp/served" >"$tmp/out" 2>"$tmp/err"
rc=$?
kill "$server2"
wait "$server2"
[ "$rc" -eq 2 ] || fail "a served store: exit 2, got $rc"
grep -q "^aup shell: the store $tmp/served is in use by the aup at pid $server2, which serves it on unix:$tmp/s2; talk to it there: \`aup shell unix:$tmp/s2\`$" "$tmp/err" ||
  fail "a served store says which server and where: $(cat "$tmp/err")"
grep -q "perhaps applied" "$tmp/err" && fail "a served store: nothing is perhaps applied: $(cat "$tmp/err")"

# Usage and connection problems: exit 2.
echo total | "$aup" shell "unix:$tmp/nobody" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "no server: exit 2"
grep -q "^aup shell: cannot connect to unix:$tmp/nobody" "$tmp/err" || fail "no server says so: $(cat "$tmp/err")"
"$aup" shell "$bank" --memory --data "$tmp/x" </dev/null >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "--memory with --data: exit 2"

[ "$failures" -eq 0 ] && echo "shell: all checks passed"
exit $((failures > 0))
