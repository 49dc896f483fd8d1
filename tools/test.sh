#!/bin/sh
# Every test: install what is missing, build the normal and the sanitizer
# (ASan + UBSan) builds, run the whole suite in both. The sanitizer build's
# interpreter dispatches by switch, the normal one by computed goto, so the
# tests cover both. The sanitizer build leaves out the benchmarks but for
# TPC-C's generator and its run through aup (-Dbench=false, bench/meson.build):
# the normal build builds and runs them all. Then the fuzz build
# (tools/fuzz.sh: clang-19, libFuzzer) runs each fuzz target for 30 s. The last line is `N passed, N failed` over
# the three.
#
# Each build after the first compiles while the suite before it runs, at a
# lower priority (nice 10): the suites wait on fdatasync, sockets and child
# processes about half the time, and the compiler takes what they leave.
# A build's output goes to a file, printed if the build fails.
set -u
cd "$(dirname "$0")/.."
sh tools/deps.sh || exit 1
rm -f build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-fuzz/meson-logs/testlog.json
logs=$(mktemp -d "${TMPDIR:-/tmp}/aup-test-builds.XXXXXX")
trap 'rm -rf "$logs"' EXIT
# background NAME COMMAND...: runs COMMAND at nice 10, output in $logs/NAME.
background() {
  name=$1; shift
  echo "building $name in the background"
  nice -n 10 "$@" >"$logs/$name" 2>&1 &
  eval "${name}_pid=\$!"
}
# finish NAME: waits for it; on failure prints its output.
finish() {
  if eval "wait \$${1}_pid"; then return 0; fi
  echo "FAILED: building $1:"; tail -n 60 "$logs/$1"
  return 1
}
status=0
sh tools/build.sh build || status=1
background asan sh tools/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbuildtype=debug -Doptimization=1 -Dvm_dispatch=switch -Dbench=false
if [ "$status" -eq 0 ]; then
  meson test -C build --print-errorlogs --num-processes "$(nproc)" || status=1
fi
asan_ok=1
finish asan || { status=1; asan_ok=0; }
background fuzz sh tools/fuzz.sh --seconds 30 --build
if [ "$asan_ok" -eq 1 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes "$(nproc)" || status=1
fi
if finish fuzz; then
  sh tools/fuzz.sh --seconds 30 || status=1
else
  status=1
fi
python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-fuzz/meson-logs/testlog.json <<'PY'
import json, sys
ok = bad = 0
for path in sys.argv[1:]:
    try:
        results = [json.loads(l)["result"] for l in open(path) if l.strip()]
    except OSError:
        results = ["ERROR"]  # a build that failed ran no test: count it
    ok += sum(r in ("OK", "EXPECTEDFAIL") for r in results)
    bad += sum(r in ("FAIL", "UNEXPECTEDPASS", "TIMEOUT", "ERROR") for r in results)
print(f"{ok} passed, {bad} failed")
PY
exit $status
