#!/bin/sh
# Builds the fuzz build (build-fuzz: clang-19, libFuzzer, ASan + UBSan,
# -Dfuzz=true: the libraries and tests/fuzz only) and runs every fuzz
# target over its seeds for a bounded time, as the meson tests of suite
# 'fuzz' (two at a time on two cores). Any crash, leak, failed oracle or
# slow input fails its test; the input is kept under
# build-fuzz/tests/fuzz/work/NAME/artifacts/.
# Usage: tools/fuzz.sh [--seconds N]   (per target; default 45)
set -eu
seconds=45
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: tools/fuzz.sh [--seconds N]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
sh tools/deps.sh
rm -f build-fuzz/meson-logs/testlog.json
CC=clang-19 CXX=clang++-19 sh tools/build.sh build-fuzz -Dfuzz=true -Dfuzz_seconds="$seconds" \
  -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Doptimization=1
meson test -C build-fuzz --suite fuzz --print-errorlogs --num-processes "$(nproc)"
