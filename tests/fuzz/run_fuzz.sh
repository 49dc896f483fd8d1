#!/bin/sh
# Runs one fuzz target for a bounded time (a meson test of suite 'fuzz').
# Usage: run_fuzz.sh TARGET WORKDIR SECONDS DICT SEEDDIR...
#
# New inputs go to WORKDIR/corpus (kept between runs of this build
# directory, never into the seeds in the source tree); a crashing, leaking
# or slow input to WORKDIR/artifacts/. DICT is used when it exists. Exits
# 1 on any finding: libFuzzer's own status (77, its -error_exitcode) is
# what meson counts as a skipped test. libFuzzer's output is also
# kept in WORKDIR/fuzz.log, and its final figures in WORKDIR/stats (one
# line: seconds, executions, executions per second, new units, corpus
# inputs, coverage, features, status), which tools/fuzz.sh prints.
set -eu
target=$1 work=$2 seconds=$3 dict=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
rm -f "$work/stats" "$work/status"
# -reload=0: one process per corpus, so there is nothing to reread (it
# would list the corpus directory every second).
set -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 -reload=0 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$@"
[ -f "$dict" ] && set -- -dict="$dict" "$@"
# Any UB report is a crash (UBSan would carry on otherwise), and leaks count.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
symbolizer=/usr/lib/llvm-19/bin/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$symbolizer}"
{
  status=0
  "$target" "$@" 2>&1 || status=$?
  echo "$status" >"$work/status"
} | tee "$work/fuzz.log"
status=$(cat "$work/status")
# A figure libFuzzer did not print (a run that stopped at a finding) is "-".
or_dash() { read -r v || true; echo "${v:--}"; }
stat() { sed -n "s/^stat::$1: *//p" "$work/fuzz.log" | tail -n 1 | or_dash; }
done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/fuzz.log" | tail -n 1 || true)
field() { printf '%s\n' "$done_line" | sed -n "s/.* $1: \([0-9]*\).*/\1/p" | or_dash; }
echo "$seconds $(stat number_of_executed_units) $(stat average_exec_per_sec) $(stat new_units_added)" \
  "$(field corp) $(field cov) $(field ft) $status" >"$work/stats"
[ "$status" -eq 0 ] || exit 1
