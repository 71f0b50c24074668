#!/usr/bin/env bash
# run-cuda-checks.sh - the CUDA backend's checks on a machine with an NVIDIA
# GPU, in one command:
#
#   tests/gpu/run-cuda-checks.sh [BUILD_DIR]
#
# Configures and builds this repository (it needs cmake, a C compiler, the
# CUDA Toolkit and inih: `apt-get install libinih-dev`; on a machine without
# network, `apt-get download libinih1 libinih-dev` elsewhere and
# `dpkg -i` the two files), runs `ctest -L cuda` and `ctest -L gpu` and the
# CUDA bench, and tees everything to a log in BUILD_DIR (default
# build-gpu).  On this machine a GPU test that finds no device fails instead
# of skipping.  Exit status: 0 when every step passed.
#
# Environment: CUDA_HOME (default /usr/local/cuda), BUILD_TYPE (default
# Release), JOBS (default nproc), BENCH_REPS (default 20).
set -u -o pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)
log=$build/cuda-checks-$(date +%Y%m%d-%H%M%S).log
exec > >(tee -a "$log") 2>&1

failed=()
step() { # step NAME COMMAND...: run, report, remember failures
    local name=$1 rc
    shift
    echo
    echo "=== $name: $*"
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "=== $name: ok"
    else
        echo "=== $name: FAILED (exit $rc)"
        failed+=("$name")
    fi
    return $rc
}

echo "infinirt CUDA checks, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "repo:  $root ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
echo "build: $build"
echo "log:   $log"
uname -a
cmake --version | head -1
${CC:-cc} --version | head -1
if [ -x "$cuda/bin/nvcc" ]; then "$cuda/bin/nvcc" --version | tail -2; else echo "no nvcc under $cuda"; fi
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv
else
    echo "nvidia-smi not found (is the driver installed?)"
fi

# A GPU test that finds no device on this machine is a failure, not a skip.
export INFINIRT_CUDA_TEST_REQUIRE_GPU=1

# nvcc builds the kernel tests (tests/cuda/kernels_test.cu), found even when
# it is not on PATH.
nvcc_arg=()
if [ -x "$cuda/bin/nvcc" ]; then nvcc_arg=(-DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc"); fi
step configure cmake -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
    -DCUDAToolkit_ROOT="$cuda" ${nvcc_arg[@]+"${nvcc_arg[@]}"} \
    -DINFINIRT_PLUGIN_CUDA=ON -DINFINIRT_BUILD_TESTS=ON -DINFINIRT_BUILD_BENCH=ON || {
    echo "configure failed; see above"
    exit 1
}
step build cmake --build "$build" -j "$jobs" || {
    echo "build failed; see above"
    exit 1
}

if [ -x "$build/bin/infinirt-info" ]; then
    step infinirt-info "$build/bin/infinirt-info"
fi

step ctest-cuda bash -c "cd '$build' && ctest -L cuda --output-on-failure --no-tests=error"
# On a GPU machine a skipped gpu test means a device went missing: a failure.
step ctest-gpu bash -c "cd '$build' && ctest -L gpu --output-on-failure --no-tests=error | tee ctest-gpu.out;
    rc=\${PIPESTATUS[0]}; if grep -q 'Skipped' ctest-gpu.out; then echo 'gpu tests were SKIPPED'; exit 1; fi; exit \$rc"

# The bench: built by the project when bench/cuda is part of the build, else
# built here by hand from the same source.
bench=$build/bin/infinirt-cuda-bench
if [ ! -x "$bench" ]; then
    echo
    echo "=== bench not built by the project; building it by hand"
    bench=$build/infinirt-cuda-bench-manual
    libdir=$(dirname "$(find "$build" -name 'libinfinirt.so' -print -quit)")
    step build-bench "${CC:-cc}" -std=c11 -O2 -o "$bench" "$root/bench/cuda_bench.c" \
        -I"$root/include" -I"$cuda/include" \
        -L"$libdir" -linfinirt -Wl,-rpath,"$libdir" \
        "$cuda/lib64/libcudart_static.a" -ldl -lpthread -lrt
fi
if [ -x "$bench" ]; then
    step bench "$bench" "${BENCH_REPS:-20}"
fi

echo
if [ ${#failed[@]} -eq 0 ]; then
    echo "ALL CUDA CHECKS PASSED (log: $log)"
    exit 0
fi
echo "FAILED: ${failed[*]} (log: $log)"
exit 1
