/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench_layout.c - rows of infinirt-cpu-bench (cpu_bench_layout.h)
 * that the easy layouts of the other rows miss (issue 34):
 *  - a 64 B copy, H2D and D2H, synchronous and stream-ordered, whose host
 *    buffer was mmap'ed between two pool segments (what glibc does with
 *    any host buffer of 128 KiB or more allocated between two device
 *    allocations), against the same copy from a static buffer, in the
 *    same process: the layout is built for real and checked, and where it
 *    lay is printed;
 *  - a realistic operator step on an inline stream: MallocAsync, a 256 B
 *    H2D MemcpyAsync, a host kernel on the block, a 256 B D2H MemcpyAsync,
 *    FreeAsync, and a StreamSynchronize every 8 steps; against the same
 *    step on malloc, memcpy and free (InfiniCore's ratio comes from
 *    bench/cpu_compare.sh, which runs these rows under InfiniCore too).
 * Only calls InfiniCore's header also declares are made.
 */
#define _GNU_SOURCE
#include "cpu_bench_layout.h"
#include "bench_util.h"
#include "infinirt.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MUST(call) BENCH_MUST("cpu-bench", call)
#define BATCHES 7

/* Device blocks this large get a segment of their own (the allocator's
 * small blocks share 2 MiB segments), and - above glibc's largest dynamic
 * mmap threshold, 32 MiB - come from mmap under InfiniCore too. */
#define SEG_BYTES ((size_t)64 << 20)
#define HOST_BYTES ((size_t)256 << 10)
#define MAX_SEGS 8

/* ------------------------------------------------------------ the layout */

struct layout {
    void *seg[MAX_SEGS];
    int nseg;
    char *host;             /* HOST_BYTES, mmap'ed */
    uintptr_t below, above; /* the nearest segments on either side */
};

/* Whether [h, h + HOST_BYTES) lies between two of the segments and in
 * none: the nearest below and above in *below and *above. */
static bool lies_between(const struct layout *l, uintptr_t h, uintptr_t *below, uintptr_t *above)
{
    uintptr_t b = 0, a = UINTPTR_MAX;
    for (int i = 0; i < l->nseg; i++) {
        uintptr_t s = (uintptr_t)l->seg[i];
        if (s < h + HOST_BYTES && h < s + SEG_BYTES)
            return false; /* overlaps: not a layout of this program's */
        if (s + SEG_BYTES <= h && (b == 0 || s > b))
            b = s;
        if (s >= h + HOST_BYTES && s < a)
            a = s;
    }
    *below = b;
    *above = a;
    return b != 0 && a != UINTPTR_MAX;
}

/* Device segments and host mmaps in turn until a host buffer lies between
 * two segments: each buffer is asked for just below the last segment (an
 * address hint, no MAP_FIXED: the kernel takes it only where nothing is
 * mapped), since the holes earlier rows left (thread stacks, freed blocks)
 * would otherwise take it, and the next segment, handed out top down,
 * lands below it.  The other buffers are unmapped.  False when no try
 * made the layout. */
static bool layout_build(struct layout *l)
{
    char *tries[MAX_SEGS];
    int ntries = 0;
    memset(l, 0, sizeof *l);
    MUST(infinirtMalloc(&l->seg[l->nseg++], SEG_BYTES));
    while (l->host == NULL && l->nseg < MAX_SEGS) {
        uintptr_t last = (uintptr_t)l->seg[l->nseg - 1] & ~(uintptr_t)4095;
        void *hint = (void *)(last - HOST_BYTES - 16 * 4096);
        void *h = mmap(hint, HOST_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (h == MAP_FAILED)
            break;
        tries[ntries++] = h;
        MUST(infinirtMalloc(&l->seg[l->nseg++], SEG_BYTES));
        for (int i = 0; i < ntries && l->host == NULL; i++)
            if (lies_between(l, (uintptr_t)tries[i], &l->below, &l->above))
                l->host = tries[i];
    }
    for (int i = 0; i < ntries; i++)
        if (tries[i] != l->host)
            munmap(tries[i], HOST_BYTES);
    if (l->host != NULL)
        memset(l->host, 1, 4096);
    return l->host != NULL;
}

static void layout_free(struct layout *l)
{
    if (l->host != NULL)
        munmap(l->host, HOST_BYTES);
    for (int i = 0; i < l->nseg; i++)
        MUST(infinirtFree(l->seg[i]));
}

/* ------------------------------------------------------------ the rows */

typedef void (*body_fn)(long n, void *ctx);

struct row {
    const char *name;
    body_fn body;
    void *ctx;
    long n;
    double best;
};

/* Every row's batches in turn, BATCHES rounds, the best per operation of
 * each (as cpu_bench.c's time_in_turn: a slow phase of the VM then falls
 * on the batches of every row alike, not on one row and not its
 * baseline). */
static void time_rows(struct row *r, int count, long scale)
{
    for (int i = 0; i < count; i++) {
        r[i].n = r[i].n / scale > 0 ? r[i].n / scale : 1;
        r[i].body(r[i].n / 10 > 0 ? r[i].n / 10 : 1, r[i].ctx); /* warm up */
        r[i].best = 1e30;
    }
    for (int b = 0; b < BATCHES; b++)
        for (int i = 0; i < count; i++) {
            double t0 = now_ns();
            r[i].body(r[i].n, r[i].ctx);
            double per = (now_ns() - t0) / (double)r[i].n;
            if (per < r[i].best)
                r[i].best = per;
        }
}

struct copy64 {
    void *dst;
    const void *src;
    infinirtMemcpyKind_t kind;
    infinirtStream_t stream; /* NULL: infinirtMemcpy */
    bool async;
};

/* 64 B copies: synchronous, or stream-ordered with a StreamSynchronize
 * every 16 (an async stream's queue stays short). */
static void b_copy64(long n, void *ctx)
{
    const struct copy64 *c = ctx;
    if (!c->async) {
        for (long i = 0; i < n; i++)
            MUST(infinirtMemcpy(c->dst, c->src, 64, c->kind));
        return;
    }
    for (long i = 0; i < n; i++) {
        MUST(infinirtMemcpyAsync(c->dst, c->src, 64, c->kind, c->stream));
        if ((i & 15) == 15)
            MUST(infinirtStreamSynchronize(c->stream));
    }
    MUST(infinirtStreamSynchronize(c->stream));
}

/* The operator's work: 64 floats scaled and shifted in place. */
static __attribute__((noinline)) void host_kernel(float *x)
{
    for (int i = 0; i < 64; i++)
        x[i] = x[i] * 1.5f + 1.0f;
}

static float g_in[64], g_out[64];

static void b_op_step(long n, void *ctx)
{
    infinirtStream_t s = *(infinirtStream_t *)ctx;
    for (long i = 0; i < n; i++) {
        void *d;
        MUST(infinirtMallocAsync(&d, sizeof g_in, s));
        MUST(infinirtMemcpyAsync(d, g_in, sizeof g_in, INFINIRT_MEMCPY_H2D, s));
        host_kernel(d);
        MUST(infinirtMemcpyAsync(g_out, d, sizeof g_out, INFINIRT_MEMCPY_D2H, s));
        MUST(infinirtFreeAsync(d, s));
        if ((i & 7) == 7)
            MUST(infinirtStreamSynchronize(s));
    }
    MUST(infinirtStreamSynchronize(s));
}

/* The same step on the C library: the baseline in the same run. */
static void b_op_host(long n, void *ctx)
{
    (void)ctx;
    for (long i = 0; i < n; i++) {
        float *d = malloc(sizeof g_in);
        if (d == NULL)
            exit(1);
        memcpy(d, g_in, sizeof g_in);
        host_kernel(d);
        memcpy(g_out, d, sizeof g_out);
        free(d);
        __asm__ __volatile__("" : : "r"(g_out) : "memory");
    }
}

static char g_static[4096]; /* the easy layout: below every segment */

void layout_rows(const char *label, long scale)
{
    MUST(infinirtInit());
    MUST(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    struct layout l;
    bool built = layout_build(&l);
    if (!built) {
        /* No row printed: the table reports them missing. */
        fprintf(stderr, "cpu-bench: no host buffer landed between two device segments in %d tries\n", l.nseg - 1);
        layout_free(&l);
        return;
    }
    printf("%s layout_where host buffer %p-%p between segments %p-%p and %p-%p\n", label, (void *)l.host,
           (void *)(l.host + HOST_BYTES), (void *)l.below, (void *)(l.below + SEG_BYTES), (void *)l.above,
           (void *)(l.above + SEG_BYTES));
    void *dev;
    infinirtStream_t s;
    MUST(infinirtMalloc(&dev, 64));
    MUST(infinirtMemset(dev, 0, 64));
    MUST(infinirtStreamCreate(&s));
    memset(g_static, 1, sizeof g_static);
    struct copy64 c[8] = {
        {dev, g_static, INFINIRT_MEMCPY_H2D, NULL, false}, {dev, l.host, INFINIRT_MEMCPY_H2D, NULL, false},
        {g_static, dev, INFINIRT_MEMCPY_D2H, NULL, false}, {l.host, dev, INFINIRT_MEMCPY_D2H, NULL, false},
        {dev, g_static, INFINIRT_MEMCPY_H2D, s, true},     {dev, l.host, INFINIRT_MEMCPY_H2D, s, true},
        {g_static, dev, INFINIRT_MEMCPY_D2H, s, true},     {l.host, dev, INFINIRT_MEMCPY_D2H, s, true},
    };
    struct row r[10] = {
        {"h2d_static", b_copy64, &c[0], 2000000, 0},  {"h2d_between", b_copy64, &c[1], 2000000, 0},
        {"d2h_static", b_copy64, &c[2], 2000000, 0},  {"d2h_between", b_copy64, &c[3], 2000000, 0},
        {"h2da_static", b_copy64, &c[4], 1000000, 0}, {"h2da_between", b_copy64, &c[5], 1000000, 0},
        {"d2ha_static", b_copy64, &c[6], 1000000, 0}, {"d2ha_between", b_copy64, &c[7], 1000000, 0},
        {"op_step", b_op_step, &s, 500000, 0},        {"op_host", b_op_host, NULL, 2000000, 0},
    };
    int count = strcmp(label, "async") == 0 ? 8 : 10;
    time_rows(r, count, scale);
    for (int i = 0; i < count; i++)
        printf("%s %s %.2f\n", label, r[i].name, r[i].best);
    fflush(stdout);
    MUST(infinirtStreamDestroy(s));
    MUST(infinirtFree(dev));
    layout_free(&l);
}

/* ------------------------------------------------------------ the table */

static int pair_line(const char *what, double fig, double base, const char *base_name, double goal)
{
    if (fig < 0 || !(base > 0)) {
        printf("%-46s missing: no pass printed it or its baseline\n", what);
        return 1;
    }
    double ratio = fig / base;
    printf("%-46s %10.1f %-2s %8.2fx %-19s", what, fig, "ns", ratio, base_name);
    if (goal > 0)
        printf(" goal <= %.2fx: %s\n", goal, ratio <= goal ? "met" : "MISSED");
    else
        printf(" goal <= 1.50x InfiniCore (cpu_compare.sh)\n");
    return 0;
}

int layout_table(const char *lab, const char *out0, double (*get)(const char *row, void *ctx), void *ctx)
{
    static const char *const what[4] = {"64 B H2D Memcpy, host between segments",
                                        "64 B D2H Memcpy, host between segments", "64 B H2D MemcpyAsync, the same",
                                        "64 B D2H MemcpyAsync, the same"};
    static const char *const row[4] = {"h2d", "d2h", "h2da", "d2ha"};
    int missing = 0;
    char key[64];
    snprintf(key, sizeof key, "%s layout_where ", lab);
    const char *where = out0 != NULL ? strstr(out0, key) : NULL;
    if (where != NULL) {
        where += strlen(key);
        printf("   (%.*s)\n", (int)strcspn(where, "\n"), where);
    }
    for (int k = 0; k < 4; k++) {
        char between[32], stat[32];
        snprintf(between, sizeof between, "%s_between", row[k]);
        snprintf(stat, sizeof stat, "%s_static", row[k]);
        missing |= pair_line(what[k], get(between, ctx), get(stat, ctx), "static host buffer", 1.3);
    }
    if (strcmp(lab, "async") != 0)
        missing |= pair_line("operator step (MallocAsync..FreeAsync)", get("op_step", ctx), get("op_host", ctx),
                             "on malloc+memcpy", 0);
    return missing;
}
