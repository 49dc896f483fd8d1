#!/bin/sh
# Regenerates the fuzz targets' seeds (tests/fuzz/corpus/NAME/) from
# examples/ and tests/, with the aup of a normal build (build/cli/aup, or
# $AUP). The seeds are committed (a few dozen KB), so the fuzz build needs
# no other build; run this after a format changes. Seeds named regress-*
# are inputs that once found a bug: they are kept as they are.
#
#   source   the examples and the golden programs (tests/check's corpus is
#            read in place by the fuzz test)
#   request  each line of the bank demo alone, each golden program's input
#   module   module files built from the bank, TPC-C and three programs
#   log      segments of bank stores (--segment-size 4096), each cut after
#            its end marker, the whole chain in one file and the first alone
#   image    the table images, vars image and schema file of bank and
#            tables.aup stores checkpointed as they ran (--image-min 1)
set -eu
cd "$(dirname "$0")/.."
aup=${AUP:-build/cli/aup}
[ -x "$aup" ] || { echo "fuzz_corpus.sh: no $aup (build it: sh tools/build.sh build)" >&2; exit 2; }
c=tests/fuzz/corpus
for d in source request module log image; do
  mkdir -p "$c/$d"
  find "$c/$d" -type f ! -name 'regress-*' -delete
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cp examples/bank/bank.aup "$c/source/example-bank.aup"
cp examples/tpcc/tpcc.aup "$c/source/example-tpcc.aup"
for f in tests/programs/*.aup; do cp "$f" "$c/source/program-$(basename "$f")"; done

i=0
while IFS= read -r line; do
  i=$((i + 1))
  printf '%s\n' "$line" > "$c/request/bank-demo-$(printf %02d $i).ndjson"
done < examples/bank/demo.ndjson
for f in tests/programs/*.in.ndjson; do cp "$f" "$c/request/program-$(basename "$f" .in.ndjson).ndjson"; done

"$aup" build examples/bank/bank.aup -o "$c/module/bank.aupm" >/dev/null
"$aup" build examples/tpcc/tpcc.aup -o "$c/module/tpcc.aupm" >/dev/null
for n in protocol values tables; do "$aup" build "tests/programs/$n.aup" -o "$c/module/program-$n.aupm" >/dev/null; done

# A bank workload: accounts, deposits, transfers (some failing), a close.
{
  n=1
  while [ $n -le 12 ]; do
    echo "{\"event\":\"open\",\"args\":{\"id\":$n,\"owner\":\"owner $n\"}}"
    echo "{\"event\":\"deposit\",\"args\":{\"id\":$n,\"amount\":$((n * 100))}}"
    n=$((n + 1))
  done
  n=1
  while [ $n -le 60 ]; do
    echo "{\"event\":\"transfer\",\"args\":{\"from\":$((n % 12 + 1)),\"to\":$(((n * 5) % 12 + 1)),\"amount\":$n}}"
    n=$((n + 1))
  done
  echo '{"event":"deposit","args":{"id":3,"amount":1}}'
  echo '{"query":"total"}'
} > "$tmp/bank.ndjson"
run() {  # run MODULE INPUT DIR OPTIONS...
  m=$1 input=$2 dir=$3
  shift 3
  "$aup" run "$m" --data "$dir" --fixed-time 1700000000000 "$@" < "$input" >/dev/null 2>&1
}

# The log: small segments, an event an entry, no checkpoint.
run examples/bank/bank.aup "$tmp/bank.ndjson" "$tmp/log" --segment-size 4096 --max-batch 1
python3 - "$tmp/log" "$c/log" <<'PY'
import os, struct, sys
src, out = sys.argv[1], sys.argv[2]
def used(b):  # bytes up to and including the end marker after the last entry
    off = 64
    while off + 40 <= len(b) and any(b[off:off + 40]):
        off += (40 + struct.unpack_from("<I", b, off)[0] + 7) // 8 * 8
    return min(off + 40, len(b))
names = sorted((int(n[4:]), n) for n in os.listdir(src) if n.startswith("log-"))
segs = [open(os.path.join(src, n), "rb").read() for _, n in names]
segs = [s[:used(s)] for s in segs]
open(os.path.join(out, "bank-chain.bin"), "wb").write(b"".join(segs))
open(os.path.join(out, "bank-first.bin"), "wb").write(segs[0])
PY

# Images: a checkpoint whenever a table's log outgrows its image.
run examples/bank/bank.aup "$tmp/bank.ndjson" "$tmp/bank" --image-min 1 --max-batch 4
cp "$tmp/bank/image-accounts" "$c/image/bank-image-accounts"
cp "$tmp/bank/image-transfers" "$c/image/bank-image-transfers"
cp "$tmp/bank/image.vars" "$c/image/bank-image.vars"
cp "$tmp/bank/schema" "$c/image/bank-schema"
run tests/programs/tables.aup tests/programs/tables.in.ndjson "$tmp/tables" --image-min 1 --max-batch 1 || true
cp "$tmp/tables/image-words" "$c/image/tables-image-words"
cp "$tmp/tables/image-stock" "$c/image/tables-image-stock"
cp "$tmp/tables/schema" "$c/image/tables-schema"

du -sh "$c"
