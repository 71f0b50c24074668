#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# comment_refs_check.sh SOURCE_DIR - every repository file that a comment or
# a document names still exists: a moved or renamed file leaves comments
# that send the reader to nothing ("see tests/<gone>.c", "[x](docs/<gone>.md)").
#
# What counts as a reference, in the tracked sources, scripts, build files
# and Markdown (CHANGELOG.md aside: it tells history, old names included):
#  - a path whose first folder is a top-level folder of the tree
#    (loader/alloc/alloc.h, tests/harness/test.h, docs/cpu.md): it must
#    exist from the top;
#  - a path that starts with ./ or ../, or whose first folder is a folder
#    beside the file (conformance/conformance.c in tests/CMakeLists.txt):
#    it must exist from the file's folder (or from the top);
#  - a bare name of a C source, header, script or document (memory.c,
#    alloc.h, graphs.md): a tracked file of that name must exist somewhere.
# Names of other projects' files (cuda.h, libuv's test/runner.c) are not
# paths of this tree and pass by these rules, except the bare names of
# EXTERNAL below.  Absolute paths, URLs and names with placeholders ($, <>,
# {}, *) are not checked.  A name that is meant to be gone (an old path in
# a note about moves) is best written so that it does not look like a path.
# tools/trace/trace_html.c is left out: it is the page's JavaScript in C
# strings, whose property names look like file names.
set -eu
cd "$1"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "SKIP: not a git checkout (the tracked files are what is checked)"
    exit 77
fi

# Files outside this tree that comments name on purpose: system and vendor
# headers, other projects' files, examples of a file a reader would write;
# bare names, and relative paths as written.
EXTERNAL="cl.h cuda.h cudaTypedefs.h nvml.h arg.h b.h hc.c icd_test_match.c myapp.c myvendor.c ../infinicore.h"

tracked=$(mktemp)
trap 'rm -f "$tracked"' EXIT
git ls-files -co --exclude-standard >"$tracked"

# One grep over every file (file:line:name), one awk to judge the names:
# a loaded machine runs it in a second or two.
git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cc' '*.cu' '*.sh' '*.cmake' '*.in' '*.md' 'CMakeLists.txt' '*/CMakeLists.txt' \
    '*/Makefile' dev .ci/run | grep -v -e '^CHANGELOG\.md$' -e '^tests/fuzz/corpus/' -e '^tools/trace/trace_html\.c$' |
    xargs grep -HnoE '[A-Za-z0-9_./~$<>{}*-]*[A-Za-z0-9_]\.(c|h|cc|cu|md|sh|txt|ini|cmake|in|json)\b' |
    awk -v external="$EXTERNAL" '
    function norm(p,   n, i, k, c, out, st) {
        n = split(p, c, "/"); k = 0
        for (i = 1; i <= n; i++) {
            if (c[i] == "" || c[i] == ".") continue
            if (c[i] == "..") { if (k > 0) k--; else return "../" p; continue }
            st[++k] = c[i]
        }
        out = ""
        for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") st[i]
        return out
    }
    FNR == NR {
        have[$0] = 1
        n = split($0, c, "/"); base[c[n]] = 1; top[c[1]] = 1
        d = c[1]
        for (i = 2; i < n; i++) { have[d] = 1; d = d "/" c[i] }
        if (n > 1) have[d] = 1
        next
    }
    BEGIN { n = split(external, e, " "); for (i = 1; i <= n; i++) ext[e[i]] = 1 }
    {
        f = $0; sub(/:.*/, "", f)
        rest = substr($0, length(f) + 2); line = rest; sub(/:.*/, "", line)
        ref = substr(rest, length(line) + 2)
        dir = f; if (!sub(/\/[^\/]*$/, "", dir)) dir = "."
        if (ref ~ /^\// || ref ~ /[~$<>{}*]/ || (ref in ext)) next
        if (ref ~ /(^|\/)[A-Z]+\//) next          # plugins/NAME/...: a placeholder
        if (ref ~ /^mydev_/) next                 # plugins/README.md: the new backend of its steps
        if (ref ~ /^\.\.?\//) {
            if (ref ~ /^\.\/[^\/]*$/) next         # ./my.ini: a file of the reader
            ok = (norm(dir "/" ref) in have)
        } else if (ref ~ /\//) {
            first = ref; sub(/\/.*/, "", first)
            if (dir != "." && ((dir "/" first) in have))
                ok = (norm(dir "/" ref) in have) || (ref in have)
            else if (first in top)
                ok = (ref in have)
            else
                next                               # not a path of this tree
        } else if (ref ~ /^[-_]/) {
            next                                   # the tail of <vendor>_config.c
        } else if (ref ~ /\.(c|h|md|sh|cmake)$/) {
            ok = (ref in base)
        } else
            next
        if (!ok) { printf "FAIL: %s:%s: %s (no such file in the tree)\n", f, line, ref; bad = 1 }
    }
    END {
        if (bad) exit 1
        print "ok: every file a comment or document names exists"
    }' "$tracked" -
