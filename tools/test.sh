#!/bin/sh
# Every test: install what is missing, build the normal (gcc) and the
# sanitizer (clang-19, ASan + UBSan) builds, run the whole suite in both.
# Two compilers, so each one's warnings hold. The sanitizer build's
# interpreter dispatches by switch, the normal one by computed goto, so the
# tests cover both. The sanitizer build leaves out the benchmarks but for
# TPC-C's generator and its run through aup (-Dbench=false, bench/meson.build):
# the normal build builds and runs them all. Then the fuzz build
# (tools/fuzz.sh: clang-19, libFuzzer) runs each fuzz target for 10 s. The
# last line is `N passed, N failed` over the three.
#
# The builds here are unity builds (-Dunity=on: meson compiles each
# target's sources four to a file): the header parsing each file repeated
# is done once a group. The normal build took 392 s of CPU so, against 741 s
# one file at a time (docs/reliability.md has both runs; the machine was
# slower during the second). Editing one file recompiles its group, so
# day-to-day builds leave it off.
#
# The sanitizer build was gcc's. clang compiles it faster (in one run, the
# sanitized storage/log.cpp took 4.7 s with clang, libFuzzer's
# instrumentation included, and 13.9 s with gcc), and its aup is smaller
# (gcc's ASan gave aup 31 MB of data, read at each of the suites' thousands
# of process starts). A build directory made by the other compiler is made
# afresh.
#
# One step at a time: compiling the next build (at nice 10) while a suite
# ran was tried, and saved little: the suites keep both cores busy, so a
# suite took about as much longer as the build gained (the normal suite
# 491 s instead of 373 s, while a third of the sanitizer build got done).
set -u
cd "$(dirname "$0")/.."
sh tools/deps.sh || exit 1
rm -f build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-fuzz/meson-logs/testlog.json
status=0
sh tools/build.sh build -Dunity=on || status=1
if [ "$status" -eq 0 ]; then
  meson test -C build --print-errorlogs --num-processes "$(nproc)" || status=1
fi
asan_ok=1
if [ -d build-asan ] && ! grep -q "clang++" build-asan/build.ninja 2>/dev/null; then
  rm -rf build-asan
fi
CC=clang-19 CXX=clang++-19 sh tools/build.sh build-asan -Dunity=on -Db_sanitize=address,undefined -Db_lundef=false \
  -Doptimization=1 -Dvm_dispatch=switch -Dbench=false || { status=1; asan_ok=0; }
if [ "$asan_ok" -eq 1 ]; then
  # use_tls=0: LeakSanitizer does not take thread-local storage as roots.
  # Scanning it crashed LeakSanitizer's own tracer at every exit of a process
  # that had JIT-compiled tests/programs/text_keys.aup ("Tracer caught signal
  # 11", 30 runs out of 30 with an empty JIT cache), so the run failed without
  # a report. Leaving TLS out can only add reports (a block that only a
  # thread-local holds would count as leaked), never hide one; the one such
  # block seen, the dynamic loader's, is suppressed by name (tools/lsan.supp).
  LSAN_OPTIONS=use_tls=0:suppressions=$(pwd)/tools/lsan.supp:print_suppressions=0 \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes "$(nproc)" || status=1
fi
sh tools/fuzz.sh --seconds 10 || status=1
python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-fuzz/meson-logs/testlog.json <<'PY'
import json, sys
ok = bad = 0
for path in sys.argv[1:]:
    try:
        results = [json.loads(l)["result"] for l in open(path) if l.strip()]
    except OSError:
        results = ["ERROR"]  # a build that failed ran no test: count it
    ok += sum(r in ("OK", "EXPECTEDFAIL") for r in results)
    # No test here skips by design, so a skip (exit 77 to meson) is a test
    # that ran nothing: counted failed, not left out of both counts.
    bad += sum(r in ("FAIL", "UNEXPECTEDPASS", "TIMEOUT", "ERROR", "SKIP") for r in results)
print(f"{ok} passed, {bad} failed")
PY
exit $status
