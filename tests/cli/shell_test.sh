#!/bin/sh
# `aup shell` read from a pipe, as scripts drive it: one answer a line for
# the short form and raw JSON alike, mistakes on stderr without stopping,
# dot commands, a store the shell opens itself (MODULE --data DIR, kept
# across sessions) and a running server (ADDRESS); exit codes 0, 1, 2.
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
[ "$rc" -eq 1 ] || fail "a session with a failed request exits 1, got $rc"
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
grep -qx "transfers" "$tmp/out" || fail ".tables: $(cat "$tmp/out")"
grep -q '^([0-9.]* ms)$' "$tmp/out" || fail ".timing on: $(cat "$tmp/out")"
[ "$(grep -c '"accounts":0' "$tmp/out")" -eq 1 ] || fail ".quit stops reading: $(cat "$tmp/out")"
grep -q "no command \`.timing\`" "$tmp/err" || fail ".timing without on/off: $(cat "$tmp/err")"
grep -q "no command \`.nope\`; .help lists them" "$tmp/err" || fail "an unknown dot command: $(cat "$tmp/err")"

# A running server.
"$aup" run "$bank" --memory --listen "unix:$tmp/s" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.1; done
printf '%s\n' 'open 5 "Eve \"E\""' 'accounts_all' | "$aup" shell "unix:$tmp/s" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "a session against a server: $(cat "$tmp/err")"
grep -q '"owner":"Eve \\"E\\""' "$tmp/out" || fail "a quoted text is a JSON string: $(cat "$tmp/out")"

# Usage and connection problems: exit 2.
echo total | "$aup" shell "unix:$tmp/nobody" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "no server: exit 2"
grep -q "^aup shell: cannot connect to unix:$tmp/nobody" "$tmp/err" || fail "no server says so: $(cat "$tmp/err")"
"$aup" shell "$bank" --memory --data "$tmp/x" </dev/null >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "--memory with --data: exit 2"

[ "$failures" -eq 0 ] && echo "shell: all checks passed"
exit $((failures > 0))
