#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run-cuda-checks.sh - the CUDA backend's checks on a machine with an NVIDIA
# GPU, in one command that ends within a time budget:
#
#   tests/gpu/run-cuda-checks.sh [options] [BUILD_DIR] [-- CMAKE_ARG...]
#
#   BUILD_DIR     build folder (default build-gpu)
#   -G GENERATOR  CMake generator (default: Ninja when ninja is on PATH, else
#                 CMake's default); env GENERATOR
#   -o LOG_DIR    where the logs go (default BUILD_DIR/cuda-checks-<time>);
#                 env LOG_DIR
#   -t SECONDS    the most any one test may run (default 60); env TEST_TIMEOUT
#   -b SECONDS    the budget of the whole run (default 570); env BUDGET
#   -j JOBS       build and CPU-test parallelism (default nproc); env JOBS
#   -- ...        passed to CMake's configure as they are, e.g.:
#                 -DINFINIRT_TEST_TIMEOUT=60
#
# Steps: configure (the CUDA plugin, tests and benches on), build,
# infinirt-info, the `cuda` tests that need no GPU (in parallel), the `gpu`
# tests (one at a time: they share the GPU), then the benches
# (infinirt-cuda-bench, infinirt-graph-bench).  Every test runs once: its
# time limit is capped at -t (INFINIRT_TEST_TIMEOUT, since `ctest --timeout`
# does not shorten a limit a test sets itself), ctest stops starting tests
# when the budget less the benches' share is spent, and the benches get what
# is left.  A later step still runs after an earlier one failed.
#
# Logs in LOG_DIR: cuda-checks.log (everything printed), ctest-cuda.log and
# ctest-gpu.log (ctest's output), ctest-*.xml (JUnit, CMake >= 3.21),
# bench-cuda.log, bench-graph.log, and summary.txt (one line per step).
#
# A GPU test that finds no device fails instead of skipping (the machine is
# meant to have one), and so does the bench; REQUIRE_GPU=0 lets them skip
# (exit 77), to try the command on a machine without a GPU.
#
# Environment also: CUDA_HOME (default /usr/local/cuda, else the toolkit of
# the nvcc on PATH), BUILD_TYPE (default Release), BENCH_REPS (default 20),
# GRAPH_BENCH_ITERS (default 2000).
# Exit status: 0 when every step passed (or skipped with REQUIRE_GPU=0).
set -u -o pipefail
t0=$(date +%s)

usage() { sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
generator=${GENERATOR:-}
log_dir=${LOG_DIR:-}
test_timeout=${TEST_TIMEOUT:-60}
budget=${BUDGET:-570}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
while getopts "G:o:t:b:j:h" opt; do
    case $opt in
        G) generator=$OPTARG ;;
        o) log_dir=$OPTARG ;;
        t) test_timeout=$OPTARG ;;
        b) budget=$OPTARG ;;
        j) jobs=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
build=$root/build-gpu
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || usage
    shift
fi
cmake_args=("$@")
for n in "$test_timeout" "$budget" "$jobs"; do
    case $n in '' | *[!0-9]*) echo "run-cuda-checks: not a number: '$n'" >&2; exit 2 ;; esac
done
if [ -z "$generator" ] && command -v ninja >/dev/null; then generator=Ninja; fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -z "${CUDA_HOME:-}" ] && [ ! -x "$cuda/bin/nvcc" ] && command -v nvcc >/dev/null; then
    cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")") # the toolkit of the nvcc on PATH
fi
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)
log_dir=${log_dir:-$build/cuda-checks-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$log_dir" || exit 1
log_dir=$(cd "$log_dir" && pwd)
log=$log_dir/cuda-checks.log
summary=$log_dir/summary.txt
: >"$summary"
exec > >(tee -a "$log") 2>&1
tee_pid=$!
trap 'exec >&- 2>&-; wait $tee_pid 2>/dev/null' EXIT # the log complete when we exit

require_gpu=${REQUIRE_GPU:-1}
failed=()
step() { # step NAME COMMAND...: run, time, report; 77 is a skip unless a GPU is required
    local name=$1 rc st t
    t=$(date +%s)
    shift
    echo
    echo "=== $name: $*"
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then
        st=ok
    elif [ $rc -eq 77 ] && [ "$require_gpu" = 0 ]; then
        st=skipped
    else
        st="FAILED (exit $rc)"
        failed+=("$name")
    fi
    echo "=== $name: $st"
    echo "$name: $st ($(($(date +%s) - t)) s)" >>"$summary"
    return "$rc"
}
left() { echo $((t0 + budget - $(date +%s))); } # seconds of the budget left

echo "infinirt CUDA checks, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "repo:  $root ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
echo "build: $build (generator: ${generator:-CMake default}, jobs: $jobs)"
echo "logs:  $log_dir"
echo "limits: $test_timeout s a test, $budget s in all"
uname -a
cmake --version | head -1
${CC:-cc} --version | head -1
if [ -x "$cuda/bin/nvcc" ]; then "$cuda/bin/nvcc" --version | tail -2; else echo "no nvcc under $cuda"; fi
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv
else
    echo "nvidia-smi not found (is the driver installed?)"
fi

# A GPU test that finds no device is a failure, not a skip.
[ "$require_gpu" = 0 ] || export INFINIRT_CUDA_TEST_REQUIRE_GPU=1

# nvcc builds the kernel tests (tests/cuda/kernels_test.cu), found even when
# it is not on PATH.
gen_arg=()
[ -z "$generator" ] || gen_arg=(-G "$generator")
nvcc_arg=()
[ -x "$cuda/bin/nvcc" ] && nvcc_arg=(-DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc")
step configure cmake -S "$root" -B "$build" ${gen_arg[@]+"${gen_arg[@]}"} \
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
    -DCUDAToolkit_ROOT="$cuda" ${nvcc_arg[@]+"${nvcc_arg[@]}"} \
    -DINFINIRT_PLUGIN_CUDA=ON -DINFINIRT_BUILD_TESTS=ON -DINFINIRT_BUILD_BENCH=ON \
    -DINFINIRT_TEST_TIMEOUT="$test_timeout" ${cmake_args[@]+"${cmake_args[@]}"} || {
    echo "configure failed; see above (log: $log)"
    exit 1
}
step build cmake --build "$build" -j "$jobs" || {
    echo "build failed; see above (log: $log)"
    exit 1
}

if [ -x "$build/bin/infinirt-info" ]; then
    step infinirt-info "$build/bin/infinirt-info"
fi

# The benches get their share at the end: ctest starts no test after
# stop_at and cuts a running test's limit to it.
bench_share=60
stop_arg=()
stop_at=$(date -d "@$((t0 + budget - bench_share))" +%H:%M:%S 2>/dev/null) && stop_arg=(--stop-time "$stop_at")
junit=0
case "$(ctest --help)" in *--output-junit*) junit=1 ;; esac
ctest_run() { # ctest_run NAME CTEST_ARG...: logs LOG_DIR/NAME.log (and .xml)
    local name=$1 extra=()
    shift
    if [ "$(left)" -le "$bench_share" ]; then
        echo "no time left for $name"
        return 124
    fi
    [ "$junit" = 0 ] || extra=(--output-junit "$log_dir/$name.xml")
    (cd "$build" && ctest "$@" --timeout "$test_timeout" ${stop_arg[@]+"${stop_arg[@]}"} \
        --output-on-failure --no-tests=error -O "$log_dir/$name.log" ${extra[@]+"${extra[@]}"}) || return
    # Tests never started for want of time are a failure, even when ctest
    # passed all it ran.
    ! grep -q 'stop time has been passed' "$log_dir/$name.log"
}
gpu_tests() { # a test that finds no GPU fails (INFINIRT_CUDA_TEST_REQUIRE_GPU);
    # the skips left need more than the machine has (a second GPU): listed
    local rc skipped
    ctest_run ctest-gpu -L gpu
    rc=$?
    skipped=$(grep -c '(Skipped)' "$log_dir/ctest-gpu.log" 2>/dev/null)
    if [ "${skipped:-0}" -gt 0 ]; then
        echo "gpu tests skipped (they need a second GPU or a foreign allocator):"
        grep '(Skipped)' "$log_dir/ctest-gpu.log"
        echo "ctest-gpu: ${skipped} skipped" >>"$summary"
    fi
    return "$rc"
}
step ctest-cuda ctest_run ctest-cuda -L cuda -LE gpu -j "$jobs"
step ctest-gpu gpu_tests

# The benches: infinirt-cuda-bench is built by the project when bench/cuda
# is part of the build, else built here by hand from the same source.
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
bench_run() { # bench_run LOG COMMAND...: within the budget left
    local log=$1 s
    shift
    s=$(left)
    [ "$s" -gt 5 ] || { echo "no time left"; return 124; }
    timeout -k 5 "$s" "$@" | tee "$log"
}
if [ -x "$bench" ]; then
    step bench-cuda bench_run "$log_dir/bench-cuda.log" "$bench" "${BENCH_REPS:-20}"
fi
if [ -x "$build/bin/infinirt-graph-bench" ]; then
    step bench-graph bench_run "$log_dir/bench-graph.log" "$build/bin/infinirt-graph-bench" \
        "${GRAPH_BENCH_ITERS:-2000}"
fi

echo
echo "total: $(($(date +%s) - t0)) s" | tee -a "$summary"
if [ ${#failed[@]} -eq 0 ]; then
    echo "ALL CUDA CHECKS PASSED (logs: $log_dir)"
    exit 0
fi
echo "FAILED: ${failed[*]} (logs: $log_dir)"
exit 1
