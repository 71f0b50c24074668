#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# static_candidates.sh BUILD_DIR - functions of the loader and the plugins
# that could be static: a global text symbol defined in one object of
# BUILD_DIR/loader or BUILD_DIR/plugins and referenced by no other object
# of the build (tests, bench and tools count as users).  The public API
# (infinirt[A-Z]*) and the plugin entry are left out.  Prints
# "symbol source-object" lines; exit 0 (a list for a person to judge).
set -eu
b=$1
refs=$(mktemp)
trap 'rm -f "$refs"' EXIT
find "$b" -name '*.o' | xargs nm -A --undefined-only 2>/dev/null | awk '{print $NF}' | sort -u >"$refs"
find "$b/loader" "$b/plugins" -name '*.o' | xargs nm -A --defined-only 2>/dev/null |
    awk '$(NF-1) == "T" { o = $1; sub(/:.*/, "", o); print $NF, o }' |
    grep -v -e '^infinirt[A-Z]' -e '^infinirtPluginEntry ' | sort -u |
    while read -r sym obj; do
        grep -qx "$sym" "$refs" || echo "$sym ${obj#"$b"/}"
    done
