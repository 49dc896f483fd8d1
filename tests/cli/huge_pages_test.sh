#!/bin/sh
# `aup run` restarts itself with glibc.malloc.hugetlb=1 in GLIBC_TUNABLES
# (cli/huge_pages.h): the same pid, reading the same stdin, its heap
# marked for huge pages; an operator's own glibc.malloc.hugetlb is kept,
# and other tunables with it.
# Usage: huge_pages_test.sh AUP SOURCE_ROOT
set -u
aup=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
bank=$root/examples/bank/bank.aup

# Starts `aup run` with GLIBC_TUNABLES=$1 ("-": unset), asks one query,
# and leaves the server's GLIBC_TUNABLES in $tmp/env, its heap's VmFlags
# in $tmp/heap and its answer in $tmp/out.
serve() {
  rm -f "$tmp/fifo" "$tmp/out" "$tmp/env" "$tmp/heap"
  mkfifo "$tmp/fifo"
  if [ "$1" = - ]; then
    env -u GLIBC_TUNABLES "$aup" run "$bank" --memory <"$tmp/fifo" >"$tmp/out" 2>"$tmp/err" &
  else
    GLIBC_TUNABLES=$1 "$aup" run "$bank" --memory <"$tmp/fifo" >"$tmp/out" 2>"$tmp/err" &
  fi
  pid=$!
  exec 4>"$tmp/fifo"
  printf '{"query":"total"}\n' >&4
  i=0
  while [ ! -s "$tmp/out" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  # The pid started is the server (a restart is an exec, not a child).
  tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^GLIBC_TUNABLES=//p' >"$tmp/env"
  # Named after its executable still (`ps`, `pgrep aup`), not "exe".
  [ "$(cat "/proc/$pid/comm")" = "$(basename "$aup")" ] || fail "the process is named $(cat "/proc/$pid/comm")"
  awk '/^[0-9a-f]+-[0-9a-f]+ /{heap = ($6 == "[heap]")} /^VmFlags:/{if (heap) print}' "/proc/$pid/smaps" >"$tmp/heap"
  exec 4>&-
  wait $pid || fail "aup run (GLIBC_TUNABLES=$1) exits 0: $(cat "$tmp/err")"
  grep -q '"ok":true' "$tmp/out" || fail "aup run (GLIBC_TUNABLES=$1) answers the query read before the restart"
}

# glibc marks what its heap maps (VmFlags "hg") where the kernel has
# transparent huge pages; a sanitizer's allocator is not glibc's. (gcc
# links the sanitizer's runtime as a library, clang into the executable:
# either way the executable names its entry point.)
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "[never]")
marks=no
if ! grep -q -a '__asan_init\|__tsan_init' "$aup" && [ "${thp#*\[never\]}" = "$thp" ]; then marks=yes; fi

serve -
[ "$(cat "$tmp/env")" = "glibc.malloc.hugetlb=1" ] || fail "unset: the tunable added, got '$(cat "$tmp/env")'"
[ $marks = no ] || grep -q ' hg' "$tmp/heap" || fail "the heap marked for huge pages (VmFlags: $(cat "$tmp/heap"))"

serve glibc.malloc.hugetlb=0
[ "$(cat "$tmp/env")" = "glibc.malloc.hugetlb=0" ] || fail "an operator's hugetlb=0 kept, got '$(cat "$tmp/env")'"
grep -q ' hg' "$tmp/heap" && fail "hugetlb=0: the heap not marked"

# Another tunable: kept, the tunable added after it (glibc's loader
# rewrites the environment block /proc shows for a list of several, so
# the heap tells; the value itself: tests/cli/huge_pages_test.cpp).
serve glibc.malloc.tcache_count=0
[ $marks = no ] || grep -q ' hg' "$tmp/heap" || fail "with another tunable, the heap marked (VmFlags: $(cat "$tmp/heap"))"

[ "$failures" -eq 0 ] && echo "aup run restarts with glibc.malloc.hugetlb=1, keeping an operator's own"
exit "$failures"
