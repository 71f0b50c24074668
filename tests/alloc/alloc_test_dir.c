/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_dir.c - the page directory (alloc.h, alloc_dir.c) on its own:
 * infinirt__dir_outside for addresses inside segments, at their edges,
 * between two segments sharing a page, in huge segments that take whole
 * slots of the upper levels, past the directory's limit, after a segment is
 * released and its range used again; against a byte-exact model; and read
 * with no lock while another thread inserts and removes segments around a
 * live one.
 *
 * The segments are address ranges only: the directory never touches the
 * memory it lists, so each test lists ranges of its own far from anything
 * the process maps, and no pool is made.
 */
#define _GNU_SOURCE
#include "alloc_dir.h"
#include "alloc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PAGE ((uintptr_t)4096)
#define GiB ((uintptr_t)1 << 30)

static bool out(uintptr_t p)
{
    return infinirt__dir_outside(p);
}

/* A segment over [base, base + size), in the directory. */
static infinirt__seg *seg_in(uintptr_t base, size_t size)
{
    infinirt__seg *s = infinirt__seg_struct_new();
    if (s == NULL) {
        TEST_FAILED_("%s", "no memory for a segment struct");
    }
    s->base = base;
    s->size = size;
    s->pool = NULL;
    infinirt__dir_insert(s);
    return s;
}

/* Inside [b, e): not outside at its first and last byte; outside just
 * before and just after (when `edges`: nothing else lies there). */
static int check_seg(uintptr_t b, uintptr_t e, bool edges)
{
    ASSERT(!out(b));
    ASSERT(!out(e - 1));
    ASSERT(!out(b + (e - b) / 2));
    if (edges) {
        ASSERT(out(b - 1));
        ASSERT(out(e));
    }
    return TEST_OK;
}

/* Edges inside pages, two segments sharing a page with a gap between
 * them, two that abut, the release of one and a smaller one in its place. */
int test_dir_pages_edges(void)
{
    const uintptr_t r = (uintptr_t)0x123400000000ull;
    /* A: 3 pages and a bit, from 0x100 into its first page. */
    uintptr_t a = r + 0x100, ae = a + 3 * PAGE + 0x50;
    infinirt__seg *sa = seg_in(a, ae - a);
    CHECK(check_seg(a, ae, true));
    ASSERT(out(r));             /* the start of A's first page */
    ASSERT(!out(r + PAGE));     /* a whole page of A */
    ASSERT(out(ae + 0x10));     /* the rest of A's last page */
    ASSERT(out(r + 5 * PAGE));  /* the page after */
    ASSERT(out(r - PAGE + 10)); /* the page before */
    /* B starts in A's last page, after a gap: the gap stays outside. */
    uintptr_t b = r + 3 * PAGE + 0x400, be = b + 2 * PAGE;
    infinirt__seg *sb = seg_in(b, be - b);
    CHECK(check_seg(a, ae, true));
    CHECK(check_seg(b, be, true));
    ASSERT(out(ae));
    ASSERT(out(b - 1));
    ASSERT(out(ae + (b - ae) / 2));
    /* C abuts B's end, mid-page. */
    uintptr_t c = be, ce = c + 0x100;
    infinirt__seg *sc = seg_in(c, ce - c);
    ASSERT(!out(be - 1));
    ASSERT(!out(c));
    ASSERT(!out(ce - 1));
    ASSERT(out(ce));
    /* B goes: its pages are outside again; A and C are as before. */
    infinirt__dir_remove(sb);
    ASSERT(out(b));
    ASSERT(out(b + PAGE));
    ASSERT(out(be - 1));
    ASSERT(out(ae));
    CHECK(check_seg(a, ae, true));
    CHECK(check_seg(c, ce, true));
    infinirt__dir_remove(sa);
    infinirt__dir_remove(sc);
    for (uintptr_t p = r; p < ce + PAGE; p += 0x40)
        ASSERT(out(p));
    /* A smaller segment where A was: only its bytes are inside. */
    infinirt__seg *sd = seg_in(a, 0x80);
    CHECK(check_seg(a, a + 0x80, true));
    ASSERT(out(r + PAGE)); /* a whole page of A once */
    ASSERT(out(ae - 1));
    infinirt__dir_remove(sd);
    ASSERT(out(a));
    return TEST_OK;
}

/* Four segments in one page: every byte of each is inside; the widest gap
 * stays outside; once two are gone the page is exact again. */
int test_dir_pages_crowded(void)
{
    const uintptr_t p = (uintptr_t)0x123500000000ull + 7 * PAGE;
    infinirt__seg *s[4];
    const uintptr_t at[4] = {0, 100, 2000, 3000};
    for (int i = 0; i < 4; i++)
        s[i] = seg_in(p + at[i], 16);
    for (int i = 0; i < 4; i++)
        for (uintptr_t k = 0; k < 16; k++)
            ASSERT(!out(p + at[i] + k));
    ASSERT(out(p + 1000)); /* in the widest gap, 116..2000 */
    ASSERT(out(p + 3016));
    ASSERT(out(p - 1));
    infinirt__dir_remove(s[1]);
    infinirt__dir_remove(s[2]);
    ASSERT(!out(p));
    ASSERT(!out(p + 3015));
    ASSERT(out(p + 50));
    ASSERT(out(p + 2500));
    ASSERT(out(p + 3016));
    infinirt__dir_remove(s[0]);
    infinirt__dir_remove(s[3]);
    ASSERT(out(p));
    ASSERT(out(p + 3000));
    return TEST_OK;
}

/* A segment of 600 GiB across two top-level slots (512 GiB each; the
 * first whole: marked at the top), released, then a small one in its
 * range; segments at and past the directory's limit (2^48), which the
 * span check alone answers. */
int test_dir_pages_large(void)
{
    const uintptr_t top = (uintptr_t)1 << 39; /* a top-level slot's range */
    uintptr_t b = ((uintptr_t)1 << 44) - 0x800, e = b + 600 * GiB + 0x1234;
    infinirt__seg *l = seg_in(b, e - b);
    CHECK(check_seg(b, e, true));
    for (uintptr_t p = b; p < e; p += GiB / 4 + 0x1000)
        ASSERT(!out(p));
    for (uintptr_t t = (b + top - 1) & ~(top - 1); t < e; t += top) {
        ASSERT(!out(t - 1));
        ASSERT(!out(t));
    }
    infinirt__dir_remove(l);
    for (uintptr_t p = b; p < e; p += GiB / 4 + 0x1000)
        ASSERT(out(p));
    ASSERT(out(e - 1));
    /* A small one inside what was a whole top-level slot. */
    uintptr_t m = ((uintptr_t)1 << 44) + 5 * GiB + 0x300;
    infinirt__seg *sm = seg_in(m, 3 * PAGE);
    CHECK(check_seg(m, m + 3 * PAGE, true));
    ASSERT(out(m + 4 * PAGE));
    ASSERT(out(m - 2 * PAGE));
    infinirt__dir_remove(sm);
    ASSERT(out(m));

    const uintptr_t lim = (uintptr_t)1 << 48;
    infinirt__seg *across = seg_in(lim - 0x800, 0x1000), *past = seg_in(lim + 0x10000, 0x1000);
    ASSERT(!out(lim - 0x800));
    ASSERT(!out(lim - 1));
    ASSERT(!out(lim));
    ASSERT(!out(lim + 0x7ff));
    ASSERT(out(lim - 0x801));
    ASSERT(!out(lim + 0x10000));
    ASSERT(!out(lim + 0x10fff));
    ASSERT(out(lim + 0x11000)); /* past the span */
    infinirt__dir_remove(across);
    infinirt__dir_remove(past);
    ASSERT(out(lim - 0x800));
    return TEST_OK;
}

/* ------------------------------------------------------------- model */

#define M_PAGES 64u
#define M_BYTES (M_PAGES * 4096u)
#define M_SEGS 48

static unsigned char g_cov[M_BYTES]; /* 1: some live segment covers the byte */

/* The maximal runs of covered bytes in page pg. */
static unsigned runs(unsigned pg)
{
    unsigned n = 0;
    for (unsigned o = 0; o < 4096; o++)
        n += g_cov[pg * 4096 + o] && (o == 0 || !g_cov[pg * 4096 + o - 1]);
    return n;
}

/* Every byte of the window against the model: inside never outside; a
 * page with at most two runs exactly. */
static int check_window(uintptr_t r)
{
    for (unsigned pg = 0; pg < M_PAGES; pg++) {
        bool exact = runs(pg) <= 2;
        for (unsigned o = 0; o < 4096; o++) {
            unsigned i = pg * 4096 + o;
            bool o_ = out(r + i);
            if (g_cov[i] && o_)
                TEST_FAILED_("byte %#x of the window is in a live segment but answered outside", i);
            if (exact && !g_cov[i] && !o_)
                TEST_FAILED_("byte %#x of the window (page %u, %u runs) is in no segment but answered inside", i, pg,
                             runs(pg));
        }
    }
    return TEST_OK;
}

/* Random inserts and removals in a window of 64 pages - segments from one
 * byte to ten pages, sharing pages, abutting - checked byte by byte. */
int test_dir_pages_model(void)
{
    const uintptr_t r = (uintptr_t)0x200000000000ull;
    infinirt__seg *live[M_SEGS];
    uintptr_t lb[M_SEGS];
    size_t ls[M_SEGS];
    int n = 0;
    memset(g_cov, 0, sizeof g_cov);
    for (int step = 0; step < 1500; step++) {
        if (n == M_SEGS || (n > 0 && rnd() % 3 == 0)) {
            int k = (int)(rnd() % (uint64_t)n);
            infinirt__dir_remove(live[k]);
            memset(g_cov + (lb[k] - r), 0, ls[k]);
            live[k] = live[n - 1];
            lb[k] = lb[n - 1];
            ls[k] = ls[n - 1];
            n--;
        } else {
            uint64_t kind = rnd() % 3;
            size_t size = kind == 0 ? 1 + rnd() % 64 : kind == 1 ? 64 + rnd() % 8192 : 4096 + rnd() % 40000;
            size_t off = (size_t)(rnd() % (M_BYTES - size));
            if (rnd() % 4 == 0)
                off &= ~(size_t)4095; /* page-aligned starts too */
            bool free_ = true;
            for (size_t i = 0; i < size && free_; i++)
                free_ = !g_cov[off + i];
            if (!free_)
                continue;
            live[n] = seg_in(r + off, size);
            lb[n] = r + off;
            ls[n] = size;
            n++;
            memset(g_cov + off, 1, size);
        }
        if (step % 25 == 0)
            CHECK(check_window(r));
    }
    CHECK(check_window(r));
    while (n > 0)
        infinirt__dir_remove(live[--n]);
    memset(g_cov, 0, sizeof g_cov);
    return check_window(r);
}

/* ----------------------------------------------------------- threads */

struct churn {
    uintptr_t r;
    atomic_int stop;
};

/* Segments come and go in the pages a live segment shares (one beside each
 * of its ends, so every page stays exact) and elsewhere (new nodes). */
static void *churn(void *arg)
{
    struct churn *c = arg;
    for (int i = 0; i < 4000; i++) {
        infinirt__seg *lo = seg_in(c->r + 0x100, 0x100);
        infinirt__seg *hi = seg_in(c->r + 0x800 + 3 * PAGE + 0x200, 0x100 + (size_t)(i % 7) * 0x10);
        infinirt__seg *far = seg_in(c->r + (uintptr_t)(1 + i % 13) * 64 * GiB / 16 + 0x40, 20 * MiB);
        infinirt__dir_remove(hi);
        infinirt__dir_remove(lo);
        infinirt__dir_remove(far);
    }
    atomic_store(&c->stop, 1);
    return NULL;
}

/* A thread reads with no lock while another inserts and removes around a
 * live segment: the segment is always inside, the gap beside it always
 * outside. */
int test_dir_pages_threads(void)
{
    struct churn c = {(uintptr_t)0x210000000000ull, 0};
    uintptr_t b = c.r + 0x800, e = b + 3 * PAGE;
    infinirt__seg *s = seg_in(b, e - b);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, churn, &c), 0);
    long reads = 0;
    while (!atomic_load(&c.stop)) {
        ASSERT(!out(b));
        ASSERT(!out(b + PAGE));
        ASSERT(!out(e - 1));
        ASSERT(out(c.r + 0x400)); /* between lo and the segment */
        ASSERT(out(e + 0x100));   /* between the segment and hi */
        reads++;
    }
    pthread_join(t, NULL);
    infinirt__dir_remove(s);
    ASSERT(out(b));
    printf("%ld rounds of reads while segments came and went\n", reads);
    return TEST_OK;
}
