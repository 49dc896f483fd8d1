#!/bin/sh
# `aupc`, the front end alone: `aupc check` and `aupc build` answer as `aup
# check` and `aup build` do (the same output, module files and exit codes),
# its own help and errors, and it links neither LLVM nor the runtime or the
# store.
# Usage: aupc_cli_test.sh AUPC AUP SOURCE_ROOT
set -u
aupc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
aup=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
root=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME CMD...: CMD's stdout, stderr and exit status in $tmp/NAME.{out,err,rc}.
run() {
  name=$1; shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}

# same WHAT: aupc's and aup's output and status for WHAT are the same.
same() {
  for part in out err rc; do
    cmp -s "$tmp/aupc.$part" "$tmp/aup.$part" ||
      fail "$1: aupc's $part differs from aup's: $(cat "$tmp/aupc.$part") / $(cat "$tmp/aup.$part")"
  done
}

bank=examples/bank/bank.aup
printf 'record R { id: num }\ntable t: R key idd\n' >"$tmp/bad.aup"

# check: a good file, a bad one, both at once, as JSON; run from the source
# root so the paths printed are the same.
cd "$root" || exit 1
for args in "$bank" "--color never $tmp/bad.aup" "--json $tmp/bad.aup" "-q $bank $tmp/bad.aup" \
            "--max-errors 1 --color never $tmp/bad.aup"; do
  # shellcheck disable=SC2086
  run aupc "$aupc" check $args
  # shellcheck disable=SC2086
  run aup "$aup" check $args
  same "check $args"
done
[ "$(cat "$tmp/aupc.rc")" -eq 1 ] || fail "aupc check on a file with errors exits 1"
run aupc "$aupc" check "$bank"
[ "$(cat "$tmp/aupc.rc")" -eq 0 ] || fail "aupc check on bank.aup exits 0"
grep -q "bank.aup: ok (" "$tmp/aupc.out" || fail "aupc check prints the ok line: $(cat "$tmp/aupc.out")"
run aupc "$aupc" check "$tmp/missing.aup"
[ "$(cat "$tmp/aupc.rc")" -eq 2 ] || fail "aupc check on a missing file exits 2"
grep -q "^aupc: cannot open" "$tmp/aupc.err" || fail "aupc names itself: $(cat "$tmp/aupc.err")"

# build: the same module file, byte for byte, and the same line.
run aupc "$aupc" build "$bank" -o "$tmp/c.aupm"
run aup "$aup" build "$bank" -o "$tmp/a.aupm"
[ "$(cat "$tmp/aupc.rc")" -eq 0 ] || fail "aupc build exits 0: $(cat "$tmp/aupc.err")"
cmp -s "$tmp/c.aupm" "$tmp/a.aupm" || fail "aupc build writes the module aup build writes"
sed "s|$tmp/c.aupm|M|" "$tmp/aupc.out" >"$tmp/c.line"
sed "s|$tmp/a.aupm|M|" "$tmp/aup.out" >"$tmp/a.line"
cmp -s "$tmp/c.line" "$tmp/a.line" || fail "aupc build says what aup build says: $(cat "$tmp/aupc.out")"
grep -q "^wrote $tmp/c.aupm (2 tables, " "$tmp/aupc.out" || fail "aupc build's line: $(cat "$tmp/aupc.out")"
# The module runs.
echo '{"query":"balance","args":{"id":1}}' | "$aup" run "$tmp/c.aupm" --memory >"$tmp/run.out" 2>&1
grep -q '"code":"not_found"' "$tmp/run.out" || fail "aup runs aupc's module: $(cat "$tmp/run.out")"
# The default output is beside the source.
cp "$bank" "$tmp/b.aup"
run aupc "$aupc" build "$tmp/b.aup"
[ -s "$tmp/b.aupm" ] || fail "aupc build writes FILE.aupm by default"
for args in "$tmp/bad.aup -o $tmp/x.aupm" "$tmp/missing.aup" "$tmp/c.aupm" "$bank -o $tmp/no/such/dir/m.aupm"; do
  # shellcheck disable=SC2086
  run aupc "$aupc" build $args
  # shellcheck disable=SC2086
  run aup "$aup" build $args
  cmp -s "$tmp/aupc.rc" "$tmp/aup.rc" || fail "build $args: aupc exits $(cat "$tmp/aupc.rc"), aup $(cat "$tmp/aup.rc")"
  sed 's/^aup /aupc /; s/^aup: /aupc: /' "$tmp/aup.err" >"$tmp/aup.err.as-aupc"
  cmp -s "$tmp/aupc.err" "$tmp/aup.err.as-aupc" || fail "build $args: aupc says $(cat "$tmp/aupc.err")"
done
[ -e "$tmp/x.aupm" ] && fail "a module with errors writes no file"
run aupc "$aupc" build "$tmp/bad.aup" -o "$tmp/x.aupm"
[ "$(cat "$tmp/aupc.rc")" -eq 1 ] || fail "aupc build of a file with errors exits 1"
run aupc "$aupc" build "$tmp/c.aupm"
[ "$(cat "$tmp/aupc.rc")" -eq 2 ] || fail "aupc build of a non-.aup file exits 2"
grep -q "^aupc build: expected an .aup source file" "$tmp/aupc.err" || fail "aupc build names itself: $(cat "$tmp/aupc.err")"

# Its own help, version and errors.
run aupc "$aupc"
[ "$(cat "$tmp/aupc.rc")" -eq 2 ] || fail "bare aupc exits 2"
grep -q "^Commands:" "$tmp/aupc.err" && grep -q "check" "$tmp/aupc.err" && grep -q "build" "$tmp/aupc.err" ||
  fail "bare aupc prints the help: $(cat "$tmp/aupc.err")"
run aupc "$aupc" --help
[ "$(cat "$tmp/aupc.rc")" -eq 0 ] || fail "aupc --help exits 0"
grep -q "^Usage: aupc " "$tmp/aupc.out" || fail "aupc --help names aupc: $(head -3 "$tmp/aupc.out")"
grep -q "^  check" "$tmp/aupc.out" && grep -q "^  build" "$tmp/aupc.out" ||
  fail "aupc --help lists check and build: $(cat "$tmp/aupc.out")"
grep -q "^  run" "$tmp/aupc.out" && fail "aupc --help lists no run"
run aupc "$aupc" build --help
grep -q -- "-o,--output" "$tmp/aupc.out" || fail "aupc build --help lists -o: $(cat "$tmp/aupc.out")"
run aupc "$aupc" --version
grep -q "^aupc [0-9]" "$tmp/aupc.out" || fail "aupc --version: $(cat "$tmp/aupc.out")"
run aupc "$aupc" frobnicate
[ "$(cat "$tmp/aupc.rc")" -eq 2 ] || fail "aupc frobnicate exits 2"
grep -q "^aupc: no command \`frobnicate\` (the commands: check, build; \`aupc --help\` says more)$" "$tmp/aupc.err" ||
  fail "an unknown aupc command: $(cat "$tmp/aupc.err")"
run aupc "$aupc" biuld "$bank"
grep -q "no command \`biuld\`; did you mean \`build\`?" "$tmp/aupc.err" || fail "a misspelt aupc command: $(cat "$tmp/aupc.err")"
run aupc "$aupc" run "$tmp/c.aupm"
[ "$(cat "$tmp/aupc.rc")" -eq 2 ] || fail "aupc run exits 2 (aupc does not run modules)"

# The front end alone: no LLVM, no runtime, no store in the executable.
if command -v ldd >/dev/null; then
  ldd "$aupc" | grep -qi llvm && fail "aupc links LLVM: $(ldd "$aupc" | grep -i llvm)"
fi
if command -v nm >/dev/null; then
  nm -C --defined-only "$aupc" >"$tmp/symbols" || fail "nm $aupc"
  grep -q "aup::run_check" "$tmp/symbols" || fail "nm sees aupc's own symbols"
  grep -E "aup::(runtime|storage)::|llvm::" "$tmp/symbols" | head -3 >"$tmp/foreign"
  [ -s "$tmp/foreign" ] && fail "aupc holds runtime, storage or LLVM code: $(cat "$tmp/foreign")"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all aupc checks passed"
