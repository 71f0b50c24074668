#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# format_check.sh [--fix] SOURCE_DIR [CLANG_FORMAT]
# The C, CUDA and C++ sources git tracks match .clang-format.  Without
# --fix: list what differs and fail; with --fix: reformat them in place.
# The style is tuned for clang-format 14 (later majors place a few tokens
# differently), so another major, or none, is a skip (exit 77), not a
# failure.  CLANG_FORMAT defaults to clang-format-14, else clang-format.
set -eu
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
[ $# -ge 1 ] || { echo "usage: format_check.sh [--fix] SOURCE_DIR [CLANG_FORMAT]" >&2; exit 2; }
src=$1
cf=${2:-}
if [ -z "$cf" ]; then
    cf=$(command -v clang-format-14 || command -v clang-format || true)
fi
if [ -z "$cf" ] || ! "$cf" --version >/dev/null 2>&1; then
    echo "SKIP: clang-format not found (apt-get install clang-format)"
    exit 77
fi
major=$("$cf" --version | sed -n 's/.*clang-format version \([0-9][0-9]*\).*/\1/p')
if [ "$major" != 14 ]; then
    echo "SKIP: $cf is clang-format ${major:-of unknown version}; the style is checked with clang-format 14"
    exit 77
fi
cd "$src"
[ -f .clang-format ] || { echo "FAIL: no .clang-format in $src"; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# The files git tracks (build folders are not ours to check); in a copy
# outside git, or inside an ignored folder, the source folders' files.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.c' '*.h' '*.cu' '*.cc' >"$tmp"
fi
if [ ! -s "$tmp" ]; then
    find bench examples include loader plugins tests -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cc' \) 2>/dev/null | sort >"$tmp"
fi
n=$(wc -l <"$tmp")
[ "$n" -gt 0 ] || { echo "FAIL: no source file found in $src"; exit 1; }
if [ $fix = 1 ]; then
    tr '\n' '\0' <"$tmp" | xargs -0 "$cf" -i --style=file
    echo "reformatted $n files with $cf"
    exit 0
fi
out=$(tr '\n' '\0' <"$tmp" | xargs -0 "$cf" --dry-run -Werror --style=file 2>&1) && rc=0 || rc=$?
if [ $rc = 0 ] && [ -z "$out" ]; then
    echo "all $n sources match .clang-format ($cf)"
    exit 0
fi
printf '%s\n' "$out" | head -n 60
bad=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
echo "FAIL: $(printf '%s\n' "$bad" | grep -c .) of $n files differ from .clang-format:"
printf '  %s\n' $bad
echo "fix: tests/format_check.sh --fix . (or: clang-format-14 -i FILE...)"
exit 1
