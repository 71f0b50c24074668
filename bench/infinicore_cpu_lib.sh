#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/infinicore_cpu_lib.sh SRC OUTDIR - builds InfiniCore's own CPU
# runtime from the InfiniCore checkout SRC into OUTDIR/libinfinirt.so.0, for
# the comparison scripts (compare.sh, cpu_compare.sh) to load in place of
# ours through LD_LIBRARY_PATH.  Nothing of InfiniCore is kept in this tree.
set -eu
src=$1 out=$2
[ -f "$src/src/infinirt/cpu/infinirt_cpu.cc" ] ||
    { echo "infinicore_cpu_lib.sh: $src is not an InfiniCore checkout (no src/infinirt/cpu/infinirt_cpu.cc)" >&2; exit 2; }
mkdir -p "$out"
g++ -std=c++17 -O2 -fPIC -shared -Wl,-soname,libinfinirt.so.0 -I"$src/include" -DENABLE_CPU_API \
    "$src/src/infinirt/infinirt.cc" "$src/src/infinirt/cpu/infinirt_cpu.cc" -o "$out/libinfinirt.so.0"
