#!/bin/sh
# Builds the fuzz build (build-fuzz: clang-19, libFuzzer, ASan + UBSan,
# -Dfuzz=true: the libraries and tests/fuzz only) and runs every fuzz
# target over its seeds for N seconds each, as the meson tests of suite
# 'fuzz', as many at a time as there are cores (two here). Any crash, leak,
# failed oracle or slow input fails its test; the input is kept under
# build-fuzz/tests/fuzz/work/NAME/artifacts/. At the end it prints each
# target's figures (executions, executions per second, new units, corpus),
# and with --report FILE appends them there too, with the date, the
# commit and the machine's load.
#
# The inputs a run finds stay in build-fuzz/tests/fuzz/work/NAME/corpus and
# the next run starts from them, so runs add up. --merge folds them into
# the seeds (tests/fuzz/corpus/NAME) with a libFuzzer merge: the named seeds
# stay, and of the rest only inputs that add coverage are kept
# (tests/fuzz/merge_corpus.sh).
# docs/reliability.md ("Fuzzing") says how to run hours of it.
#
# Usage: tools/fuzz.sh [--seconds N] [--only NAME,...] [--report FILE]
#        tools/fuzz.sh --merge [--only NAME,...]
# (per target; default 45 s; NAME: source, request, http, module, log, image)
set -eu
seconds=45 only="" report="" merge=0
usage() {
  echo "usage: tools/fuzz.sh [--seconds N] [--only NAME,...] [--report FILE] | --merge [--only NAME,...]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) [ $# -ge 2 ] || usage; seconds=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; only=$(echo "$2" | tr ',' ' '); shift 2 ;;
    --report) [ $# -ge 2 ] || usage; report=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    *) usage ;;
  esac
done
case $seconds in '' | *[!0-9]*) usage ;; esac
all="source request http module log image"
for name in $only; do
  case " $all " in *" $name "*) ;; *) echo "tools/fuzz.sh: no fuzz target '$name' (there are: $all)" >&2; exit 2 ;; esac
done
targets=${only:-$all}
cd "$(dirname "$0")/.."
if [ -n "$report" ]; then
  case $report in /*) ;; *) report="$PWD/$report" ;; esac
fi
sh tools/deps.sh
work=build-fuzz/tests/fuzz/work
if [ "$merge" -eq 1 ] && [ -d build-fuzz ]; then
  # The targets as they are (no reconfigure: that would reset fuzz_seconds).
  ninja -C build-fuzz -j"$(nproc)" >/dev/null
else
  CC=clang-19 CXX=clang++-19 sh tools/build.sh build-fuzz -Dfuzz=true -Dfuzz_seconds="$seconds" -Dunity=on \
    -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1
fi
if [ "$merge" -eq 1 ]; then
  exec sh tests/fuzz/merge_corpus.sh build-fuzz/tests/fuzz "$work" tests/fuzz/corpus $targets
fi

rm -f build-fuzz/meson-logs/testlog.json
for name in $targets; do rm -f "$work/$name/stats"; done
tests=""
for name in $targets; do tests="$tests fuzz/$name"; done
status=0
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# shellcheck disable=SC2086
meson test -C build-fuzz --suite fuzz --print-errorlogs --num-processes "$(nproc)" $tests || status=$?

# Each target's figures (tests/fuzz/run_fuzz.sh writes them).
table=$(
  printf '%-8s %8s %12s %10s %10s %8s %8s %8s  %s\n' target seconds executions "execs/s" "new units" corpus cov ft result
  for name in $targets; do
    if [ -f "$work/$name/stats" ]; then
      read -r secs execs rate new corp cov ft st <"$work/$name/stats"
      [ "$st" = 0 ] && result=ok || result="FAILED (status $st; input in $work/$name/artifacts/)"
    else
      secs=- execs=- rate=- new=- corp=- cov=- ft=- result="did not run"
    fi
    printf '%-8s %8s %12s %10s %10s %8s %8s %8s  %s\n' "$name" "$secs" "$execs" "$rate" "$new" "$corp" "$cov" "$ft" "$result"
  done
)
echo "$table"
if [ -n "$report" ]; then
  {
    echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')," \
      "$(nproc) cores, load average at the start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "$table"
  } >>"$report"
fi
exit "$status"
