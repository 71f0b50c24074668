#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# spdx_check.sh SOURCE_DIR - every source, header, script and build file git
# tracks carries an SPDX-License-Identifier line within its first three
# lines (after a #! line), naming the project's licence, Apache-2.0; and the
# LICENSE file is there.  Prose and data (Markdown, INI, JSON, the fuzz
# corpus) carry none.
set -eu
cd "$1"
[ -f LICENSE ] && grep -q "Apache License" LICENSE && grep -q "Version 2.0" LICENSE ||
    { echo "FAIL: no Apache-2.0 LICENSE file in $1"; exit 1; }
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "SKIP: not a git checkout (the tracked files are what is checked)"
    exit 77
fi
bad=0
for f in $(git ls-files -- '*.c' '*.h' '*.cc' '*.cu' '*.sh' '*.cmake' '*.in' 'CMakeLists.txt' '*/CMakeLists.txt' \
    '*/Makefile' dev .ci/run); do
    [ -f "$f" ] || continue
    if ! head -n 3 "$f" | grep -q "SPDX-License-Identifier: Apache-2.0"; then
        echo "FAIL: $f has no 'SPDX-License-Identifier: Apache-2.0' line in its first three lines"
        bad=1
    fi
done
[ "$bad" -eq 0 ] || exit 1
echo "ok: every tracked source carries its SPDX line"
