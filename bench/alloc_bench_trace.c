/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_bench_trace.c - parts 2 and 3 of the allocator benchmark (see
 * alloc_bench.c): a random workload modelled on RMM's random_allocations
 * benchmark, timed cell by cell, and the fragmentation it leaves (the
 * smallest raw-memory limit under which each trace completes).
 */
#define _GNU_SOURCE
#include "alloc_bench.h"
#include "log.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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
            if (infinirt__pool_alloc(pool, o->size, INFINIRT__POOL_SYNC, &live[n]) != INFINI_STATUS_SUCCESS) {
                while (n > 0)
                    infinirt__pool_free_sync(live[--n], infinirt__want_any());
                return -1;
            }
            n++;
        } else {
            uint32_t k = o->arg & ~OP_FREE;
            infinirt__pool_free_sync(live[k], infinirt__want_any());
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
size_t g_cell_n, g_cell_max; /* --cell: one cell only */
const size_t k_ns[3] = {1000, 10000, 100000};

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
    qsort(runs, (size_t)nr, sizeof runs[0], bench_cmp_double);
    infinirt__pool_stats(pool, &st);
    *raws = st.raw_allocs - raw0;
    infinirt__pool_destroy(pool);
    return runs[nr / 2];
}

/* Rounds over all cells, so that each cell is timed at three moments of the
 * run: a neighbour busy for a second on this shared machine then disturbs
 * one round of a cell, not its figure, which is the median of its rounds. */
#define RANDOM_ROUNDS 3
void bench_random(void)
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
            qsort(f, RANDOM_ROUNDS, sizeof f[0], bench_cmp_double);
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

void bench_frag(size_t n)
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
