#!/bin/sh
# `retention` as a user meets it: byte-exact outputs across policies, the
# failures (truncated input, invalid range, budget too small, a full disk,
# usage) with their messages and exit codes, a clean stop on SIGTERM, the
# VmHWM check of a retained source. (retention_bench_test.sh runs the
# quick bench.)
# Usage: retention_cli_test.sh RETENTION SANITIZE(none|address,...)
# No check depends on how long anything takes; waits are bounded loops.
set -u
exe=$1
sanitize=$2
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
expect_err() { grep -q -- "$1" "$tmp/err" || fail "stderr lacks '$1': $(cat "$tmp/err")"; }

policies="borrow copy threshold2 threshold4 threshold8 pressure project copy_no_pool"

# Byte-exact outputs: every policy, two shapes, against the generator's own
# expected output.
for shape in small mixed; do
  expect_rc 0 "$exe" gen --shape $shape --records 40 --out "$tmp/$shape.fx" --expect "$tmp/$shape.expected"
  grep -q "output_hash=" "$tmp/out" || fail "gen prints the hashes"
  for p in $policies; do
    expect_rc 0 "$exe" run --input "$tmp/$shape.fx" --output "$tmp/$shape.$p.out" --policy $p \
      --budget 2MiB --queue 16 --hold-us 200 --gap-us 10 --stats "$tmp/stats"
    cmp -s "$tmp/$shape.$p.out" "$tmp/$shape.expected" || fail "$shape/$p output differs from the expected bytes"
    grep -q "reclaimed=1" "$tmp/stats" || fail "$shape/$p: buffers not reclaimed: $(cat "$tmp/stats")"
  done
done

# Truncated input.
size=$(wc -c <"$tmp/small.fx")
head -c $((size - 100)) "$tmp/small.fx" >"$tmp/cut.fx"
expect_rc 1 "$exe" run --input "$tmp/cut.fx" --output "$tmp/o" --policy copy --hold-us 0 --gap-us 0
expect_err "record 39: truncated input"

# Invalid range: record 0's select_offset (bytes 32..35) set to 0xffffff00.
cp "$tmp/small.fx" "$tmp/range.fx"
printf '\000\377\377\377' | dd of="$tmp/range.fx" bs=1 seek=32 conv=notrunc 2>/dev/null
expect_rc 1 "$exe" run --input "$tmp/range.fx" --output "$tmp/o" --policy borrow
expect_err "record 0: invalid range"

# Budget too small: a 64 KiB record cannot fit in 32 KiB.
expect_rc 1 "$exe" run --input "$tmp/small.fx" --output "$tmp/o" --policy borrow --budget 32KiB
expect_err "budget too small: record 0 needs a 65536-byte buffer"

# Output failure.
expect_rc 1 "$exe" run --input "$tmp/small.fx" --output /dev/full --policy copy --hold-us 0
expect_err "cannot write output (record 0): No space left on device"

# Missing input.
expect_rc 1 "$exe" run --input "$tmp/none.fx" --output "$tmp/o" --policy copy
expect_err "cannot open"

# Usage errors exit 2.
expect_rc 2 "$exe" run --input "$tmp/small.fx" --output "$tmp/o" --policy share
expect_err "unknown policy"
expect_rc 2 "$exe" run --input "$tmp/small.fx" --policy copy
expect_rc 2 "$exe" run --input "$tmp/small.fx" --output "$tmp/o" --policy copy --budget lots
expect_rc 2 "$exe" bench --reps 0
expect_rc 2 "$exe" frobnicate
expect_rc 0 "$exe" --help

# SIGTERM: the first output goes at once, the second would wait an hour.
# The run blocks its stop signals before it creates its output file, so
# once the first frame is there a SIGTERM must end it with 143, whole
# frames only, every buffer reclaimed. (/proc's SigBlk cannot show this:
# sigtimedwait unblocks the signals it waits for while it waits.)
"$exe" run --input "$tmp/small.fx" --output "$tmp/term.out" --policy borrow --hold-us 0 \
  --gap-us 3600000000 --stats "$tmp/term.stats" 2>"$tmp/term.err" &
pid=$!
ready=no
i=0
while [ $i -lt 1000 ]; do
  if [ -s "$tmp/term.out" ]; then ready=yes; break; fi
  sleep 0.01
  i=$((i + 1))
done
[ $ready = yes ] || fail "the run never wrote its first output"
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit $rc, expected 143: $(cat "$tmp/term.err")"
grep -q "stopped by SIGTERM after .* and 1 outputs written; all buffers reclaimed" "$tmp/term.err" \
  || fail "SIGTERM message: $(cat "$tmp/term.err")"
grep -q "interrupted=1" "$tmp/term.stats" || fail "SIGTERM stats: $(cat "$tmp/term.stats")"
grep -q "reclaimed=1" "$tmp/term.stats" || fail "SIGTERM stats: $(cat "$tmp/term.stats")"
[ "$(wc -c <"$tmp/term.out")" -eq 72 ] || fail "SIGTERM: the output is not exactly one whole frame"
cmp -s -n 72 "$tmp/term.out" "$tmp/small.expected" || fail "SIGTERM: the one frame differs"

# The RSS check: a large source kept alive must show in VmHWM,
# not only in the managed bytes. 64 records fill the 64-slot queue well
# inside the 200 ms hold, so borrow holds 4 MiB at once; copy holds 64 B
# selections. Sanitizers reserve and quarantine memory of their own, so
# the check is for the plain build.
if [ "$sanitize" = none ]; then
  "$exe" gen --shape small --records 64 --out "$tmp/rss.fx" >/dev/null
  for p in borrow copy; do
    expect_rc 0 "$exe" run --input "$tmp/rss.fx" --output "$tmp/o" --policy $p --queue 64 \
      --hold-us 200000 --gap-us 0 --stats "$tmp/$p.stats"
  done
  hwm() { tr ' ' '\n' <"$1" | sed -n 's/^vm_hwm_kib=//p'; }
  b=$(hwm "$tmp/borrow.stats")
  c=$(hwm "$tmp/copy.stats")
  [ $((b - c)) -ge 2048 ] || fail "VmHWM: borrow $b kB is not 2 MiB above copy $c kB"
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
