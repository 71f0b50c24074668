#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bad_input_coverage.sh INCLUDE_DIR LIBINFINIRT BAD_INPUT_TESTS
# Every function declared in infinirt.h and infinicore.h, and every infinirt*
# function libinfinirt.so exports, has at least one row in the bad-input
# table; and every function of the table is declared.  A new public call
# cannot land without its bad-input rows.
set -eu
inc=$1 lib=$2 bin=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Declarations: the name after INFINIRT_API on the declaration's first line.
cat "$inc/infinirt.h" "$inc/infinicore.h" | grep '^INFINIRT_API' |
    sed -n 's/^INFINIRT_API[^(]*[^A-Za-z0-9_]\(infinirt[A-Za-z0-9_]*\)(.*/\1/p' | sort -u >"$tmp/declared"
nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | grep '^infinirt[A-Z]' |
    sort -u >"$tmp/exported"
"$bin" --functions | sort -u >"$tmp/covered"
fail=0
nd=$(wc -l <"$tmp/declared")
[ "$nd" -ge 30 ] || { echo "FAIL: found only $nd declarations in $inc: the pattern no longer matches"; fail=1; }
missing=$(sort -u "$tmp/declared" "$tmp/exported" | comm -23 - "$tmp/covered")
if [ -n "$missing" ]; then
    echo "FAIL: public functions with no row in tests/bad_input/bad_input_rows.h:"; echo "$missing"; fail=1
fi
stale=$(comm -13 "$tmp/declared" "$tmp/covered")
if [ -n "$stale" ]; then
    echo "FAIL: rows for functions the headers do not declare:"; echo "$stale"; fail=1
fi
[ $fail = 0 ] && echo "bad-input rows cover all $nd declared and $(wc -l <"$tmp/exported") exported functions"
exit $fail
