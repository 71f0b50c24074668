#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/cpu_compare.sh INFINICORE_SRC - the rows of infinirt-cpu-bench for
# this build (inline and async CPU streams) side by side with InfiniCore's
# own CPU runtime, built from the InfiniCore checkout INFINICORE_SRC.  Not
# part of CI; nothing of InfiniCore is committed.
#
#   BUILD=build ROUNDS=3 sh bench/cpu_compare.sh /path/to/InfiniCore
#
# The same binary runs against both libraries (LD_LIBRARY_PATH); each round
# runs each library once, in turn, and the table shows the median of the
# rounds, with infinirt / InfiniCore ratios.  The first-call row is a
# fresh process each time (infinirt-cpu-bench --first-call).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 INFINICORE_SRC" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build}" && pwd)
rounds=${ROUNDS:-3}
bench=$build/bin/infinirt-cpu-bench
plugin=$build/lib/infinirt/libinfinirt_cpu.so
[ -x "$bench" ] && [ -f "$plugin" ] || { echo "cpu_compare.sh: build $bench and $plugin first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "infinicore: building its CPU runtime from $1 ..." >&2
sh "$root/bench/infinicore_cpu_lib.sh" "$1" "$tmp/ic"
for mode in inline async; do
    printf '[loader]\nplugins = cpu\n\n[plugin.cpu]\nlibrary = %s\nstreams = %s\n' "$plugin" "$mode" >"$tmp/$mode.ini"
done

first() { # label, then the environment to run under
    label=$1
    shift
    for i in 1 2 3 4 5; do env "$@" "$bench" --first-call; done |
        sort -n | sed -n 3p | awk -v l="$label" '{ print l, "first_call", $1 }'
}
for r in $(seq "$rounds"); do
    echo "round $r of $rounds ..." >&2
    for mode in inline async; do
        INFINIRT_CONFIG=$tmp/$mode.ini "$bench" --rows "$mode" >>"$tmp/rows"
    done
    LD_LIBRARY_PATH=$tmp/ic "$bench" --rows infinicore >>"$tmp/rows"
    first inline INFINIRT_CONFIG="$tmp/inline.ini" >>"$tmp/rows"
    first infinicore LD_LIBRARY_PATH="$tmp/ic" >>"$tmp/rows"
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-13s %12s %12s %14s %13s %13s\n' row inline async infinicore inline/ic async/ic
for row in copy_sync_1 copy_sync_4 event_idle event_cycle stream_cycle threads_1000 d2d64 h2d64 d2h64 \
    cmalloc64 cmalloc4k two_threads destroy_1000 destroy_20000 rr_1 rr_1000 first_call memcpy64 malloc64 malloc4k \
    pthread handoff \
    h2d_static h2d_between d2h_static d2h_between h2da_static h2da_between d2ha_static d2ha_between \
    op_step op_host null_malloc_1t null_malloc_2t null_malloc_4t null_malloc_2x null_malloc_4x \
    libc_malloc_2x libc_malloc_4x; do
    get() { awk -v l="$1" -v r="$row" '$1 == l && $2 == r { print $3 }' "$tmp/rows" | median; }
    i=$(get inline) a=$(get async) c=$(get infinicore)
    [ -n "$a" ] || a=-
    awk -v r="$row" -v i="$i" -v a="$a" -v c="$c" 'BEGIN {
        printf "%-13s %12s %12s %14s %13.2f %13s\n", r, i, a, c, i / c, (a == "-") ? "-" : sprintf("%.2f", a / c) }'
done
echo "(times in ns per operation, first_call in ns, threads_1000 a count, two_threads a speed-up;"
echo " null_malloc_Nt: each of N threads' CPU ns per MallocAsync+FreeAsync 64 B on the NULL stream, N at once;"
echo " null_malloc_Nx: that over one thread's; libc_malloc_Nx: the same for glibc malloc+free, the machine's own;"
echo " median of $rounds rounds; first_call: inline config, median of 5 processes per round)"
