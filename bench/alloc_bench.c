/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_bench.c - the caching allocator's benchmark.  One run prints:
 *   1. same-size alloc+free pair latency, median and p99 (each pair timed on
 *      its own with the TSC, timer overhead subtracted): the pool API, glibc
 *      malloc+free, and - when built with the loader - infinirtMalloc/Free
 *      with the cache on and off (CPU plugin);
 *   2. the random workload modelled on RMM's random_allocations benchmark:
 *      N in {1e3, 1e4, 1e5} x max size in {1, 4, 64, 256} MiB, sizes uniform
 *      from 1 byte, 73% allocations, fixed seed, live bytes capped at 4000
 *      MiB; ns per operation on a warm pool, and worst/best;
 *   3. fragmentation: for each cell, the smallest raw-memory limit under
 *      which the trace completes (binary search) over its peak live bytes;
 *   4. throughput of two threads, each on its own stream, over one thread.
 *
 * Parts 2 and 3 are in alloc_bench_trace.c, part 4 in alloc_bench_threads.c.
 * Pool parts use the allocator (loader/alloc/) directly over a host-memory
 * backend (raw allocations from malloc; fragmentation uses a byte-counting
 * backend over reserved address space).  The public-API parts need libinfinirt and
 * INFINIRT_CONFIG naming a config with the CPU plugin; build with
 * -DALLOC_BENCH_NO_API to leave them out.  The config with the cache off is
 * INFINIRT_BENCH_NOCACHE_CONFIG, or INFINIRT_CONFIG plus "[allocator]
 * enabled = false" written to a temporary file.
 *
 * Usage: alloc_bench [--quick] [--frag-n N]   (N: fragmentation for that N only)
 *        alloc_bench --cell N MAX_MIB            (one timing cell, for profilers)
 */
#define _GNU_SOURCE
#include "alloc_bench.h"
#ifndef ALLOC_BENCH_NO_API
#include "infinirt.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

int g_quick;

/* ---------------------------------------------------------------- timing */

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t tsc(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static double g_ns_per_tick;
static double g_tsc_overhead; /* ticks of an empty timed region */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void calibrate(void)
{
    double t0 = now_s();
    uint64_t c0 = tsc();
    while (now_s() - t0 < 0.05)
        ;
    g_ns_per_tick = (now_s() - t0) * 1e9 / (double)(tsc() - c0);
    uint64_t d[10000];
    for (int i = 0; i < 10000; i++) {
        uint64_t a = tsc();
        d[i] = tsc() - a;
    }
    qsort(d, 10000, sizeof d[0], cmp_u64);
    g_tsc_overhead = (double)d[5000];
}

typedef struct {
    double median, p99, mean;
} lat;

#define PAIRS 400000
#define PAIR_GROUP 8

/* Median/p99 per pair from group ticks, minus the timer's own cost. */
static lat summarize(uint64_t *d, size_t n, double total_s)
{
    qsort(d, n, sizeof d[0], cmp_u64);
    lat l;
    double m = (double)d[n / 2] - g_tsc_overhead, p = (double)d[n * 99 / 100] - g_tsc_overhead;
    l.median = (m > 0 ? m : 0) * g_ns_per_tick / PAIR_GROUP;
    l.p99 = (p > 0 ? p : 0) * g_ns_per_tick / PAIR_GROUP;
    l.mean = total_s * 1e9 / PAIRS;
    return l;
}

#define TIME_PAIRS(result, ALLOC, FREE)                              \
    do {                                                             \
        static uint64_t d_[PAIRS / PAIR_GROUP];                      \
        for (int i_ = 0; i_ < 20000; i_++) {                         \
            ALLOC;                                                   \
            FREE;                                                    \
        }                                                            \
        for (int i_ = 0; i_ < PAIRS / PAIR_GROUP; i_++) {            \
            uint64_t a_ = tsc();                                     \
            for (int k_ = 0; k_ < PAIR_GROUP; k_++) {                \
                ALLOC;                                               \
                FREE;                                                \
            }                                                        \
            d_[i_] = tsc() - a_;                                     \
        }                                                            \
        double t0_ = now_s();                                        \
        for (int i_ = 0; i_ < PAIRS; i_++) {                         \
            ALLOC;                                                   \
            FREE;                                                    \
        }                                                            \
        (result) = summarize(d_, PAIRS / PAIR_GROUP, now_s() - t0_); \
    } while (0)

/* ------------------------------------------------------- host backend */

static infiniStatus_t host_alloc(void *ctx, size_t size, void **p)
{
    (void)ctx;
    *p = malloc(size);
    return *p ? INFINI_STATUS_SUCCESS : INFINI_STATUS_OUT_OF_MEMORY;
}
static infiniStatus_t host_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
    return INFINI_STATUS_SUCCESS;
}
/* As the loader's fences when nothing is in flight: no fence. */
static infiniStatus_t host_fence_take(void *ctx, void *stream, infinirt__fence **out)
{
    (void)ctx;
    (void)stream;
    *out = NULL;
    return INFINI_STATUS_SUCCESS;
}
static infiniStatus_t host_fence_take_all(void *ctx, infinirt__fence **out)
{
    (void)ctx;
    *out = NULL;
    return INFINI_STATUS_SUCCESS;
}
static infiniStatus_t host_fence_query(void *ctx, infinirt__fence *f, int *done)
{
    (void)ctx;
    (void)f;
    *done = 1;
    return INFINI_STATUS_SUCCESS;
}
static infiniStatus_t host_fence_wait(void *ctx, infinirt__fence *f)
{
    (void)ctx;
    (void)f;
    return INFINI_STATUS_SUCCESS;
}
static void host_fence_release(void *ctx, infinirt__fence *f)
{
    (void)ctx;
    (void)f;
}

infinirt__pool_backend host_backend(void)
{
    infinirt__pool_backend be = {
        .raw_alloc = host_alloc,
        .raw_free = host_free,
        .fence_take = host_fence_take,
        .fence_take_all = host_fence_take_all,
        .fence_query = host_fence_query,
        .fence_wait = host_fence_wait,
        .fence_release = host_fence_release,
        .status_name = infinirtGetErrorName,
        .label = "bench host",
        .device_id = 0,
    };
    return be;
}

infinirt__pool *new_pool(infinirt__pool_backend *be, int enabled)
{
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.enabled = enabled;
    infinirt__pool *p;
    if (infinirt__pool_create(be, &cfg, &p) != INFINI_STATUS_SUCCESS) {
        fprintf(stderr, "pool_create failed\n");
        exit(1);
    }
    return p;
}

/* -------------------------------------------------------- 1. pair latency */

static void print_lat(const char *what, lat l)
{
    printf("  %-46s %8.1f %8.1f %8.1f\n", what, l.median, l.p99, l.mean);
}

static void bench_pairs(void)
{
    printf("\n1. Same-size alloc+free pair, one thread, nothing in flight (ns per pair; median and p99\n"
           "   over groups of %d pairs timed together, mean over %d untimed pairs)\n",
           PAIR_GROUP, PAIRS);
    printf("  %-46s %8s %8s %8s\n", "", "median", "p99", "mean");
    infinirt__pool_backend be = host_backend();
    size_t sizes[] = {4096, MiB};
    for (int k = 0; k < 2; k++) {
        size_t size = sizes[k];
        char name[64];
        infinirt__pool *pool = new_pool(&be, 1);
        void *p;
        lat l;
        TIME_PAIRS(l, infinirt__pool_alloc(pool, size, INFINIRT__POOL_SYNC, &p),
                   infinirt__pool_free_sync(p, infinirt__want_any()));
        snprintf(name, sizeof name, "pool alloc + free_sync, %zu B", size);
        print_lat(name, l);
        infinirt__pool_destroy(pool);
        pool = new_pool(&be, 0);
        TIME_PAIRS(l, infinirt__pool_alloc(pool, size, INFINIRT__POOL_SYNC, &p),
                   infinirt__pool_free_sync(p, infinirt__want_any()));
        snprintf(name, sizeof name, "pool, cache off (pass-through), %zu B", size);
        print_lat(name, l);
        infinirt__pool_destroy(pool);
        void *volatile q;
        TIME_PAIRS(l, q = malloc(size), free(q));
        snprintf(name, sizeof name, "glibc malloc + free, %zu B", size);
        print_lat(name, l);
    }
}

#ifndef ALLOC_BENCH_NO_API
/* Runs in a child process: the loader reads its config once per process. */
static void api_pairs_child(int fd, const char *config)
{
    setenv("INFINIRT_CONFIG", config, 1);
    lat res[2];
    size_t sizes[] = {4096, MiB};
    void *p;
    for (int k = 0; k < 2; k++) {
        if (infinirtMalloc(&p, sizes[k]) != INFINI_STATUS_SUCCESS)
            _exit(1);
        infinirtFree(p);
        TIME_PAIRS(res[k], infinirtMalloc(&p, sizes[k]), infinirtFree(p));
    }
    if (write(fd, res, sizeof res) != (ssize_t)sizeof res)
        _exit(1);
    _exit(0);
}

static int api_pairs(const char *config, lat res[2])
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        api_pairs_child(fds[1], config);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], res, 2 * sizeof *res);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return n == (ssize_t)(2 * sizeof *res) && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static const char *nocache_config(const char *config)
{
    const char *given = getenv("INFINIRT_BENCH_NOCACHE_CONFIG");
    if (given != NULL)
        return given;
    static char path[] = "/tmp/alloc_bench_nocache_XXXXXX.ini";
    int fd = mkstemps(path, 4);
    FILE *in = fopen(config, "r");
    if (fd < 0 || in == NULL)
        return NULL;
    FILE *out = fdopen(fd, "w");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fprintf(out, "\n[allocator]\nenabled = false\n");
    fclose(in);
    fclose(out);
    return path;
}

static void bench_api_pairs(void)
{
    const char *config = getenv("INFINIRT_CONFIG");
    if (config == NULL) {
        printf("  (public API: INFINIRT_CONFIG is not set; skipped)\n");
        return;
    }
    lat on[2], off[2];
    const char *nc = nocache_config(config);
    if (api_pairs(config, on) != 0 || nc == NULL || api_pairs(nc, off) != 0) {
        printf("  (public API: infinirtMalloc failed with INFINIRT_CONFIG=%s; skipped)\n", config);
        return;
    }
    print_lat("infinirtMalloc + infinirtFree, 4096 B", on[0]);
    print_lat("infinirtMalloc + infinirtFree, cache off, 4096 B", off[0]);
    print_lat("infinirtMalloc + infinirtFree, 1048576 B", on[1]);
    print_lat("infinirtMalloc + infinirtFree, cache off, 1 MiB", off[1]);
    if (getenv("INFINIRT_BENCH_NOCACHE_CONFIG") == NULL)
        unlink(nc);
}
#endif

/* ------------------------------------------------------------------ main */

static void print_machine(int argc, char **argv)
{
    struct utsname u;
    uname(&u);
    char model[256] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            snprintf(model, sizeof model, "%.200s", c ? c + 2 : line);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f != NULL)
        fclose(f);
    printf("alloc_bench:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\nmachine: %s, %ld cores, %s %s; TSC %.3f GHz, timer overhead %.0f ticks subtracted\n", model,
           sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, 1.0 / g_ns_per_tick, g_tsc_overhead);
}

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--quick] [--frag-n N]\n"
            "       %s --cell N MAX_MIB\n"
            "Benchmarks the caching allocator: alloc+free pair latency, a random workload,\n"
            "fragmentation and two-thread throughput (several minutes; --quick: fewer runs).\n"
            "  --quick      fewer iterations and runs\n"
            "  --frag-n N   the fragmentation part for N operations only\n"
            "  --cell N MAX_MIB   one timing cell of the random workload, for profilers\n"
            "The public-API parts read INFINIRT_CONFIG (a config with the CPU plugin).\n",
            prog, prog);
}

int main(int argc, char **argv)
{
    size_t frag_n = 0; /* 0: every N */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout, argv[0]);
            return 0;
        }
    if (argc == 4 && strcmp(argv[1], "--cell") == 0) { /* for profilers */
        g_cell_n = strtoull(argv[2], NULL, 10);
        g_cell_max = strtoull(argv[3], NULL, 10);
        calibrate();
        bench_random();
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            g_quick = 1;
        else if (strcmp(argv[i], "--frag-n") == 0 && i + 1 < argc)
            frag_n = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
            usage(stderr, argv[0]);
            return 2;
        }
    }
    double t0 = now_s();
    calibrate();
    print_machine(argc, argv);
    bench_pairs();
#ifndef ALLOC_BENCH_NO_API
    bench_api_pairs();
#endif
    bench_random();
    for (int i = 0; i < 3; i++)
        if (frag_n == 0 || frag_n == k_ns[i])
            bench_frag(k_ns[i]);
    if (frag_n != 0 && frag_n != 1000 && frag_n != 10000 && frag_n != 100000)
        bench_frag(frag_n);
    bench_threads();
#ifndef ALLOC_BENCH_NO_API
    bench_api_threads();
#endif
    printf("\ntotal %.0f s\n", now_s() - t0);
    return 0;
}
