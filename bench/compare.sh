#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/compare.sh [BASELINE_REV] - single-call costs of this build against
# a baseline build of an older revision and, when INFINICORE_SRC names a
# checkout of InfiniCore, against InfiniCore's own CPU runtime; all in one
# run, interleaved, with the ratios.
#
#   BUILD=build INFINICORE_SRC=/path/to/InfiniCore sh bench/compare.sh 372aeae
#
# The same binary (infinirt-api-bench, which calls only functions InfiniCore
# declares) runs against each library through LD_LIBRARY_PATH.  Both builds
# of this project load the CPU plugin of the current build, so the figures
# differ only by the loader.  ROUNDS (default 5) rounds, each case run once
# per library per round, in turn; each run reports its best batch, and the
# table shows the median over rounds.  CASES chooses the cases (default:
# all of infinirt-api-bench's seven).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build}" && pwd)
rev=${1:-372aeae}
rounds=${ROUNDS:-5}
calls=${CALLS:-500000}
bench=$build/bin/infinirt-api-bench
[ -x "$bench" ] || { echo "compare.sh: build $bench first" >&2; exit 2; }
tmp=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT

# The baseline's allocator built as BUILD's is: a build with the tests has
# the lock checks and the fault hooks on by default (loader/alloc/CMakeLists.txt),
# which cost Malloc + Free some 15 instructions; a baseline without them
# would be measured against a cheaper allocator than the library's own.
cached() { # option: its value in BUILD's cache (OFF when not set)
    v=$(sed -n "s/^$1:BOOL=//p" "$build/CMakeCache.txt" 2>/dev/null)
    echo "${v:-OFF}"
}
checks="-DINFINIRT_LOCK_CHECKS=$(cached INFINIRT_LOCK_CHECKS) -DINFINIRT_ALLOC_FAULTS=$(cached INFINIRT_ALLOC_FAULTS)"
echo "baseline: building revision $rev ($checks, as $build) ..." >&2
git -C "$root" worktree add --detach "$tmp/base" "$rev" >/dev/null 2>&1
cmake -S "$tmp/base" -B "$tmp/base/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINFINIRT_BUILD_TESTS=OFF \
    -DINFINIRT_BUILD_EXAMPLES=OFF -DINFINIRT_BUILD_BENCH=OFF -DINFINIRT_PLUGIN_OPENCL=OFF \
    -DINFINIRT_PLUGIN_CUDA=OFF $checks >"$tmp/base.log" 2>&1
cmake --build "$tmp/base/build" -j2 --target infinirt >>"$tmp/base.log" 2>&1 ||
    { cat "$tmp/base.log" >&2; exit 1; }
mkdir -p "$tmp/lib-base"
cp -L "$tmp/base/build/lib/libinfinirt.so.0" "$tmp/lib-base/"

cfg=$tmp/cpu.ini
printf '[plugin.cpu]\nlibrary = %s\ndevices = 1\n' "$build/lib/infinirt/libinfinirt_cpu.so" >"$cfg"

libs="current base"
if [ -n "${INFINICORE_SRC:-}" ]; then
    echo "infinicore: building its CPU runtime from $INFINICORE_SRC ..." >&2
    sh "$root/bench/infinicore_cpu_lib.sh" "$INFINICORE_SRC" "$tmp/lib-infinicore"
    libs="$libs infinicore"
fi

# Every run on one CPU (BENCH_CPU, default 0): on a shared VM the CPUs
# differ in speed by up to 2x, more than the libraries do.
pin=
command -v taskset >/dev/null 2>&1 && pin="taskset -c ${BENCH_CPU:-0}"
run() { # lib case
    case $1 in
    current) INFINIRT_CONFIG=$cfg $pin "$bench" "$2" "$calls" ;;
    base) LD_LIBRARY_PATH=$tmp/lib-base INFINIRT_CONFIG=$cfg $pin "$bench" "$2" "$calls" ;;
    infinicore) LD_LIBRARY_PATH=$tmp/lib-infinicore $pin "$bench" "$2" "$calls" ;;
    esac | awk '{ print $2 }'
}

cases=${CASES:-"event_query stream_sync memcpy_h2d memcpy_d2h memcpy_async malloc_free event_record"}
for r in $(seq "$rounds"); do
    for c in $cases; do
        for l in $libs; do
            echo "$c $l $(run "$l" "$c")" >>"$tmp/results"
        done
    done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-12s %12s %12s %12s %14s %16s\n' case "current ns" "base ns" "infinicore ns" "current/base" "current/infinicore"
for c in $cases; do
    cur=$(awk -v c="$c" '$1 == c && $2 == "current" { print $3 }' "$tmp/results" | median)
    base=$(awk -v c="$c" '$1 == c && $2 == "base" { print $3 }' "$tmp/results" | median)
    ic=-
    [ -n "${INFINICORE_SRC:-}" ] && ic=$(awk -v c="$c" '$1 == c && $2 == "infinicore" { print $3 }' "$tmp/results" | median)
    awk -v c="$c" -v a="$cur" -v b="$base" -v i="$ic" 'BEGIN {
        printf "%-12s %12.1f %12.1f %12s %14.2f %16s\n", c, a, b, i, a / b, (i == "-") ? "-" : sprintf("%.2f", a / i) }'
done
echo "(median of $rounds rounds of $calls calls, best of 7 batches each, ${pin:-unpinned}; baseline revision $rev)"
