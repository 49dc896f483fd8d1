#!/bin/sh
# Once the JIT module is linked, libLLVM's pages are given back
# (vm/jit/loader.cpp; about 45 MB of it stayed resident for the server's
# life): what is left of it is the relocated data, a few MB.
#
# Runs alone (is_parallel: false in tests/meson.build): a page that another
# process maps at the moment of the give-back cannot be given back, and it
# counts as this process's own once that process exits, so a JIT test
# running beside this one could make it fail.
# Usage: llvm_pages_test.sh AUP SOURCE_ROOT
set -u
aup=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset AUP_ENGINE
export AUP_JIT_CACHE=off  # compile, so LLVM runs in this process
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
bank=$root/examples/bank/bank.aup

mkfifo "$tmp/llvm.fifo"
"$aup" run "$bank" --memory --engine jit <"$tmp/llvm.fifo" >"$tmp/llvm.out" 2>/dev/null &
pid=$!
exec 4>"$tmp/llvm.fifo"
printf '{"query":"total"}\n' >&4
i=0
while [ ! -s "$tmp/llvm.out" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
# Pages other processes map too (tests running beside this one) cannot be
# given back and are counted as shared: only this process's own count.
llvm_kib=$(awk '/^[0-9a-f]+-[0-9a-f]+ /{lib = ($6 ~ /libLLVM/)} /^Private_(Clean|Dirty):/{if (lib) kib += $2}
  END{print kib + 0}' "/proc/$pid/smaps")
exec 4>&-
wait $pid
[ -s "$tmp/llvm.out" ] || fail "a JIT run answers"
[ "$llvm_kib" -gt 0 ] && [ "$llvm_kib" -lt 16384 ] ||
  fail "libLLVM resident after linking, this process's own pages: $llvm_kib KiB (want under 16 MiB)"

[ "$failures" -eq 0 ] && echo "libLLVM's pages given back: $llvm_kib KiB of them left in this process"
exit "$failures"
