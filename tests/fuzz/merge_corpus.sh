#!/bin/sh
# Folds what fuzz runs found into the seeds (tools/fuzz.sh --merge).
# Usage: merge_corpus.sh BINDIR WORKDIR CORPUSDIR NAME...
#
# For each target NAME: the named seeds of CORPUSDIR/NAME (written by hand
# or kept from a finding: bank-demo-01.ndjson, regress-...) stay as they
# are. The rest, inputs libFuzzer named by their SHA-1, are chosen again
# from the ones already there and those the runs left in
# WORKDIR/NAME/corpus: libFuzzer's -merge=1 into a fresh directory that
# holds only the named seeds (and, for the source target, the programs of
# tests/check, which are its seeds too) keeps an input only when it adds
# coverage beyond them and the inputs kept before it. Prints the counts.
set -eu
bin=$1 work=$2 corpus=$3
shift 3
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
is_found() { echo "$1" | grep -Eq '^[0-9a-f]{40}$'; }
for name in "$@"; do
  seeds=$corpus/$name
  fresh=$(mktemp -d "${TMPDIR:-/tmp}/aup-merge-$name.XXXXXX")
  found=$(mktemp -d "${TMPDIR:-/tmp}/aup-found-$name.XXXXXX")
  for f in "$seeds"/*; do
    [ -f "$f" ] || continue
    if is_found "$(basename "$f")"; then cp "$f" "$found/"; else cp "$f" "$fresh/"; fi
  done
  if [ "$name" = source ]; then
    for f in tests/check/pass/*.aup tests/check/fail/*.aup; do cp "$f" "$fresh/check-$(basename "$f")"; done
  fi
  before=$(ls "$found" | wc -l)
  runs=0
  [ -d "$work/$name/corpus" ] && runs=$(ls "$work/$name/corpus" | wc -l)
  sources="$found"
  [ -d "$work/$name/corpus" ] && sources="$sources $work/$name/corpus"
  # shellcheck disable=SC2086
  "$bin/${name}_fuzz" -merge=1 -timeout=10 -rss_limit_mb=2560 "$fresh" $sources >"$fresh.log" 2>&1 || {
    echo "merge_corpus.sh: the merge of $name failed; its log: $fresh.log" >&2
    exit 1
  }
  rm -f "$fresh"/check-*.aup
  for f in "$seeds"/*; do
    if is_found "$(basename "$f")"; then rm -f "$f"; fi
  done
  kept=0
  for f in "$fresh"/*; do
    if is_found "$(basename "$f")"; then cp "$f" "$seeds/"; kept=$((kept + 1)); fi
  done
  echo "$name: $before found inputs before + $runs from the runs -> $kept kept;" \
    "$(ls "$seeds" | wc -l) files, $(cat "$seeds"/* | wc -c) bytes in $seeds"
  rm -rf "$fresh" "$fresh.log" "$found"
done
