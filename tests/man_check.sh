#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# man_check.sh CHECK ARGS - the manual pages are well-formed and say what
# the code does.
#   lint PAGE...   groff (man macros, every warning on) formats each page
#                  with no warning and a NAME section; exit 77 (skip)
#                  without groff (Debian: groff-base, which ./dev installs)
#   keys SRC       every key loader/config_keys.c reads is documented under
#                  its section in man/infinirt.ini.5.in (a line
#                  '.BI "KEY = "' after '.SS [SECTION]') and in the README's
#                  configuration table (`KEY` in the Key column of a row of
#                  that section); every variable the loader reads (a
#                  ...getenv(..."NAME") call in loader/) is a .TP entry of
#                  the page's ENVIRONMENT section
set -u
check=$1
shift
T=$(mktemp -d /tmp/infinirt-man-XXXXXX)
trap 'rm -rf "$T"' EXIT
bad=0
complain() {
    echo "FAIL: $*"
    bad=1
}

case $check in
lint)
    command -v groff >/dev/null || { echo "skip: groff not found (apt-get install groff-base)"; exit 77; }
    for page in "$@"; do
        [ -s "$page" ] || { complain "$page is missing or empty"; continue; }
        # -ww: every warning; -z: format, print nothing but the warnings.
        LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" >"$T/warn" 2>&1
        [ ! -s "$T/warn" ] || { complain "groff warns about $page:"; cat "$T/warn"; }
        LC_ALL=C.UTF-8 groff -man -Tutf8 -P-cbou "$page" 2>/dev/null | grep -q '^NAME' ||
            complain "$page has no NAME section when formatted"
        # An unreplaced @VARIABLE@ of configure_file.
        ! grep -n '@[A-Z_]*@' "$page" || complain "$page has an unreplaced @...@"
    done
    ;;
keys)
    src=$1
    page=$src/man/infinirt.ini.5.in
    # SECTION KEY, one per line, from the three key functions of the loader.
    awk '
        /^static void loader_key\(/    { sec = "loader" }
        /^static void allocator_key\(/ { sec = "allocator" }
        /^static void plugin_key\(/    { sec = "plugin.NAME" }
        /^}/ { sec = "" }
        sec != "" {
            line = $0
            while (match(line, /strcmp\(name, "[a-z_]+"\) == 0/)) {
                k = substr(line, RSTART + 14, RLENGTH - 14)
                sub(/".*/, "", k)
                print sec, k
                line = substr(line, RSTART + RLENGTH)
            }
        }' "$src/loader/config_keys.c" | sort -u >"$T/keys"
    [ "$(wc -l <"$T/keys")" -ge 10 ] || { complain "found only $(wc -l <"$T/keys") keys in config_keys.c"; cat "$T/keys"; }
    # The page's keys, SECTION KEY: a .SS line names the section.
    awk '
        /^\.SH/ { sec = "" }
        /^\.SS \[/ { sec = $2; gsub(/[][]/, "", sec) }
        sec != "" && /^\.BI "[a-z_]+ = "/ { k = $2; sub(/^"/, "", k); print sec, k }
    ' "$page" | sort -u >"$T/page-keys"
    # The README table's keys, SECTION KEY: the section is in the first
    # column of a section's first row; a row may name several keys.
    awk -F'|' '
        /^## / { in_conf = ($0 == "## Configuration") }
        !/^\|/ { sec = "" }
        in_conf && /^\| *`\[/ { sec = $2; gsub(/[][` ]/, "", sec) }
        in_conf && /^\|/ && sec != "" {
            col = $3
            while (match(col, /`[a-z_]+`/)) {
                print sec, substr(col, RSTART + 1, RLENGTH - 2)
                col = substr(col, RSTART + RLENGTH)
            }
        }' "$src/README.md" | sort -u >"$T/readme-keys"
    while read -r sec key; do
        grep -qx "$sec $key" "$T/page-keys" ||
            complain "[$sec] $key (loader/config_keys.c) is not documented in man/infinirt.ini.5.in"
        grep -qx "$sec $key" "$T/readme-keys" ||
            complain "[$sec] $key (loader/config_keys.c) is not in the README's configuration table"
    done <"$T/keys"
    # Environment variables: every one the loader reads.
    # secure_getenv("NAME"), or a wrapper of it, e.g. config_getenv(cfg, "NAME").
    grep -ho 'getenv([^()]*"[A-Z][A-Z0-9_]*")' "$src"/loader/*.c | sed 's/.*"\([A-Z0-9_]*\)")$/\1/' |
        sort -u >"$T/env"
    [ -s "$T/env" ] || complain "found no getenv(\"NAME\") in loader/*.c"
    # The tags of the ENVIRONMENT section's .TP entries.
    awk '/^\.SH/ { env = ($2 == "ENVIRONMENT") } env && tag { print } { tag = env && /^\.TP/ }' "$page" \
        >"$T/page-env"
    while read -r var; do
        grep -qw "$var" "$T/page-env" ||
            complain "$var (read in loader/) is not in man/infinirt.ini.5.in's ENVIRONMENT section"
    done <"$T/env"
    ;;
*)
    echo "man_check.sh: unknown check $check" >&2
    exit 2
    ;;
esac
[ "$bad" -eq 0 ] || exit 1
echo "ok: $check"
