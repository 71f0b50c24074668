#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# static_candidates.sh BUILD_DIR
# static_candidates.sh --check ALLOW BUILD_DIR OBJECT...
#
# Functions of the loader and the plugins that could be static, and global
# names that break the naming rule.  Printed as "symbol object" lines:
#  - a global function defined in one of their objects and referenced by no
#    other object of BUILD_DIR (tests, bench and tools count as users);
#    the public API (infinirt[A-Z]*) and the plugin entry are left out;
#  - any global symbol (function or variable) of a loader object not named
#    infinirt__*, or of a plugin object not named <p>__* (p: its folder
#    under plugins/), with "(not prefixed)" after it: a name the files
#    share carries the prefix (docs/architecture.md, plugins/README.md),
#    and one no other file uses is static.  (Users are matched by name
#    alone, so this rule is what catches a short file-local name that some
#    unrelated test program happens to use too.)
#
# With BUILD_DIR alone: the objects of BUILD_DIR/loader and
# BUILD_DIR/plugins are looked at; exit 0 (a list for a person to judge).
#
# With --check (the CTest hygiene.static_candidates): the objects looked at
# are the OBJECTs named (the loader's and the plugins', as the build lists
# them, so an object a renamed source left behind is not one of them), and
# ALLOW is the allow-list: one symbol per line, each with a comment saying
# why it stays global ('#' starts a comment).  Fails when a symbol is
# printed that is not on the list, or a listed symbol is no longer printed
# (the list only ever shrinks back to what is needed).
set -eu
check=0 allow=""
if [ "${1:-}" = --check ]; then
    check=1 allow=$2
    shift 2
fi
b=$1
shift
if [ $check = 1 ]; then
    [ $# -gt 0 ] || { echo "static_candidates.sh: --check needs the objects to look at" >&2; exit 2; }
    for o in "$@"; do
        [ -f "$o" ] || { echo "static_candidates.sh: $o is missing: build first" >&2; exit 2; }
    done
fi
refs=$(mktemp)
cands=$(mktemp)
trap 'rm -f "$refs" "$cands"' EXIT
# Every object's undefined symbols.  An object left behind by a renamed
# source can only add users here: it may hide a candidate, never make one.
find "$b" -name '*.o' | xargs nm -A --undefined-only 2>/dev/null | awk '{print $NF}' | sort -u >"$refs"
[ -s "$refs" ] || { echo "static_candidates.sh: no objects under $b" >&2; exit 2; }
if [ $check = 1 ]; then
    printf '%s\n' "$@"
else
    find "$b/loader" "$b/plugins" -name '*.o'
fi | xargs nm -A --defined-only |
    awk -v b="$b/" '
        NR == FNR { used[$1] = 1; next }
        # "object:address TYPE name": a global symbol has an upper-case type.
        $(NF-1) ~ /^[A-Z]$/ {
            sym = $NF; t = $(NF-1); o = $1; sub(/:[^:]*$/, "", o)
            if (index(o, b) == 1) o = substr(o, length(b) + 1)
            prefix = "infinirt__"
            if (match(o, /(^|\/)plugins\/[^\/]+\//)) {
                p = substr(o, RSTART, RLENGTH); sub(/\/$/, "", p); sub(/.*\//, "", p)
                prefix = p "__"
            }
            if (sym ~ /^infinirt[A-Z]/) next # the API, and infinirtPluginEntry
            # Made by the toolchain (reserved names, or with a dot): ASan
            # adds a global __odr_asan.NAME beside each global variable.
            if (sym ~ /^__/ || index(sym, ".") > 0) next
            if (index(sym, prefix) != 1) print sym, o, "(not prefixed)"
            else if (t == "T" && !(sym in used)) print sym, o
        }' "$refs" - | sort -u >"$cands"
if [ $check = 0 ]; then
    cat "$cands"
    exit 0
fi

listed=$(sed 's/#.*//' "$allow" | awk 'NF { print $1 }' | sort -u)
fail=0
while read -r sym obj why; do
    if ! printf '%s\n' "$listed" | grep -qx "$sym"; then
        if [ -n "$why" ]; then
            echo "FAIL: $sym ($obj) is global but not prefixed: make it static, or name it as the files' shared names are"
        else
            echo "FAIL: $sym ($obj) is used by no other object: make it static (or delete it), or add it to $allow saying why it stays global"
        fi
        fail=1
    fi
done <"$cands"
for sym in $listed; do
    if ! awk '{ print $1 }' "$cands" | grep -qx "$sym"; then
        echo "FAIL: $sym is in $allow but is no longer a candidate: take it off the list"
        fail=1
    fi
done
n=$(printf '%s\n' "$@" | wc -l)
[ $fail = 0 ] && echo "static candidates ok: $n objects, $(wc -l <"$cands") candidates, all on the allow-list"
exit $fail
