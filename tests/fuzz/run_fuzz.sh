#!/bin/sh
# Runs one fuzz target for a bounded time (a meson test of suite 'fuzz').
# Usage: run_fuzz.sh TARGET WORKDIR SECONDS DICT SEEDDIR...
#
# New inputs go to WORKDIR/corpus (kept between runs of this build
# directory, never into the seeds in the source tree); a crashing, leaking
# or slow input to WORKDIR/artifacts/. DICT is used when it exists. Exits
# non-zero on any finding (libFuzzer's status).
set -eu
target=$1 work=$2 seconds=$3 dict=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
set -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$@"
[ -f "$dict" ] && set -- -dict="$dict" "$@"
# Any UB report is a crash (UBSan would carry on otherwise), and leaks count.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
symbolizer=/usr/lib/llvm-19/bin/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$symbolizer}"
exec "$target" "$@"
