#!/bin/sh
# `aup check` as a user meets it: exit codes (0 clean, 1 errors, 2 usage or
# unreadable file), the text and JSON diagnostic formats, --help, --version.
# Usage: check_cli_test.sh AUP SOURCE_ROOT
set -u
aup=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some steps run elsewhere
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_rc RC CMD...: run CMD, compare its exit status.
expect_rc() {
  want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  [ "$got" -eq "$want" ] || fail "$* exited $got, expected $want: $(cat "$tmp/err")"
}

expect_rc 0 "$aup" check "$root/examples/bank/bank.aup"
grep -q "bank.aup: ok" "$tmp/out" || fail "clean check prints an ok line"
expect_rc 0 "$aup" check -q "$root/examples/bank/bank.aup"
[ -s "$tmp/out" ] && fail "--quiet prints nothing for a clean file"

printf 'record R { id: num }\ntable t: R key idd\n' >"$tmp/bad.aup"
expect_rc 1 "$aup" check --color never "$tmp/bad.aup"
grep -q "bad.aup:2:16: error: no field \`idd\` in \`R\`; did you mean \`id\`?" "$tmp/err" \
  || fail "text diagnostic: $(cat "$tmp/err")"
grep -q '^               \^~~$' "$tmp/err" || fail "caret under the column: $(cat "$tmp/err")"
grep -q "1 error" "$tmp/err" || fail "error count line"

expect_rc 1 "$aup" check --json "$tmp/bad.aup"
grep -q '"line":2,"col":16,"width":3,"severity":"error","message":"no field' "$tmp/out" \
  || fail "json diagnostic: $(cat "$tmp/out")"
[ -s "$tmp/err" ] && fail "--json writes nothing to stderr"

expect_rc 2 "$aup" check "$tmp/missing.aup"
grep -q "cannot open" "$tmp/err" || fail "unreadable file message"
expect_rc 2 "$aup" check "$tmp"
expect_rc 2 "$aup" check
expect_rc 2 "$aup" check --no-such-flag "$tmp/bad.aup"
expect_rc 2 "$aup"
grep -q "^Commands:" "$tmp/err" || fail "bare aup prints the help: $(cat "$tmp/err")"
expect_rc 2 "$aup" frobnicate
grep -q "no command \`frobnicate\` (the commands: check, build, disasm, run, replay" "$tmp/err" ||
  fail "an unknown command is named with the commands: $(cat "$tmp/err")"
expect_rc 2 "$aup" chek "$root/examples/bank/bank.aup"
grep -q "no command \`chek\`; did you mean \`check\`?" "$tmp/err" || fail "a misspelt command: $(cat "$tmp/err")"

# A compiled module is not source: one message, not an error per byte.
expect_rc 0 "$aup" build "$root/examples/bank/bank.aup" -o "$tmp/bank.aupm"
expect_rc 2 "$aup" check "$tmp/bank.aupm"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "check on a module file says one line: $(head -3 "$tmp/err")"
grep -q "bank.aupm is a compiled module" "$tmp/err" || fail "check names a module file: $(cat "$tmp/err")"

# The README's tour shows exactly what aup check prints on the two tour
# examples: the lines after the command, up to the next command or the
# block's end.
for example in mistake counter; do
  [ -f "$root/examples/tour/$example.aup" ] || fail "the tour's examples/tour/$example.aup exists"
  (cd "$root" && NO_COLOR=1 "$aup" check "examples/tour/$example.aup") >"$tmp/tour" 2>&1
  awk -v cmd="\$ ./build/cli/aup check examples/tour/$example.aup" \
    '$0 == cmd {on=1; next} on && (/^\$ / || /^```/) {exit} on' "$root/README.md" >"$tmp/shown"
  [ -s "$tmp/shown" ] || fail "README's tour runs aup check on examples/tour/$example.aup"
  cmp -s "$tmp/tour" "$tmp/shown" ||
    fail "README's tour shows for $example.aup: $(cat "$tmp/shown"); aup check prints: $(cat "$tmp/tour")"
  grep -q "error" "$tmp/tour" || fail "examples/tour/$example.aup has an error to show"
done

# JSON has no colors: --color with --json would be ignored, so it is refused.
expect_rc 2 "$aup" check --json --color always "$tmp/bad.aup"
grep -q "^aup check: --.* and --.* cannot be given together" "$tmp/err" || fail "--json with --color: $(cat "$tmp/err")"
# Several files: the worst status wins.
expect_rc 1 "$aup" check "$root/examples/bank/bank.aup" "$tmp/bad.aup"
expect_rc 2 "$aup" check "$tmp/bad.aup" "$tmp/missing.aup"

# --max-errors shows the first N and counts the rest.
for i in 1 2 3 4 5; do printf 'fn f%s() { let x = y%s }\n' "$i" "$i"; done >"$tmp/many.aup"
expect_rc 1 "$aup" check --max-errors 2 "$tmp/many.aup"
[ "$(grep -c ': error:' "$tmp/err")" -eq 2 ] || fail "--max-errors 2 shows 2"
grep -q "and 3 more" "$tmp/err" || fail "--max-errors counts the rest"

expect_rc 0 "$aup" --help
grep -q "check" "$tmp/out" || fail "--help lists check"
expect_rc 0 "$aup" check --help
grep -q -- "--json" "$tmp/out" || fail "check --help lists --json"
expect_rc 0 "$aup" --version
grep -q "^aup [0-9]" "$tmp/out" || fail "--version"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli checks passed"
