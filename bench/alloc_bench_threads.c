/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_bench_threads.c - part 4 of the allocator benchmark (see
 * alloc_bench.c): throughput of two threads over one, each thread freeing
 * and allocating on a stream of its own, on one pool directly and through
 * the public API (MallocAsync/FreeAsync on the CPU plugin).
 *
 * One harness serves both: a churn_ops table says how a thread opens its
 * stream and allocates and frees on it.  The worker is inlined once per
 * table, so each timed loop calls the pool or the API directly.
 */
#define _GNU_SOURCE
#include "alloc_bench.h"
#ifndef ALLOC_BENCH_NO_API
#include "infinirt.h"
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What a thread drives; each returns nonzero on success. */
typedef struct {
    int (*open)(void *ctx, int thread, void **stream);
    int (*alloc)(void *ctx, void *stream, size_t size, void **p);
    int (*free)(void *ctx, void *stream, void *p);
    void (*close)(void *ctx, void *stream);
} churn_ops;

/* One thread's argument.  It is on a cache line of its own and written
 * only after the timed loop: a flag stored every iteration beside the
 * other thread's argument made the two threads ping-pong one line, and the
 * ratio 1.1 in about half the runs (whichever way the stack happened to
 * align). */
typedef struct {
    _Alignas(64) void *ctx;
    int thread;
    size_t iters;
    pthread_barrier_t *bar;
    double secs, cpu; /* wall and thread CPU seconds of the timed loop */
    int ok;
} churn_arg;

/* A ring of 32 blocks (256 B..64 KiB): each iteration frees one and
 * allocates a block of another size in its place.  On a failure the run is
 * void (ok = 0). */
static inline __attribute__((always_inline)) void churn(churn_arg *a, const churn_ops *ops)
{
    void *stream = NULL;
    void *ring[32] = {0};
    const size_t iters = a->iters;
    int opened = ops->open(a->ctx, a->thread, &stream), ok = opened;
    for (int i = 0; i < 32 && ok; i++)
        ok = ops->alloc(a->ctx, stream, 256 + (size_t)(i * 997) % 65536, &ring[i]);
    pthread_barrier_wait(a->bar);
    uint64_t s = (uint64_t)(uintptr_t)stream * 0x9E3779B97F4A7C15ull;
    double t0 = now_s(), c0 = thread_cpu_s();
    for (size_t i = 0; i < iters && ok; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)i & 31;
        ok = ops->free(a->ctx, stream, ring[k]) &&
             ops->alloc(a->ctx, stream, 256 + (size_t)(s >> 40) % 65536, &ring[k]);
    }
    a->secs = now_s() - t0;
    a->cpu = thread_cpu_s() - c0;
    a->ok = ok;
    for (int i = 0; i < 32 && ok; i++)
        ops->free(a->ctx, stream, ring[i]);
    if (opened)
        ops->close(a->ctx, stream);
}

typedef struct {
    double rate;    /* pairs per wall second (of the slowest thread); -1: a call failed */
    double per_cpu; /* pairs per CPU second of a thread */
    double cores;   /* CPU seconds per wall second: how many cores the run really had */
} churn_result;

static churn_result churn_run(void *(*worker)(void *), void *ctx, int nthreads, size_t iters)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    pthread_t th[2];
    churn_arg a[2];
    for (int i = 0; i < nthreads; i++) {
        a[i] = (churn_arg){ctx, i, iters, &bar, 0, 0, 0};
        pthread_create(&th[i], NULL, worker, &a[i]);
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
    double pairs = (double)nthreads * (double)iters;
    return (churn_result){ok && slowest > 0 ? pairs / slowest : -1, cpu > 0 ? pairs / cpu : 0,
                          slowest > 0 ? cpu / slowest : 0};
}

/* ---------------------------------------------------------- on one pool */

/* A made-up stream key per thread: the pool never calls the backend with it
 * (the host backend takes no fence). */
static int pool_open(void *ctx, int thread, void **stream)
{
    (void)ctx;
    *stream = (void *)(uintptr_t)(0x1000 * (thread + 1));
    return 1;
}
static int pool_alloc(void *ctx, void *stream, size_t size, void **p)
{
    return infinirt__pool_alloc(ctx, size, stream, p) == INFINI_STATUS_SUCCESS;
}
static int pool_free(void *ctx, void *stream, void *p)
{
    (void)ctx;
    return infinirt__pool_free(p, stream, infinirt__want_any()) == INFINI_STATUS_SUCCESS;
}
static void pool_close(void *ctx, void *stream)
{
    (void)ctx;
    (void)stream;
}
static const churn_ops k_pool_ops = {pool_open, pool_alloc, pool_free, pool_close};

static void *pool_worker(void *arg)
{
    churn(arg, &k_pool_ops);
    return NULL;
}

/* A VM may not give a process two cores all the time: each run reports how
 * many it had (thread CPU time over wall time) and its throughput per
 * CPU-second, which contention between the threads would lower. */
void bench_threads(void)
{
    printf("\n4. Two threads, each alloc+free on its own stream of one pool (sizes 256 B..64 KiB):\n"
           "   wall-clock ratio; cores the 2-thread run had (CPU s / wall s); pairs per CPU-second\n"
           "   of 2 threads over 1 (1.00: the threads do not slow each other down)\n");
    infinirt__pool_backend be = host_backend();
    size_t iters = g_quick ? 2000000 : 10000000;
    double best_ratio = 0, best_par = 0;
    for (int r = 0; r < 5; r++) {
        infinirt__pool *pool = new_pool(&be, 1);
        churn_result one = churn_run(pool_worker, pool, 1, iters);
        churn_result two = churn_run(pool_worker, pool, 2, iters);
        infinirt__pool_destroy(pool);
        if (one.rate < 0 || two.rate < 0) {
            printf("  rep %d: a pool allocation failed; skipped\n", r + 1);
            continue;
        }
        printf("  rep %d: 1 thread %.1f M pairs/s, 2 threads %.1f M pairs/s: ratio %.2f; cores %.2f; "
               "per CPU-second %.2f\n",
               r + 1, one.rate / 1e6, two.rate / 1e6, two.rate / one.rate, two.cores, two.per_cpu / one.per_cpu);
        if (two.cores > best_par) {
            best_par = two.cores;
            best_ratio = two.rate / one.rate;
        }
    }
    printf("  ratio %.2f in the repetition that had the most cores (%.2f)\n", best_ratio, best_par);
}

/* ------------------------------------------------------- the public API */

#ifndef ALLOC_BENCH_NO_API
static int api_open(void *ctx, int thread, void **stream)
{
    (void)ctx;
    (void)thread;
    return infinirtStreamCreate(stream) == INFINI_STATUS_SUCCESS;
}
static int api_alloc(void *ctx, void *stream, size_t size, void **p)
{
    (void)ctx;
    return infinirtMallocAsync(p, size, stream) == INFINI_STATUS_SUCCESS;
}
static int api_free(void *ctx, void *stream, void *p)
{
    (void)ctx;
    return infinirtFreeAsync(p, stream) == INFINI_STATUS_SUCCESS;
}
static void api_close(void *ctx, void *stream)
{
    (void)ctx;
    infinirtStreamDestroy(stream);
}
static const churn_ops k_api_ops = {api_open, api_alloc, api_free, api_close};

static void *api_worker(void *arg)
{
    churn(arg, &k_api_ops);
    return NULL;
}

/* Three repetitions, each 1 thread then 2: one repetition alone is at the
 * mercy of a neighbour on this shared machine.  They run in a child process
 * (the loader reads its config once per process, as in api_pairs); a
 * failed call voids the run and the child reports it. */
#define API_REPS 3
void bench_api_threads(void)
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
        double r[3 * API_REPS];
        for (int k = 0; k < API_REPS; k++) {
            r[3 * k] = churn_run(api_worker, NULL, 1, iters).rate;
            churn_result two = churn_run(api_worker, NULL, 2, iters);
            r[3 * k + 1] = two.rate;
            r[3 * k + 2] = two.cores;
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
#endif
