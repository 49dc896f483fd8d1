#!/bin/sh
# Secondary indexes on a store: they are not stored but rebuilt at every
# open (docs/store-format.md), so a reopened store answers index queries as
# before, an index added to the module is built from the rows already
# there, a dropped one is simply gone, and a unique index that finds two
# rows with one value refuses the open naming both rows.
# Usage: index_store_test.sh AUP
set -u
aup=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

head='record U { id: num, email: text, score: num }
table users: U key id
event add { id: num, email: text, score: num }
on add { users.add(U { id: add.id, email: add.email, score: add.score }) }'
# One unique index; then a second index added; then both dropped.
cat >"$tmp/one.aup" <<AUP
$head
unique index by_email on users (email)
query find(e: text) { return users.by_email[e].id }
query order() {
  let ids: [num] = []
  for u in users.by_email { ids.push(u.id) }
  return ids
}
AUP
cat >"$tmp/two.aup" <<AUP
$head
unique index by_email on users (email)
index by_score on users (score)
query order() {
  let ids: [num] = []
  for u in users.by_email { ids.push(u.id) }
  return ids
}
query scores() {
  let ids: [num] = []
  for u in users.by_score desc { ids.push(u.id) }
  return ids
}
AUP
cat >"$tmp/none.aup" <<AUP
$head
query order() { return users.count }
AUP
for m in one two none; do "$aup" build "$tmp/$m.aup" -o "$tmp/$m.aupm" >/dev/null || fail "build $m"; done
st=$tmp/data

printf '%s\n' '{"event":"add","args":{"id":1,"email":"z","score":5},"id":1}' \
  '{"event":"add","args":{"id":2,"email":"a","score":9},"id":2}' \
  '{"event":"add","args":{"id":3,"email":"m","score":1},"id":3}' \
  '{"event":"add","args":{"id":4,"email":"m","score":2},"id":4}' |
  "$aup" run "$tmp/one.aupm" --data "$st" >"$tmp/out" 2>"$tmp/err" || fail "first run: $(cat "$tmp/err")"
grep -q '"id":4,"ok":false,"error":{"code":"duplicate"' "$tmp/out" || fail "a second row with one email is refused: $(cat "$tmp/out")"

# Reopened: the index is rebuilt and answers as before.
printf '%s\n' '{"query":"find","args":{"e":"m"},"id":1}' '{"query":"order","args":{},"id":2}' |
  "$aup" run "$tmp/one.aupm" --data "$st" >"$tmp/out" 2>"$tmp/err" || fail "reopen: $(cat "$tmp/err")"
printf '%s\n' '{"id":1,"ok":true,"result":3}' '{"id":2,"ok":true,"result":[2,3,1]}' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "the reopened index answers as before: $(cat "$tmp/out")"

# An index added to the module is built from the rows the store has.
printf '%s\n' '{"query":"scores","args":{},"id":1}' '{"query":"order","args":{},"id":2}' |
  "$aup" run "$tmp/two.aupm" --data "$st" >"$tmp/out" 2>"$tmp/err" || fail "reopen with an added index: $(cat "$tmp/err")"
printf '%s\n' '{"id":1,"ok":true,"result":[2,1,3]}' '{"id":2,"ok":true,"result":[2,3,1]}' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "an added index holds the stored rows: $(cat "$tmp/out")"

# Dropped: the store opens, and a row the unique index refused is taken.
printf '%s\n' '{"query":"order","args":{},"id":1}' '{"event":"add","args":{"id":4,"email":"m","score":2},"id":2}' |
  "$aup" run "$tmp/none.aupm" --data "$st" >"$tmp/out" 2>"$tmp/err" || fail "reopen with the indexes dropped: $(cat "$tmp/err")"
printf '%s\n' '{"id":1,"ok":true,"result":3}' '{"id":2,"ok":true}' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "without indexes the rows are all there: $(cat "$tmp/out")"

# The unique index back: two rows have "m", so the open is refused (exit 1).
echo '{"query":"order","args":{},"id":1}' | "$aup" run "$tmp/one.aupm" --data "$st" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "a unique clash at open exits 1, got $rc"
grep -q 'cannot open the store: unique index `by_email` of `users`: the rows with keys 3 and 4 both have ("m")' "$tmp/err" ||
  fail "the refusal names the index and both rows: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "a refused open answers nothing: $(cat "$tmp/out")"

[ "$failures" -eq 0 ] || exit 1
echo ok
