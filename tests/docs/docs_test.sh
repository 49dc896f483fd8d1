#!/bin/sh
# The docs stay true to the code: every opcode is in docs/bytecode.md's
# table, every failure code in docs/protocol.md, every document cited
# exists in the repository, and the README shows the two set-up commands
# that .ci/run runs.
# Usage: docs_test.sh SOURCE_ROOT
set -u
root=$1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
for op in $(sed -n 's/^AUP_OP(\([A-Z0-9_]*\),.*/\1/p' "$root/vm/opcodes.def"); do
  grep -q "| \`$op\` |" "$root/docs/bytecode.md" || fail "docs/bytecode.md does not list $op"
done
for code in failed not_found duplicate stale_row out_of_range not_finite bad_number budget \
            bad_request unknown_event unknown_query bad_args unavailable; do
  grep -q "\`$code\`" "$root/docs/protocol.md" || fail "docs/protocol.md does not explain $code"
  grep -rq "\"$code\"" "$root/vm" "$root/runtime" || fail "$code is documented but not in the code"
done
for f in storage/log_format.h storage/image_format.h storage/schema_file.h; do
  magic=$(sed -n 's|^//   0   8  magic "\([A-Z]*\).*|\1|p' "$root/$f" | head -1)
  [ -n "$magic" ] || fail "$f has no magic line"
  grep -q "\`$magic" "$root/docs/store-format.md" || fail "docs/store-format.md does not show $f's magic $magic"
done
# Every document the sources and docs cite is in the repository: a docs/
# page named anywhere exists, and no comment sends the reader to a design
# page the repository does not have.
cited=$(cd "$root" && grep -rhoE --exclude-dir='build*' 'docs/[a-z0-9_-]+\.md' --include='*.h' --include='*.cpp' --include='*.def' \
  --include='*.py' --include='*.sh' --include='*.md' --include='meson.build' . | sort -u)
for doc in $cited; do
  [ -f "$root/$doc" ] || fail "$doc is cited but does not exist"
done
for page in runtime.md storage.md style.md; do
  hits=$(cd "$root" && grep -rlw --exclude-dir='build*' --include='*.h' --include='*.cpp' --include='*.py' --include='*.sh' \
    --include='meson.build' --exclude=docs_test.sh "$page" . | head -3)
  [ -z "$hits" ] || fail "$page is cited but is not in the repository: $hits"
done
grep -q '^sh tools/demo.sh$' "$root/README.md" || fail "README shows the main-job command"
grep -q '^sh tools/test.sh$' "$root/README.md" || fail "README shows the test command"
grep -q 'tools/test.sh' "$root/.ci/run" || fail ".ci/run runs the README's test command"
[ "$failures" -eq 0 ] && echo "docs agree with the code"
exit "$failures"
