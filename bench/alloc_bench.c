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
#include "alloc.h"
#include "log.h"
#ifndef ALLOC_BENCH_NO_API
#include "infinirt.h"
#endif

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define MiB ((size_t)1 << 20)
#define SYNC INFINIRT__POOL_SYNC

static int g_quick;

/* ---------------------------------------------------------------- timing */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

#define TIME_PAIRS(result, ALLOC, FREE)                                  \
    do {                                                                 \
        static uint64_t d_[PAIRS / PAIR_GROUP];                          \
        for (int i_ = 0; i_ < 20000; i_++) {                             \
            ALLOC;                                                       \
            FREE;                                                        \
        }                                                                \
        for (int i_ = 0; i_ < PAIRS / PAIR_GROUP; i_++) {                \
            uint64_t a_ = tsc();                                         \
            for (int k_ = 0; k_ < PAIR_GROUP; k_++) {                    \
                ALLOC;                                                   \
                FREE;                                                    \
            }                                                            \
            d_[i_] = tsc() - a_;                                         \
        }                                                                \
        double t0_ = now_s();                                            \
        for (int i_ = 0; i_ < PAIRS; i_++) {                             \
            ALLOC;                                                       \
            FREE;                                                        \
        }                                                                \
        (result) = summarize(d_, PAIRS / PAIR_GROUP, now_s() - t0_);     \
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

static infinirt__pool_backend host_backend(void)
{
    infinirt__pool_backend be = {
        .raw_alloc = host_alloc,
        .raw_free = host_free,
        .fence_take = host_fence_take,
        .fence_query = host_fence_query,
        .fence_wait = host_fence_wait,
        .fence_release = host_fence_release,
        .label = "bench host",
        .device_id = 0,
    };
    return be;
}

static infinirt__pool *new_pool(infinirt__pool_backend *be, int enabled)
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
           "   over groups of %d pairs timed together, mean over %d untimed pairs)\n", PAIR_GROUP, PAIRS);
    printf("  %-46s %8s %8s %8s\n", "", "median", "p99", "mean");
    infinirt__pool_backend be = host_backend();
    size_t sizes[] = {4096, MiB};
    for (int k = 0; k < 2; k++) {
        size_t size = sizes[k];
        char name[64];
        infinirt__pool *pool = new_pool(&be, 1);
        void *p;
        lat l;
        TIME_PAIRS(l, infinirt__pool_alloc(pool, size, NULL, &p), infinirt__pool_free(p, SYNC, NULL));
        snprintf(name, sizeof name, "pool alloc + free(SYNC), %zu B", size);
        print_lat(name, l);
        infinirt__pool_destroy(pool);
        pool = new_pool(&be, 0);
        TIME_PAIRS(l, infinirt__pool_alloc(pool, size, NULL, &p), infinirt__pool_free(p, SYNC, NULL));
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

/* Two threads through the public API, each MallocAsync/FreeAsync on a
 * stream of its own (child process, like api_pairs).  Each thread's
 * argument is on a cache line of its own and written only after the timed
 * loop: a flag stored every iteration beside the other thread's
 * argument made the two threads ping-pong one line, and the ratio 1.1 in
 * about half the runs (whichever way the stack happened to align). */
typedef struct {
    _Alignas(64) size_t iters;
    pthread_barrier_t *bar;
    double secs;
    double cpu; /* CPU seconds of the timed loop */
    int ok;
} api_targ;

static void *api_worker(void *arg)
{
    api_targ *a = arg;
    infinirtStream_t st = NULL;
    void *ring[32];
    const size_t iters = a->iters;
    int ok = infinirtStreamCreate(&st) == INFINI_STATUS_SUCCESS;
    for (int i = 0; i < 32 && ok; i++)
        ok = infinirtMallocAsync(&ring[i], 256 + (size_t)(i * 997) % 65536, st) == INFINI_STATUS_SUCCESS;
    pthread_barrier_wait(a->bar);
    uint64_t s = (uint64_t)(uintptr_t)&st * 0x9E3779B97F4A7C15ull;
    double t0 = now_s(), c0 = thread_cpu_s();
    for (size_t i = 0; i < iters && ok; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)i & 31;
        ok = infinirtFreeAsync(ring[k], st) == INFINI_STATUS_SUCCESS &&
             infinirtMallocAsync(&ring[k], 256 + (size_t)(s >> 40) % 65536, st) == INFINI_STATUS_SUCCESS;
    }
    a->secs = now_s() - t0;
    a->cpu = thread_cpu_s() - c0;
    a->ok = ok; /* on a failure the run is void and the child exits */
    for (int i = 0; i < 32 && ok; i++)
        infinirtFreeAsync(ring[i], st);
    if (st != NULL)
        infinirtStreamDestroy(st);
    return NULL;
}

/* Pairs per second of `nthreads` threads; *cores: the CPU seconds they got
 * over the wall-clock seconds of the slowest. */
static double api_threads_run(int nthreads, size_t iters, double *cores)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    pthread_t th[2];
    api_targ a[2];
    for (int i = 0; i < nthreads; i++) {
        a[i] = (api_targ){iters, &bar, 0, 0, 0};
        pthread_create(&th[i], NULL, api_worker, &a[i]);
    }
    double slowest = 0, cpu = 0;
    int ok = 1;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        slowest = a[i].secs > slowest ? a[i].secs : slowest;
        cpu += a[i].cpu;
        ok &= a[i].ok;
    }
    pthread_barrier_destroy(&bar);
    *cores = slowest > 0 ? cpu / slowest : 0;
    return ok ? (double)nthreads * (double)iters / slowest : -1;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Three repetitions, each 1 thread then 2: one repetition alone is at the
 * mercy of a neighbour on this shared machine. */
#define API_REPS 3
static void bench_api_threads(void)
{
    const char *config = getenv("INFINIRT_CONFIG");
    if (config == NULL)
        return;
    int fds[2];
    if (pipe(fds) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        size_t iters = g_quick ? 1000000 : 4000000;
        double r[3 * API_REPS], c1;
        for (int k = 0; k < API_REPS; k++) {
            r[3 * k] = api_threads_run(1, iters, &c1);
            r[3 * k + 1] = api_threads_run(2, iters, &r[3 * k + 2]);
        }
        _exit(write(fds[1], r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    double r[3 * API_REPS] = {-1};
    ssize_t n = read(fds[0], r, sizeof r);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    int ok = n == (ssize_t)sizeof r;
    for (int k = 0; ok && k < API_REPS; k++)
        ok = r[3 * k] > 0 && r[3 * k + 1] > 0;
    if (!ok) {
        printf("  public API: MallocAsync/FreeAsync on streams failed; skipped\n");
        return;
    }
    double ratios[API_REPS];
    int best = 0;
    for (int k = 0; k < API_REPS; k++) {
        ratios[k] = r[3 * k + 1] / r[3 * k];
        if (r[3 * k + 2] > r[3 * best + 2])
            best = k;
        printf("  public API (MallocAsync/FreeAsync, CPU plugin), rep %d: 1 thread %.1f M pairs/s; 2 threads "
               "%.1f M pairs/s; ratio %.2f; cores %.2f\n",
               k + 1, r[3 * k] / 1e6, r[3 * k + 1] / 1e6, ratios[k], r[3 * k + 2]);
    }
    printf("  public API: ratio %.2f in the repetition that had the most cores (%.2f)\n", ratios[best],
           r[3 * best + 2]);
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

/* ----------------------------------------------------- random workload */

/* 8 bytes, so that streaming the trace disturbs the caches little.  Like
 * RMM's benchmark, the replay keeps the live allocations in one dense array
 * and a free names a position in it (RMM erases from a vector; here the
 * last element moves into the hole, as in the generator). */
typedef struct {
    uint32_t arg;  /* free: the position in the live array; top bit set */
    uint32_t size; /* allocate: bytes (at most 256 MiB) */
} op_t;
#define OP_FREE 0x80000000u

typedef struct {
    op_t *ops;
    size_t nops, nalloc;
    size_t peak;     /* peak live bytes */
    size_t max_live; /* most live allocations at once */
} trace_t;

static uint64_t g_rng;
static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* RMM's random_allocation_free: 2N steps; allocate with probability 73%
 * while fewer than N allocations were made and the cap is not reached; else
 * free a random live allocation; finally free the rest. */
static trace_t make_trace(size_t n, size_t max_size, uint64_t seed)
{
    const size_t cap = 4000 * MiB;
    trace_t t = {malloc((3 * n + 1) * sizeof(op_t)), 0, 0, 0, 0};
    size_t *sizes = malloc(n * sizeof *sizes); /* of the live array */
    size_t nactive = 0, live = 0;
    g_rng = seed;
    for (size_t i = 0; i < 2 * n; i++) {
        size_t size = 1 + rnd() % max_size;
        int alloc = 1;
        if (nactive > 0)
            alloc = rnd() % 100 < 73 && t.nalloc < n && live + size < cap;
        if (alloc) {
            t.nalloc++;
            sizes[nactive++] = size;
            live += size;
            t.peak = live > t.peak ? live : t.peak;
            t.max_live = nactive > t.max_live ? nactive : t.max_live;
            t.ops[t.nops++] = (op_t){0, (uint32_t)size};
        } else {
            size_t k = rnd() % nactive;
            live -= sizes[k];
            sizes[k] = sizes[--nactive];
            t.ops[t.nops++] = (op_t){(uint32_t)k | OP_FREE, 0};
        }
    }
    while (nactive > 0)
        t.ops[t.nops++] = (op_t){(uint32_t)--nactive | OP_FREE, 0};
    free(sizes);
    return t;
}

/* Replays a trace; returns 0, or -1 (everything freed) when an allocation
 * fails.  `live` holds t->max_live pointers. */
static int replay(infinirt__pool *pool, const trace_t *t, void **live)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const op_t *o = &t->ops[i];
        if (!(o->arg & OP_FREE)) {
            if (infinirt__pool_alloc(pool, o->size, NULL, &live[n]) != INFINI_STATUS_SUCCESS) {
                while (n > 0)
                    infinirt__pool_free(live[--n], SYNC, NULL);
                return -1;
            }
            n++;
        } else {
            uint32_t k = o->arg & ~OP_FREE;
            infinirt__pool_free(live[k], SYNC, NULL);
            live[k] = live[--n];
        }
    }
    return 0;
}

static const size_t k_maxes[] = {1, 4, 64, 256};
/* The fixed seed of a cell: timing and fragmentation replay the same trace. */
static uint64_t cell_seed(size_t n, size_t max_mib)
{
    return 42 + n * 1000 + max_mib;
}
static size_t g_cell_n, g_cell_max; /* --cell: one cell only */
static const size_t k_ns[] = {1000, 10000, 100000};

/* One timing of one cell: a fresh pool, warmed up, then the median of
 * replays over `secs`.  *raws: raw allocations during the timed replays. */
static double time_cell(const trace_t *t, void **ptrs, double secs, size_t *raws)
{
    infinirt__pool_backend be = host_backend();
    infinirt__pool *pool = new_pool(&be, 1);
    /* Warm-up: replay until the cache has grown to the trace's needs (a run
     * without raw allocation), at most 20 times or 2 s. */
    infinirtAllocatorStats_t st;
    size_t raw0 = 0;
    double w0 = now_s();
    for (int w = 0; w < 20 && now_s() - w0 < 2.0; w++) {
        replay(pool, t, ptrs);
        infinirt__pool_stats(pool, &st);
        if (st.raw_allocs == raw0)
            break;
        raw0 = st.raw_allocs;
    }
    double runs[64];
    int nr = 0;
    double t_start = now_s();
    int min_runs = g_quick ? 2 : 5;
    while (nr < 64 && (nr < min_runs || now_s() - t_start < secs)) {
        double t0 = now_s();
        replay(pool, t, ptrs);
        runs[nr++] = (now_s() - t0) * 1e9 / (double)t->nops;
    }
    qsort(runs, (size_t)nr, sizeof runs[0], cmp_dbl);
    infinirt__pool_stats(pool, &st);
    *raws = st.raw_allocs - raw0;
    infinirt__pool_destroy(pool);
    return runs[nr / 2];
}

/* Rounds over all cells, so that each cell is timed at three moments of the
 * run: a neighbour busy for a second on this shared machine then disturbs
 * one round of a cell, not its figure, which is the median of its rounds. */
#define RANDOM_ROUNDS 3
static void bench_random(void)
{
    printf("\n2. Random workload (RMM random_allocations), ns per operation: per cell the median of %d rounds\n"
           "   taken at different moments of the run, each the median of replays on a warm pool\n"
           "   (warmed by up to 20 replays, until one needs no raw allocation); [lowest-highest round]\n",
           RANDOM_ROUNDS);
    trace_t traces[3][4];
    void **ptrs[3][4];
    double fig[3][4][RANDOM_ROUNDS];
    size_t raws[3][4] = {{0}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            bool on = g_cell_n == 0 || (g_cell_n == k_ns[i] && g_cell_max == k_maxes[j]);
            traces[i][j] = on ? make_trace(k_ns[i], k_maxes[j] * MiB, cell_seed(k_ns[i], k_maxes[j]))
                              : (trace_t){NULL, 0, 0, 0, 0};
            ptrs[i][j] = on ? calloc(traces[i][j].max_live + 1, sizeof(void *)) : NULL;
        }
    double secs = g_quick ? 0.05 : 0.15;
    for (int r = 0; r < RANDOM_ROUNDS; r++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                if (traces[i][j].ops == NULL)
                    continue;
                size_t raw;
                fig[i][j][r] = time_cell(&traces[i][j], ptrs[i][j], secs, &raw);
                raws[i][j] += raw;
            }
    printf("  %-10s", "N \\ max");
    for (int j = 0; j < 4; j++)
        printf(" %17zuMiB", k_maxes[j]);
    printf("   raw allocs in timed runs\n");
    double best = 1e30, worst = 0;
    for (int i = 0; i < 3; i++) {
        printf("  %-10zu", k_ns[i]);
        for (int j = 0; j < 4; j++) {
            if (traces[i][j].ops == NULL) {
                printf(" %20s", "-");
                continue;
            }
            double *f = fig[i][j];
            qsort(f, RANDOM_ROUNDS, sizeof f[0], cmp_dbl);
            double med = f[RANDOM_ROUNDS / 2];
            printf(" %6.1f [%5.1f-%5.1f]", med, f[0], f[RANDOM_ROUNDS - 1]);
            best = med < best ? med : best;
            worst = med > worst ? med : worst;
            free(ptrs[i][j]);
            free(traces[i][j].ops);
        }
        printf("   %zu/%zu/%zu/%zu\n", raws[i][0], raws[i][1], raws[i][2], raws[i][3]);
    }
    printf("  best %.1f ns, worst %.1f ns, worst/best %.2f\n", best, worst, worst / best);
}

/* -------------------------------------------------------- fragmentation */

/* Raw memory that is only counted: address ranges from a PROT_NONE
 * reservation (never touched), with a byte limit.  Sizes are kept in a
 * small open-addressing table for raw_free. */
#define VT_CAP (1u << 20)
typedef struct {
    uintptr_t next, end;
    size_t limit, live;
    uintptr_t *keys;
    size_t *sizes;
} vbackend;

static size_t vt_slot(uintptr_t k)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 44);
}

static infiniStatus_t v_alloc(void *ctx, size_t size, void **p)
{
    vbackend *v = ctx;
    size_t sz = (size + 4095) & ~(size_t)4095;
    if (v->live + size > v->limit || v->next + sz > v->end)
        return INFINI_STATUS_OUT_OF_MEMORY;
    uintptr_t a = v->next;
    size_t i = vt_slot(a);
    while (v->keys[i] != 0)
        i = (i + 1) & (VT_CAP - 1);
    v->keys[i] = a;
    v->sizes[i] = size;
    v->next += sz;
    v->live += size;
    *p = (void *)a;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t v_free(void *ctx, void *p)
{
    vbackend *v = ctx;
    uintptr_t k = (uintptr_t)p;
    size_t i = vt_slot(k);
    while (v->keys[i] != k)
        i = (i + 1) & (VT_CAP - 1);
    v->live -= v->sizes[i];
    /* backward-shift delete */
    for (size_t j = i;;) {
        j = (j + 1) & (VT_CAP - 1);
        if (v->keys[j] == 0)
            break;
        size_t h = vt_slot(v->keys[j]);
        if (((j - h) & (VT_CAP - 1)) >= ((j - i) & (VT_CAP - 1))) {
            v->keys[i] = v->keys[j];
            v->sizes[i] = v->sizes[j];
            i = j;
        }
    }
    v->keys[i] = 0;
    return INFINI_STATUS_SUCCESS;
}

/* Does the trace complete under `limit` raw bytes? */
static int fits(const trace_t *t, size_t limit, uintptr_t base, size_t span)
{
    static uintptr_t *keys;
    static size_t *sizes;
    if (keys == NULL) {
        keys = calloc(VT_CAP, sizeof *keys);
        sizes = calloc(VT_CAP, sizeof *sizes);
    }
    vbackend v = {base, base + span, limit, 0, keys, sizes};
    infinirt__pool_backend be = host_backend();
    be.ctx = &v;
    be.raw_alloc = v_alloc;
    be.raw_free = v_free;
    snprintf(be.label, sizeof be.label, "frag");
    infinirt__pool *pool = new_pool(&be, 1);
    void **ptrs = calloc(t->max_live + 1, sizeof *ptrs);
    int ok = replay(pool, t, ptrs) == 0;
    free(ptrs);
    infinirt__pool_destroy(pool);
    return ok;
}

static void bench_frag(size_t n)
{
    /* Bump allocation over the reservation; every trial starts afresh. */
    const size_t span = (size_t)16 << 40;
    void *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        printf("\n3. Fragmentation: cannot reserve address space; skipped\n");
        return;
    }
    printf("\n3. Fragmentation, N = %zu: smallest raw limit that completes the trace / peak live bytes\n", n);
    printf("  %-8s %14s %14s %8s %8s\n", "max", "peak live", "min limit", "ratio", "target");
    const double targets[] = {1.02, 1.05, 1.15, 1.30};
    infinirt__log_set_default_level(INFINIRT__LOG_ERROR); /* the failing trials log OOM */
    for (int j = 0; j < 4; j++) {
        trace_t t = make_trace(n, k_maxes[j] * MiB, cell_seed(n, k_maxes[j]));
        size_t lo = t.peak, hi = t.peak * 2;
        while (!fits(&t, hi, (uintptr_t)r, span))
            hi *= 2;
        while (hi - lo > t.peak / 2000 + 4096) {
            size_t mid = lo + (hi - lo) / 2;
            if (fits(&t, mid, (uintptr_t)r, span))
                hi = mid;
            else
                lo = mid;
        }
        double ratio = (double)hi / (double)t.peak;
        printf("  %4zuMiB %14zu %14zu %8.3f %8.2f %s\n", k_maxes[j], t.peak, hi, ratio, targets[j],
               ratio <= targets[j] ? "ok" : "MISSED");
        free(t.ops);
    }
    infinirt__log_set_default_level(INFINIRT__LOG_WARN);
    munmap(r, span);
}

/* ---------------------------------------------------------- two threads */

typedef struct { /* a line of its own, like api_targ */
    _Alignas(64) infinirt__pool *pool;
    void *stream;
    size_t iters;
    pthread_barrier_t *bar;
    double secs, cpu; /* wall and thread CPU seconds of the loop */
} tparg;

static void *tp_worker(void *arg)
{
    tparg *a = arg;
    void *ring[32] = {0};
    uint64_t s = (uint64_t)(uintptr_t)a->stream * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 32; i++)
        infinirt__pool_alloc(a->pool, 256 + (i * 997) % 65536, a->stream, &ring[i]);
    pthread_barrier_wait(a->bar);
    double t0 = now_s(), c0 = thread_cpu_s();
    for (size_t i = 0; i < a->iters; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 256 + (size_t)(s >> 40) % 65536;
        unsigned k = (unsigned)i & 31;
        infinirt__pool_free(ring[k], a->stream, NULL);
        infinirt__pool_alloc(a->pool, size, a->stream, &ring[k]);
    }
    a->secs = now_s() - t0;
    a->cpu = thread_cpu_s() - c0;
    for (int i = 0; i < 32; i++)
        infinirt__pool_free(ring[i], a->stream, NULL);
    return NULL;
}

/* Pairs per wall second; *per_cpu: pairs per CPU second of a thread;
 * *par: CPU seconds per wall second (how many cores the run really had). */
static double run_threads(infinirt__pool *pool, int nthreads, size_t iters, double *per_cpu, double *par)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    pthread_t th[2];
    tparg a[2];
    for (int i = 0; i < nthreads; i++) {
        a[i] = (tparg){pool, (void *)(uintptr_t)(0x1000 * (i + 1)), iters, &bar, 0, 0};
        pthread_create(&th[i], NULL, tp_worker, &a[i]);
    }
    double slowest = 0, cpu = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        slowest = a[i].secs > slowest ? a[i].secs : slowest;
        cpu += a[i].cpu;
    }
    pthread_barrier_destroy(&bar);
    *per_cpu = (double)nthreads * (double)iters / cpu;
    *par = cpu / slowest;
    return (double)nthreads * (double)iters / slowest;
}

/* A VM may not give a process two cores all the time: each run reports how
 * many it had (thread CPU time over wall time) and its throughput per
 * CPU-second, which contention between the threads would lower. */
static void bench_threads(void)
{
    printf("\n4. Two threads, each alloc+free on its own stream of one pool (sizes 256 B..64 KiB):\n"
           "   wall-clock ratio; cores the 2-thread run had (CPU s / wall s); pairs per CPU-second\n"
           "   of 2 threads over 1 (1.00: the threads do not slow each other down)\n");
    infinirt__pool_backend be = host_backend();
    size_t iters = g_quick ? 2000000 : 10000000;
    double best_ratio = 0, best_par = 0;
    for (int r = 0; r < 5; r++) {
        infinirt__pool *pool = new_pool(&be, 1);
        double c1, c2, p1, p2;
        double one = run_threads(pool, 1, iters, &c1, &p1);
        double two = run_threads(pool, 2, iters, &c2, &p2);
        infinirt__pool_destroy(pool);
        printf("  rep %d: 1 thread %.1f M pairs/s, 2 threads %.1f M pairs/s: ratio %.2f; cores %.2f; "
               "per CPU-second %.2f\n",
               r + 1, one / 1e6, two / 1e6, two / one, p2, c2 / c1);
        if (p2 > best_par) {
            best_par = p2;
            best_ratio = two / one;
        }
    }
    printf("  ratio %.2f in the repetition that had the most cores (%.2f)\n", best_ratio, best_par);
}

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
