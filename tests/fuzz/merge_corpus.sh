#!/bin/sh
# Folds what fuzz runs found into the seeds (tools/fuzz.sh --merge).
# Usage: merge_corpus.sh BINDIR WORKDIR CORPUSDIR NAME...
#
# For each target NAME: the named seeds of CORPUSDIR/NAME (written by hand
# or kept from a finding: bank-demo-01.ndjson, regress-...) stay as they
# are. The rest, inputs libFuzzer named by their SHA-1, are chosen again
# from the ones already there and those the runs left in
# WORKDIR/NAME/corpus: a libFuzzer merge into a fresh directory that holds
# only the named seeds (and, for the source target, the programs of
# tests/check, which are its seeds too) keeps an input only when it adds
# coverage beyond them and the inputs kept before it. The merge is by edges
# (-use_counters=0: not by how often each edge ran) and picks few inputs
# (-set_cover_merge=1: a greedy set cover), so the seeds cover every edge
# the runs reached with a fraction of the inputs (for the log target, 55
# of 343 inputs, with the same 1,545 edges); a long run grows the rest
# again from them within minutes. Prints the counts.
set -eu
bin=$1 work=$2 corpus=$(cd "$3" && pwd)
shift 3
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
# The files of directory $1 named (or, with -v, not named) as libFuzzer
# names what it finds: 40 hex digits, the input's SHA-1.
found_in() {
  if [ "$1" = -v ]; then ls "$2" | grep -Ev '^[0-9a-f]{40}$' || true; else ls "$1" | grep -E '^[0-9a-f]{40}$' || true; fi
}
for name in "$@"; do
  seeds=$corpus/$name
  fresh=$(mktemp -d "${TMPDIR:-/tmp}/aup-merge-$name.XXXXXX")
  found=$(mktemp -d "${TMPDIR:-/tmp}/aup-found-$name.XXXXXX")
  found_in "$seeds" | (cd "$seeds" && xargs -r cp -t "$found")
  found_in -v "$seeds" | (cd "$seeds" && xargs -r cp -t "$fresh")
  if [ "$name" = source ]; then
    for f in tests/check/pass/*.aup tests/check/fail/*.aup; do cp "$f" "$fresh/check-$(basename "$f")"; done
  fi
  before=$(ls "$found" | wc -l)
  runs=0
  [ -d "$work/$name/corpus" ] && runs=$(ls "$work/$name/corpus" | wc -l)
  sources="$found"
  [ -d "$work/$name/corpus" ] && sources="$sources $work/$name/corpus"
  # shellcheck disable=SC2086
  "$bin/${name}_fuzz" -set_cover_merge=1 -use_counters=0 -timeout=10 -rss_limit_mb=2560 "$fresh" $sources \
    >"$fresh.log" 2>&1 || {
    echo "merge_corpus.sh: the merge of $name failed; its log: $fresh.log" >&2
    exit 1
  }
  found_in "$seeds" | (cd "$seeds" && xargs -r rm -f)
  found_in "$fresh" | (cd "$fresh" && xargs -r cp -t "$seeds")
  kept=$(found_in "$seeds" | wc -l)
  echo "$name: $before found inputs before + $runs from the runs -> $kept kept;" \
    "$(ls "$seeds" | wc -l) files, $(cat "$seeds"/* | wc -c) bytes in $seeds"
  rm -rf "$fresh" "$fresh.log" "$found"
done
