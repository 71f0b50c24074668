#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check_symbols.sh LOADER PLUGIN...
# The loader exports the public API (infinirt*) and nothing else; each plugin
# exports only infinirtPluginEntry.  Fails listing any other defined dynamic
# symbol.
set -eu
fail=0
defined() { nm -D --defined-only "$1" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u; }
loader=$1
shift
extra=$(defined "$loader" | grep -v '^infinirt[A-Z]' | grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' || true)
if [ -n "$extra" ]; then
    echo "FAIL: $loader exports non-API symbols:"; echo "$extra"; fail=1
fi
n=$(defined "$loader" | grep -c '^infinirt[A-Z]' || true)
[ "$n" -ge 30 ] || { echo "FAIL: $loader exports only $n API symbols"; fail=1; }
for p in "$@"; do
    got=$(defined "$p" | grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' || true)
    if [ "$got" != "infinirtPluginEntry" ]; then
        echo "FAIL: $p exports:"; echo "$got"; fail=1
    fi
done
[ $fail = 0 ] && echo "symbols ok: $loader exports $n API functions; plugins export only infinirtPluginEntry"
exit $fail
