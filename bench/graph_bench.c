/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_bench.c - launching a captured graph of 100 small operations
 * against issuing the same 100 operations one by one, through the public
 * API, on the CPU plugin with asynchronous (worker-thread) streams and, when
 * the CUDA plugin finds a GPU, on NVIDIA device 0.
 *
 *   infinirt-graph-bench [iterations]      (default 2000)
 *
 * Each timing issues `iterations` rounds (eager: the 100 calls; graph: one
 * infinirtGraphLaunch) and then synchronizes the stream; the figure is the
 * best of 7 such batches, per round.  The operations are 64-byte
 * MemcpyAsync D2D and MemsetAsync, and on the CPU plugin host functions
 * too (a host function stalls a CUDA stream for far longer than the
 * operations measured here, so CUDA's round has none).  Printed per
 * backend: both times, the ratio launch / eager and the issue's target
 * (CPU: <= 1/3; CUDA: launch at least 3x faster, the same bound).
 *
 * The program writes its own config (the CPU plugin with streams = async,
 * and the CUDA plugin when it was built) unless INFINIRT_CONFIG is set.
 * It prints figures; it is not a test.  Exit status 0, or 1 when a call
 * failed or a replay gave wrong results.
 */
#define _GNU_SOURCE
#include "bench_util.h"
#include "infinirt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OPS 100
#define BYTES 64
#define SLOTS 64
#define BATCHES 7
#define TARGET (1.0 / 3.0)

#define MUST(call)                                                                                                 \
    do {                                                                                                           \
        infiniStatus_t st_ = (call);                                                                               \
        if (st_ != INFINI_STATUS_SUCCESS) {                                                                        \
            fprintf(stderr, "graph-bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, infinirtGetErrorName(st_)); \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

static void count_fn(void *counter)
{
    __atomic_add_fetch((long *)counter, 1, __ATOMIC_RELAXED);
}

typedef struct {
    infinirtStream_t s;
    unsigned char *src, *dst; /* SLOTS slots of BYTES bytes each */
    int host_fns;             /* include host functions */
    long count;               /* host-function calls */
    int n_copy, n_set, n_fn;
} work;

/* The 100 operations, in a fixed order. */
static void issue(work *w)
{
    for (int i = 0; i < OPS; i++) {
        int kind = w->host_fns ? i % 3 : i % 2;
        unsigned char *slot = w->dst + (size_t)(i % SLOTS) * BYTES;
        if (kind == 0)
            MUST(infinirtMemcpyAsync(slot, w->src + (size_t)((i + 1) % SLOTS) * BYTES, BYTES, INFINIRT_MEMCPY_D2D,
                                     w->s));
        else if (kind == 1)
            MUST(infinirtMemsetAsync(slot, i & 0xff, BYTES, w->s));
        else
            MUST(infinirtLaunchHostFunc(w->s, count_fn, &w->count));
    }
}

static void count_kinds(work *w)
{
    w->n_copy = w->n_set = w->n_fn = 0;
    for (int i = 0; i < OPS; i++) {
        int kind = w->host_fns ? i % 3 : i % 2;
        w->n_copy += kind == 0;
        w->n_set += kind == 1;
        w->n_fn += kind == 2;
    }
}

/* Best per-round time in ns over BATCHES batches of `iters` rounds. */
static double time_eager(work *w, long iters)
{
    double best = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (long k = 0; k < iters; k++)
            issue(w);
        MUST(infinirtStreamSynchronize(w->s));
        double per = (now_ns() - t0) / (double)iters;
        if (b == 0 || per < best)
            best = per;
    }
    return best;
}

static double time_graph(work *w, infinirtGraphExec_t x, long iters)
{
    double best = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (long k = 0; k < iters; k++)
            MUST(infinirtGraphLaunch(x, w->s));
        MUST(infinirtStreamSynchronize(w->s));
        double per = (now_ns() - t0) / (double)iters;
        if (b == 0 || per < best)
            best = per;
    }
    return best;
}

/* The destination after one round, as the eager issue leaves it. */
static int same_result(work *w, const unsigned char *want)
{
    unsigned char got[SLOTS * BYTES];
    MUST(infinirtMemcpy(got, w->dst, sizeof got, INFINIRT_MEMCPY_D2H));
    return memcmp(got, want, sizeof got) == 0;
}

/* One backend: 0 on success, 1 on a wrong replay, 77 when absent. */
static int run(infiniDevice_t type, const char *label, int host_fns, long iters)
{
    int n = 0;
    if (infinirtGetDeviceCount(type, &n) != INFINI_STATUS_SUCCESS || n < 1) {
        printf("%-22s no device: skipped\n", label);
        return 77;
    }
    MUST(infinirtSetDevice(type, 0));
    work w = {.host_fns = host_fns};
    count_kinds(&w);
    MUST(infinirtStreamCreate(&w.s));
    MUST(infinirtMalloc((void **)&w.src, SLOTS * BYTES));
    MUST(infinirtMalloc((void **)&w.dst, SLOTS * BYTES));
    MUST(infinirtMemset(w.src, 0x3c, SLOTS * BYTES));
    MUST(infinirtMemset(w.dst, 0, SLOTS * BYTES));

    /* The eager result, for checking the replay. */
    unsigned char want[SLOTS * BYTES];
    issue(&w);
    MUST(infinirtStreamSynchronize(w.s));
    MUST(infinirtMemcpy(want, w.dst, sizeof want, INFINIRT_MEMCPY_D2H));

    infinirtGraph_t g;
    infinirtGraphExec_t x;
    char log[4096];
    MUST(infinirtStreamBeginCapture(w.s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    issue(&w);
    MUST(infinirtStreamEndCapture(w.s, &g));
    infiniStatus_t st = infinirtGraphInstantiate(&x, g, NULL, log, sizeof log);
    if (st != INFINI_STATUS_SUCCESS) {
        fprintf(stderr, "graph-bench: instantiate: %s: %s\n", infinirtGetErrorName(st), log);
        exit(1);
    }
    MUST(infinirtMemset(w.dst, 0, SLOTS * BYTES));
    long before = __atomic_load_n(&w.count, __ATOMIC_RELAXED);
    MUST(infinirtGraphLaunch(x, w.s));
    MUST(infinirtStreamSynchronize(w.s));
    if (!same_result(&w, want) || __atomic_load_n(&w.count, __ATOMIC_RELAXED) - before != w.n_fn) {
        fprintf(stderr, "graph-bench: %s: the replay differs from the eager issue\n", label);
        return 1;
    }

    double eager = time_eager(&w, iters);
    double graph = time_graph(&w, x, iters);
    double ratio = graph / eager;
    printf("%-22s eager %9.2f us/round   graph launch %9.2f us/round   launch/eager %.3f "
           "(%.1fx faster; target <= %.3f: %s)\n",
           label, eager / 1e3, graph / 1e3, ratio, eager / graph, TARGET, ratio <= TARGET ? "met" : "MISSED");

    MUST(infinirtGraphExecDestroy(x));
    MUST(infinirtGraphDestroy(g));
    MUST(infinirtStreamDestroy(w.s));
    MUST(infinirtFree(w.src));
    MUST(infinirtFree(w.dst));
    return 0;
}

static void write_config(void)
{
    if (getenv("INFINIRT_CONFIG") != NULL) {
        printf("config: %s (INFINIRT_CONFIG)\n", getenv("INFINIRT_CONFIG"));
        return;
    }
    char path[] = "/tmp/infinirt-graph-bench-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (f == NULL) {
        perror("graph-bench: config");
        exit(1);
    }
    fprintf(f, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
#ifdef CUDA_PLUGIN
    fprintf(f, "\n[plugin.cuda]\nlibrary = %s\n", CUDA_PLUGIN);
#endif
    fclose(f);
    setenv("INFINIRT_CONFIG", path, 1);
    MUST(infinirtInit()); /* the loader has read it: the file can go */
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (argv[1][0] < '0' || argv[1][0] > '9'))) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr, "usage: %s [ITERATIONS]   (default 2000)\n", argv[0]);
        return help ? 0 : 2;
    }
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    if (iters <= 0)
        iters = 2000;
    write_config();
    MUST(infinirtInit());
    work probe = {.host_fns = 1};
    count_kinds(&probe);
    printf("graph-bench: %d operations per round (%d MemcpyAsync D2D, %d MemsetAsync of %d B, %d host functions; "
           "CUDA: the copies and memsets alternate, no host functions), %ld rounds, best of %d batches\n",
           OPS, probe.n_copy, probe.n_set, BYTES, probe.n_fn, iters, BATCHES);
    int rc = run(INFINI_DEVICE_CPU, "cpu:0 (streams=async)", 1, iters);
    if (rc == 1)
        return 1;
    rc = run(INFINI_DEVICE_NVIDIA, "nvidia:0", 0, iters);
    return rc == 1 ? 1 : 0;
}
