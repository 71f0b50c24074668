#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check_infinicore_clients.sh INFINICORE_SRC INCLUDE_DIR
# Compile InfiniCore's own clients of the infinirt API (g++ -fsyntax-only)
# against the headers in INCLUDE_DIR, in both placements: copied over
# InfiniCore's include/ ("inplace"), and first on the include path before
# InfiniCore's own ("first").  Not run in CI (it needs InfiniCore's source
# and libspdlog-dev, pybind11-dev, nlohmann-json3-dev,
# libboost-stacktrace-dev); see docs/infinicore.md.  Given InfiniCore's own
# include/ as INCLUDE_DIR it is the baseline: every file should compile.
ic=$1 ours=$2
files="src/infinicore/context/context_impl.cc src/infinicore/context/runtime/runtime.cc
src/infinicore/context/allocators/device_pinned_allocator.cc src/infinicore/context/allocators/host_allocator.cc
src/infinicore/context/allocators/pinnable_block_allocator.cc src/infinicore/context/allocators/stream_ordered_allocator.cc
src/infinicore/device_event.cc src/infinicore/graph/graph.cc src/infinicore/analyzer/mutual_awareness_analyzer.cc
src/infiniop/devices/handle.cc src/infiniccl/infiniccl.cc src/infinicore/ops/zeros/zeros_infinirt.cc"
inplace=$(mktemp -d) first=$(mktemp -d)
cp -r "$ic/." "$inplace/"
cp -r "$ic/." "$first/"
cp "$ours/infinirt.h" "$ours/infinicore.h" "$inplace/include/"
# Debian 12's spdlog 1.10 has load_env_levels() without the variable-name
# argument InfiniCore passes: an environment difference, not an API one.
sed -i 's/load_env_levels("[A-Z_]*")/load_env_levels()/' "$inplace/src/infinicore/utils.hpp" "$first/src/infinicore/utils.hpp"
ic=$first
for placement in inplace first; do
    ok=0 n=0
    for f in $files; do
        n=$((n + 1))
        if [ $placement = inplace ]; then
            root=$inplace; inc="-I$inplace/include"
        else
            root=$ic; inc="-I$ours -I$ic/include"
        fi
        if g++ -std=c++17 -fsyntax-only $inc -I"$root/src" -I/usr/include/python3.11 -DENABLE_CPU_API "$root/$f" 2>/tmp/ic-err.$$; then
            ok=$((ok + 1))
        else
            echo "  $placement: $f: $(grep -m1 'error' /tmp/ic-err.$$)"
        fi
    done
    echo "$placement: $ok of $n files compile"
done
rm -rf "$inplace" "$first" /tmp/ic-err.$$
