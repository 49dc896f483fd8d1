#!/bin/sh
# The quick bench end to end, as CI runs it: every condition and policy,
# each run in its own process, every output checked against the expected
# hash, the JSON and Markdown written, the command printed, the work
# directory removed. Checks that the bench works, never how fast.
# Usage: retention_bench_test.sh RETENTION SANITIZE(none|address,...)
set -u
exe=$1
sanitize=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Under the sanitizers each of the 96 runs would pay LeakSanitizer's exit
# scan (tens of ms); leaks in `run` are checked by retention_cli_test.sh and
# the pipeline unit tests, so the bench's own runs skip it.
if [ "$sanitize" != none ]; then
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  export ASAN_OPTIONS
fi

"$exe" bench --quick --records 32 --out-dir "$tmp/results" --work-dir "$tmp/work" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "bench --quick exited $rc: $(cat "$tmp/err")"
[ -s "$tmp/results/retention-quick.json" ] || fail "no retention-quick.json"
[ -s "$tmp/results/retention-quick.md" ] || fail "no retention-quick.md"
grep -q "produced by: cd .* bench --quick" "$tmp/out" || fail "bench prints the command: $(cat "$tmp/out")"
[ "$(grep -c "every run's output matched" "$tmp/results/retention-quick.md")" -eq 6 ] \
  || fail "quick bench: not every condition's outputs matched"
[ -e "$tmp/work" ] && fail "the work directory was not removed"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"]) == 48' \
    "$tmp/results/retention-quick.json" || fail "the JSON does not parse or lacks runs"
fi

# A stop signal ends the bench without results.
"$exe" bench --quick --records 32 --out-dir "$tmp/stopped" --work-dir "$tmp/work2" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ $i -lt 1000 ] && ! grep -q "fixtures in" "$tmp/err"; do sleep 0.01; i=$((i + 1)); done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || fail "bench on SIGTERM exited $rc: $(cat "$tmp/err")"
[ -e "$tmp/stopped/retention-quick.json" ] && fail "a stopped bench wrote results"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
