#!/bin/sh
# `aup build`, `aup disasm` and `aup run` as a user meets them: exit codes,
# damaged module files refused by name, the line limit, end of input without
# a newline, SIGTERM, and a closed stdout.
# Usage: run_cli_test.sh AUP SOURCE_ROOT
set -u
aup=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some steps run elsewhere
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# This test checks the default engine itself: an AUP_ENGINE from the
# caller's environment would stand in for --engine.
unset AUP_ENGINE
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_rc() {
  want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  got=$?
  [ "$got" -eq "$want" ] || fail "$* exited $got, expected $want: $(cat "$tmp/err")"
}

bank=$root/examples/bank/bank.aup
expect_rc 0 "$aup" build "$bank" -o "$tmp/bank.aupm"
grep -q "wrote $tmp/bank.aupm" "$tmp/out" || fail "build says what it wrote"
[ -s "$tmp/bank.aupm" ] || fail "build writes the module"
printf 'record R { id: num }\ntable t: R key nope\n' >"$tmp/bad.aup"
expect_rc 1 "$aup" build "$tmp/bad.aup"
grep -q "no field \`nope\`" "$tmp/err" || fail "build prints the diagnostics"
[ -e "$tmp/bad.aupm" ] && fail "a failed build writes nothing"
expect_rc 2 "$aup" build "$tmp/missing.aup"
expect_rc 2 "$aup" build "$tmp/bank.aupm"

expect_rc 0 "$aup" disasm "$tmp/bank.aupm"
grep -q "TGET" "$tmp/out" || fail "disasm lists instructions"
grep -q "^on transfer" "$tmp/out" || fail "disasm names the handlers"
grep -q "^table accounts: Account key id" "$tmp/out" || fail "disasm shows the schema"
expect_rc 0 "$aup" disasm "$bank"
# The LLVM IR --engine jit runs: one function, optimized or as translated.
expect_rc 0 "$aup" disasm --ir --function transfer "$tmp/bank.aupm"
grep -q "^define .*@\"\{0,1\}aup\.[0-9]*\.transfer" "$tmp/out" || fail "disasm --ir defines the function"
grep -q "aup_tget" "$tmp/out" || fail "disasm --ir shows the table calls"
grep -q "aup_fail_at" "$tmp/out" || fail "disasm --ir shows the failure path"
grep -q "^define .*deposit" "$tmp/out" && fail "disasm --ir --function prints only that function"
expect_rc 0 "$aup" disasm --ir --unoptimized --function transfer "$bank"
grep -q "alloca i64" "$tmp/out" || fail "disasm --ir --unoptimized shows the register slots"
expect_rc 2 "$aup" disasm --ir --function nosuch "$bank"
grep -q "no function named \`nosuch\`" "$tmp/err" || fail "disasm --ir names a missing function"

# Both engines answer alike; --stats says what compiling took; a wrong
# engine is a usage error.
"$aup" run "$bank" --memory --fixed-time 1 --engine vm <"$root/examples/bank/demo.ndjson" >"$tmp/vm" || fail "run --engine vm"
"$aup" run "$bank" --memory --fixed-time 1 --engine jit --stats <"$root/examples/bank/demo.ndjson" >"$tmp/jit" \
  2>"$tmp/jit.err" || fail "run --engine jit"
cmp -s "$tmp/vm" "$tmp/jit" || fail "--engine vm and jit answer alike"
grep -q '^aup: jit {"functions":[0-9]*,.*"compile_ms":' "$tmp/jit.err" || fail "--stats prints the compile time"
expect_rc 2 "$aup" run "$bank" --memory --engine llvm
grep -q "engine" "$tmp/err" || fail "a wrong --engine is named"
"$aup" run --help | grep -q -- "--engine" || fail "run --help lists --engine"
# The JIT is a module loaded on demand (vm/jit/loader.cpp): a library that
# is not one is refused by name, and commands without --engine jit never
# load LLVM.
libm=$(ldd "$aup" | sed -n 's/.*libm\.so\.6 => \([^ ]*\).*/\1/p')
[ -n "$libm" ] || fail "found no libm to stand in for a wrong JIT module: $(ldd "$aup")"
AUP_JIT_LIB=$libm "$aup" run "$bank" --memory --engine jit </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "a library that is not the JIT module: exit 2"
grep -q "is not a JIT module of this aup" "$tmp/err" || fail "a wrong JIT module is named: $(cat "$tmp/err")"
ldd "$aup" | grep -q libLLVM && fail "aup links libLLVM (it should load it only for --engine jit)"
# ...and by default, a JIT that cannot load leaves the run on the VM, saying so.
AUP_JIT_LIB=$libm "$aup" run "$bank" --memory --fixed-time 1 <"$root/examples/bank/demo.ndjson" >"$tmp/out" 2>"$tmp/err" \
  || fail "the default engine without a JIT module: exit 0"
grep -q "^aup: running on the VM: .*is not a JIT module" "$tmp/err" || fail "the fallback to the VM is said: $(cat "$tmp/err")"
cmp -s "$tmp/out" "$tmp/vm" || fail "the fallback answers as the VM"

# That LLVM's pages are given back after linking: tests/cli/llvm_pages_test.sh
# (alone, since pages other processes map cannot be given back).

# The object cache (vm/jit/cache.h): a miss compiles and stores, a hit
# compiles nothing, both answer as the VM; a damaged object is a miss and
# is rewritten; a cache that cannot be written, or none, still runs.
cache=$tmp/jit-cache
run_cached() {
  AUP_JIT_CACHE=$1 "$aup" run "$bank" --memory --fixed-time 1 --stats <"$root/examples/bank/demo.ndjson" \
    >"$tmp/out" 2>"$tmp/err" || fail "run with AUP_JIT_CACHE=$1"
  cmp -s "$tmp/out" "$tmp/vm" || fail "AUP_JIT_CACHE=$1 answers as the VM"
  sed -n 's/^aup: jit {.*"cache":"\([a-z]*\)".*/\1/p' "$tmp/err"
}
[ "$(run_cached "$cache")" = miss ] || fail "the first run of a module is a cache miss"
[ "$(run_cached "$cache")" = hit ] || fail "the second run of a module is a cache hit"
[ "$(ls "$cache" | wc -l)" -eq 1 ] || fail "one object per module: $(ls "$cache")"
obj=$(ls "$cache"/*.o)
printf 'X' | dd of="$obj" bs=1 seek=100 conv=notrunc 2>/dev/null
[ "$(run_cached "$cache")" = miss ] || fail "a damaged object is a miss"
[ "$(run_cached "$cache")" = hit ] || fail "the damaged object was rewritten"
[ "$(run_cached off)" = off ] || fail "AUP_JIT_CACHE=off: no cache"
: >"$tmp/plain-file"
[ "$(run_cached "$tmp/plain-file/jit")" = unwritable ] || fail "an unwritable cache is reported, and the run goes on"

# The default engine is the JIT; a module past 20,000 instructions stays on
# the VM by default (LLVM would take seconds), and --engine jit compiles it.
AUP_JIT_CACHE=off "$aup" run "$bank" --memory --stats </dev/null 2>"$tmp/err" >/dev/null
grep -q '^aup: jit {' "$tmp/err" || fail "the default engine is jit"
AUP_JIT_CACHE=off AUP_ENGINE=vm "$aup" run "$bank" --memory --stats </dev/null 2>"$tmp/err" >/dev/null
grep -q '^aup: jit {' "$tmp/err" && fail "AUP_ENGINE=vm picks the VM"
AUP_JIT_CACHE=off AUP_ENGINE=vm "$aup" run "$bank" --memory --stats --engine jit </dev/null 2>"$tmp/err" >/dev/null
grep -q '^aup: jit {' "$tmp/err" || fail "--engine wins over AUP_ENGINE"
AUP_ENGINE=llvm "$aup" run "$bank" --memory </dev/null >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "a wrong AUP_ENGINE is a usage error"
grep -q "AUP_ENGINE=llvm: expected vm or jit" "$tmp/err" || fail "a wrong AUP_ENGINE is named"
{
  echo 'event go { n: num }'
  echo 'on go {'
  echo '  let x = go.n'
  i=0
  while [ $i -lt 7000 ]; do echo '  x = x * 3 + 1'; i=$((i + 1)); done
  echo '  return x'
  echo '}'
} >"$tmp/big.aup"
echo '{"event":"go","args":{"n":1},"id":1}' >"$tmp/big.in"
AUP_JIT_CACHE=off "$aup" run "$tmp/big.aup" --memory --stats <"$tmp/big.in" >"$tmp/big.vm" 2>"$tmp/err" || fail "a big module runs"
grep -q "instructions: on the VM (the default engine compiles up to 20000" "$tmp/err" || fail "a big module stays on the VM by default: $(cat "$tmp/err")"
grep -q '^aup: jit {' "$tmp/err" && fail "a big module is not compiled by default"

# The same answers from the module file and from the source.
"$aup" run "$tmp/bank.aupm" --memory --fixed-time 1 <"$root/examples/bank/demo.ndjson" >"$tmp/a" || fail "run .aupm"
"$aup" run "$bank" --memory --fixed-time 1 <"$root/examples/bank/demo.ndjson" >"$tmp/b" || fail "run .aup"
cmp -s "$tmp/a" "$tmp/b" || fail ".aupm and .aup answer alike"
[ "$(wc -l <"$tmp/a")" -eq "$(wc -l <"$root/examples/bank/demo.ndjson")" ] || fail "one response per request"

# Damaged module files: refused with a clear message and status 1.
size=$(wc -c <"$tmp/bank.aupm")
head -c $((size - 10)) "$tmp/bank.aupm" >"$tmp/short.aupm"
expect_rc 1 "$aup" run "$tmp/short.aupm" --memory
grep -q "truncated" "$tmp/err" || fail "truncated module: $(cat "$tmp/err")"
cp "$tmp/bank.aupm" "$tmp/flip.aupm"
printf '\377' | dd of="$tmp/flip.aupm" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_rc 1 "$aup" run "$tmp/flip.aupm" --memory
grep -q "damaged: the checksum does not match" "$tmp/err" || fail "flipped byte: $(cat "$tmp/err")"
cp "$tmp/bank.aupm" "$tmp/new.aupm"
printf '\011' | dd of="$tmp/new.aupm" bs=1 seek=4 conv=notrunc 2>/dev/null
expect_rc 1 "$aup" run "$tmp/new.aupm" --memory
grep -q "built by a newer aup: module format 9" "$tmp/err" || fail "newer module: $(cat "$tmp/err")"
expect_rc 1 "$aup" run "$tmp/bad.aup" --memory
expect_rc 2 "$aup" run "$tmp/missing.aupm" --memory

# The line limit: a long line is answered and skipped; the next one works.
python3 -c "
import sys
sys.stdout.write('{\"query\":\"total\",\"id\":\"' + 'x' * 5000 + '\"}\n')
sys.stdout.write('{\"query\":\"total\",\"id\":2}\n')" >"$tmp/long.ndjson"
"$aup" run "$bank" --memory --max-line 1000 <"$tmp/long.ndjson" >"$tmp/out" || fail "run with a long line"
sed -n 1p "$tmp/out" | grep -q '"code":"bad_request","message":"line longer than 1000 bytes"' || fail "long line answered: $(cat "$tmp/out")"
sed -n 2p "$tmp/out" | grep -q '"id":2,"ok":true' || fail "the next line works: $(cat "$tmp/out")"

# End of input without a final newline still gets its answer.
printf '{"query":"total","id":7}' | "$aup" run "$bank" --memory >"$tmp/out"
grep -q '"id":7,"ok":true' "$tmp/out" || fail "last line without newline"

# SIGTERM: the lines already read are answered, then exit 0.
mkfifo "$tmp/fifo"
"$aup" run "$bank" --memory <"$tmp/fifo" >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
exec 3>"$tmp/fifo"
printf '{"event":"open","args":{"id":1,"owner":"a"},"id":1}\n' >&3
i=0
while [ ! -s "$tmp/sig.out" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -TERM $pid
wait $pid
rc=$?
exec 3>&-
[ "$rc" -eq 0 ] || fail "SIGTERM exits 0 (got $rc)"
grep -q '"id":1,"ok":true' "$tmp/sig.out" || fail "answered before SIGTERM"

# A closed stdout is reported, not silent.
python3 -c "
for i in range(200000): print('{\"query\":\"total\",\"id\":%d}' % i)" >"$tmp/many.ndjson"
( "$aup" run "$bank" --memory <"$tmp/many.ndjson" 2>"$tmp/err"; echo $? >"$tmp/rc" ) | head -1 >/dev/null
[ "$(cat "$tmp/rc")" -eq 2 ] || fail "closed stdout exits 2 (got $(cat "$tmp/rc"))"
grep -q "cannot write responses" "$tmp/err" || fail "closed stdout explained: $(cat "$tmp/err")"

expect_rc 0 "$aup" run --help
grep -q -- "--memory" "$tmp/out" || fail "run --help lists --memory"

# Flags that would be ignored together, and values that mean nothing, are
# refused (exit 2) rather than silently dropped.
expect_rc 2 "$aup" run "$bank" --memory --data "$tmp/nowhere"
grep -q "^aup run: --.* and --.* cannot be given together" "$tmp/err" || fail "--memory with --data: $(cat "$tmp/err")"
[ -e "$tmp/nowhere" ] && fail "--memory with --data made the store"
expect_rc 2 "$aup" run "$bank" --memory --fixed-time nan
grep -q "finite" "$tmp/err" || fail "--fixed-time nan: $(cat "$tmp/err")"
expect_rc 2 "$aup" run "$bank" --memory --fixed-time inf
expect_rc 2 "$aup" disasm --function transfer "$tmp/bank.aupm"
grep -q "^aup disasm: --function needs --ir" "$tmp/err" || fail "disasm --function without --ir: $(cat "$tmp/err")"
expect_rc 2 "$aup" disasm --unoptimized "$tmp/bank.aupm"
# A bad --listen address is refused before anything is made.
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$aup" run "$bank" --listen nope </dev/null >/dev/null 2>"$tmp/err"; echo $? >"$tmp/rc")
[ "$(cat "$tmp/rc")" -eq 2 ] || fail "--listen nope exits 2 (got $(cat "$tmp/rc"))"
grep -q "^aup run: --listen: " "$tmp/err" || fail "--listen nope says why: $(cat "$tmp/err")"
[ -e "$tmp/cwd/aup-data" ] && fail "--listen nope made ./aup-data before refusing"
# An HTTP address needs a port; --http-timeout means nothing without one.
expect_rc 2 "$aup" run "$bank" --memory --listen http://localhost
grep -q "^aup run: --listen: .*needs a port" "$tmp/err" || fail "--listen http:// without a port: $(cat "$tmp/err")"
expect_rc 2 "$aup" run "$bank" --memory --listen unix:"$tmp/x.sock" --http-timeout 5
grep -q "needs an HTTP address" "$tmp/err" || fail "--http-timeout without http://: $(cat "$tmp/err")"
# A query whose result is not finite says where the value was returned.
printf 'query q() {\n  let z = 0\n  return 1 / z\n}\n' >"$tmp/inf.aup"
echo '{"query":"q","args":{}}' | "$aup" run "$tmp/inf.aup" --memory >"$tmp/out" 2>"$tmp/err"
grep -qF '{"ok":false,"error":{"code":"not_finite","message":"cannot return inf (inf.aup:3:' "$tmp/out" ||
  fail "not_finite on a query result gives its position: $(cat "$tmp/out" "$tmp/err")"
# --data naming a regular file is the caller's mistake (2), not damage (1).
: >"$tmp/plain-file"
expect_rc 2 "$aup" run "$bank" --data "$tmp/plain-file"
grep -q "^aup run: --data $tmp/plain-file: not a directory" "$tmp/err" || fail "--data a file: $(cat "$tmp/err")"
# A time out of range means nothing either: past what a double holds
# (1e400 reads as infinity), or past 2^53 ms.
expect_rc 2 "$aup" run "$bank" --memory --fixed-time 1e400
expect_rc 2 "$aup" run "$bank" --memory --fixed-time 9007199254740994
grep -q "within ±2^53 ms" "$tmp/err" || fail "--fixed-time past 2^53: $(cat "$tmp/err")"
expect_rc 2 "$aup" run "$bank" --memory --fixed-time -1e300
echo '{"query":"total"}' | "$aup" run "$bank" --memory --fixed-time 9007199254740992 >"$tmp/out" 2>"$tmp/err" ||
  fail "--fixed-time 2^53 is a time: $(cat "$tmp/err")"
# The store's options mean nothing in memory; the serving limits nothing
# without --listen.
for flag in "--segment-size 65536" "--image-min 1" "--log-min 1"; do
  # shellcheck disable=SC2086
  expect_rc 2 "$aup" run "$bank" --memory $flag
  grep -q "cannot be given together" "$tmp/err" || fail "--memory with $flag: $(cat "$tmp/err")"
done
for flag in "--io-threads 1" "--max-connections 5" "--max-pending 5" "--max-output 65536"; do
  # shellcheck disable=SC2086
  expect_rc 2 "$aup" run "$bank" --memory $flag
  grep -q "^aup run: ${flag%% *} needs --listen" "$tmp/err" || fail "$flag without --listen: $(cat "$tmp/err")"
done

# Counts read as English: one table, one event, one function.
printf 'record R { id: num }\ntable t: R key id\nevent e { id: num }\non e { t.add(R { id: e.id }) }\n' >"$tmp/one.aup"
expect_rc 0 "$aup" build "$tmp/one.aup"
grep -q "^wrote $tmp/one.aupm (1 table, 1 event, 1 function, [0-9]* instructions)$" "$tmp/out" ||
  fail "build counts in English: $(cat "$tmp/out")"

# --help tells every option of run with its default.
expect_rc 0 "$aup" run --help
for pair in "--data:aup-data" "--memory:nothing survives" "--max-batch:default: all read together" \
            "--segment-size:default 64 MiB" "--image-min:default 1 MiB" "--log-min:default 64 MiB" \
            "--step-budget:default 10000000" "--max-line:default 16 MiB" "--listen:loopback" \
            "--io-threads:default: 0 when" "--max-connections:default 1024" "--max-pending:default 1024" \
            "--max-output:default 16 MiB" "--http-timeout:default 10" "--stats:none with --memory" "--engine:the default" \
            "--fixed-time:default: the clock"; do
  option=${pair%%:*}
  says=${pair#*:}
  # The option's text runs from its line to the next option's.
  awk -v o="$option" '$1 ~ "^"o"($|,)" {on=1; print; next} on && $1 ~ /^-/ {on=0} on' "$tmp/out" >"$tmp/opt"
  [ -s "$tmp/opt" ] || fail "run --help lists $option"
  grep -qF -- "$says" "$tmp/opt" || fail "run --help says \"$says\" for $option: $(cat "$tmp/opt")"
done
expect_rc 0 "$aup" disasm --help
for option in --ir --function --unoptimized; do grep -q -- "$option" "$tmp/out" || fail "disasm --help lists $option"; done
expect_rc 0 "$aup" build --help
grep -q "default: FILE.aupm" "$tmp/out" || fail "build --help says where the module goes: $(cat "$tmp/out")"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all run checks passed"
