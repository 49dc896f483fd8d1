#!/bin/sh
# One golden test: builds NAME.aup to a module file, runs it in memory with
# NAME.in.ndjson on stdin (and the flags in NAME.flags, if any), and
# compares stdout with NAME.out.ndjson byte for byte. `now` is fixed so
# the output does not depend on the clock. AUP_ENGINE (vm or jit) picks the
# engine: every program runs under both, against the one expected output.
# Usage: run_golden.sh AUP DIR/NAME.aup [IN OUT]  (IN, OUT default to
# DIR/NAME.in.ndjson and DIR/NAME.out.ndjson)
set -u
aup=$1
src=$2
base=${src%.aup}
in=${3:-$base.in.ndjson}
want=${4:-$base.out.ndjson}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=""
[ -f "$base.flags" ] && flags=$(cat "$base.flags")
flags="$flags --engine ${AUP_ENGINE:-vm}"
"$aup" build "$src" -o "$tmp/m.aupm" >/dev/null || { echo "FAIL: $src does not build"; exit 1; }
# shellcheck disable=SC2086
"$aup" run "$tmp/m.aupm" --memory --fixed-time 1700000000000 $flags <"$in" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: aup run exited $rc"; cat "$tmp/err"; exit 1
fi
if ! diff -u "$want" "$tmp/out"; then
  echo "FAIL: $src: output differs from $want (- expected, + got)"
  exit 1
fi
echo "ok $src"
