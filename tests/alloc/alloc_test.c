/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test.c - unit tests of the caching allocator (loader/alloc/)
 * against a fake backend (fake_backend.c): the alloc/free pair, stream
 * order and out of memory here; bad pointers, lookups and the pool's modes
 * in alloc_test_modes.c; the randomized and multithreaded ones in
 * alloc_test_model.c.  The list is alloc_list.h; the runner harness/test.h.
 */
#define _GNU_SOURCE
#include "alloc_list.h"
#include "alloc_test.h"
#include "log.h"

#include <stdbool.h>
#include <stdint.h>

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

infinirt__pool *make_pool(fake *f, const infinirt__alloc_config *cfg)
{
    infinirt__alloc_config c;
    infinirt__alloc_config_default(&c);
    infinirt__pool *p = NULL;
    if (infinirt__pool_create(&f->be, cfg ? cfg : &c, &p) != INFINI_STATUS_SUCCESS)
        return NULL;
    return p;
}

/* Destroy the pool; the fake must be left with no memory and no fence. */
int finish(infinirt__pool *pool, fake *f)
{
    infinirt__pool_destroy(pool);
    ASSERT_EQ(fake_live(f), 0);
    ASSERT_EQ(fake_nraw(f), 0);
    ASSERT_EQ(f->taken, f->released);
    ASSERT_EQ(f->nfence, 0);
    ASSERT_EQ(f->bad_release, 0);
    fake_fini(f);
    return TEST_OK;
}

/* Statistics against what the test knows, and against the backend. */
int check_stats(infinirt__pool *pool, fake *f, size_t allocated, size_t active)
{
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.allocated_bytes, allocated);
    ASSERT_EQ(st.active_blocks, active);
    ASSERT_EQ(st.reserved_bytes, fake_live(f));
    ASSERT_EQ(st.segments, fake_nraw(f));
    ASSERT_EQ(st.raw_allocs - st.raw_frees, st.segments);
    ASSERT_EQ(st.cached_free_bytes, st.reserved_bytes - st.allocated_bytes);
    ASSERT_GE(st.peak_allocated_bytes, st.allocated_bytes);
    ASSERT_GE(st.peak_reserved_bytes, st.reserved_bytes);
    return TEST_OK;
}

/* ------------------------------------------------------------- basics */

static int test_basic(void)
{
    fake f;
    fake_init(&f, 0, 0, "basic");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    void *p, *q;
    ASSERT_EQ(infinirt__pool_alloc(pool, 0, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirt__pool_alloc(pool, 1, NULL, &p));
    CHECK(check_stats(pool, &f, 1, 1));
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_alloc(pool, 1, NULL, &q));
    ASSERT_PTR_EQ(q, p); /* the cache serves it again */
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(NULL, infinirt__want_any()));
    /* One raw allocation served everything. */
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.raw_allocs, 1);
    ASSERT_EQ(st.alloc_requests, 2);
    ASSERT_EQ(st.peak_allocated_bytes, 1);
    return finish(pool, &f);
}

/* --------------------------------------------------------- stream order */

static int test_stream_order_async(void)
{
    fake f;
    fake_init(&f, 0, 0, "order");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *A = (void *)0xA0, *B = (void *)0xB0;
    char *p, *q, *r, *r2, *x;
    /* Small block: reused at once on its own stream. */
    ASSERT_OK(infinirt__pool_alloc(pool, 4096, A, (void **)&p));
    fake_set_busy(&f, A);
    ASSERT_OK(infinirt__pool_free(p, A, infinirt__want_any()));
    ASSERT_EQ(f.taken, 1);
    ASSERT_OK(infinirt__pool_alloc(pool, 4096, A, (void **)&q));
    ASSERT_PTR_EQ(q, p);
    ASSERT_OK(infinirt__pool_free(q, A, infinirt__want_any()));
    ASSERT_EQ(f.taken, 2);
    ASSERT_EQ(f.released, 1); /* the newer fence covers the older one */
    ASSERT_OK(infinirt__pool_alloc(pool, 4096, B, (void **)&r));
    ASSERT(r + 4096 <= p || r >= p + 4096);
    ASSERT_OK(infinirt__pool_free(r, B, infinirt__want_any()));
    /* Large block: stream B cannot have it while A's fence is pending... */
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, A, (void **)&x));
    ASSERT_OK(infinirt__pool_free(x, A, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, B, (void **)&r));
    ASSERT_PTR_NE(r, x);
    ASSERT_OK(infinirt__pool_free(r, B, infinirt__want_any())); /* B is idle: no fence */
    /* ...and can once it completes (after B's own cached block). */
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, B, (void **)&r));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, B, (void **)&r2));
    ASSERT_PTR_EQ(r2, x);
    ASSERT_OK(infinirt__pool_free(r, B, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(r2, B, infinirt__want_any()));
    /* A block freed on another stream than its own waits for that fence. */
    ASSERT_OK(infinirt__pool_alloc(pool, 8192, A, (void **)&p));
    fake_set_busy(&f, B);
    ASSERT_OK(infinirt__pool_free(p, B, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, 8192, A, (void **)&q));
    ASSERT(q + 8192 <= p || q >= p + 8192);
    fake_complete_all(&f);
    /* Completed: it comes back at the latest when the bins run dry. */
    char *got[600];
    int n = 0, seen = 0;
    while (n < 600 && !seen) {
        ASSERT_OK(infinirt__pool_alloc(pool, 8192, A, (void **)&got[n]));
        seen = got[n++] == p;
    }
    ASSERT(seen);
    while (n > 0)
        ASSERT_OK(infinirt__pool_free(got[--n], A, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(q, A, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

static int test_stream_order_sync(void)
{
    fake f;
    fake_init(&f, 0, 0, "sync");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *A = (void *)0xA0;
    char *p, *q, *r, *s;
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, INFINIRT__POOL_SYNC, (void **)&p));
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, INFINIRT__POOL_SYNC, (void **)&s));
    fake_set_busy(&f, A); /* work on any stream pins a synchronous free */
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(s, infinirt__want_any()));
    ASSERT_EQ(f.taken, 2);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, INFINIRT__POOL_SYNC, (void **)&q));
    ASSERT(q + 3000 <= p || q >= p + 3000);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, A, (void **)&r));
    ASSERT(r + 3000 <= p || r >= p + 3000);
    ASSERT_OK(infinirt__pool_free(r, A, infinirt__want_any()));
    char *t;
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, INFINIRT__POOL_SYNC, (void **)&t));
    ASSERT_PTR_NE(t, s);
    ASSERT_OK(infinirt__pool_free_sync(t, infinirt__want_any()));
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, INFINIRT__POOL_SYNC, (void **)&t));
    char *t2;
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, INFINIRT__POOL_SYNC, (void **)&t2));
    ASSERT(t == s || t2 == s);
    ASSERT_OK(infinirt__pool_free_sync(t, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(t2, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    /* Nothing in flight: a synchronous free takes no fence. */
    size_t before = f.taken;
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, INFINIRT__POOL_SYNC, (void **)&q));
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_EQ(f.taken, before);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* The NULL stream is a stream like any other: a block freed on it behind
 * queued work is reusable at once by later allocations on the NULL stream
 * (MallocAsync(NULL): their work is ordered after the free's), never by a
 * synchronous one (Malloc, INFINIRT__POOL_SYNC), whose memory any stream -
 * a non-blocking one too - may use at once.  Whichever made the block:
 * MallocAsync(NULL) or Malloc.  A size for the quick lists and one that
 * takes a large segment whole. */
static int test_null_free_sync_alloc(void)
{
    fake f;
    fake_init(&f, 0, 0, "nullfree");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    static const size_t sizes[] = {4096, MiB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        for (int made_sync = 0; made_sync < 2; made_sync++) {
            char *p, *q, *r;
            ASSERT_OK(infinirt__pool_alloc(pool, n, made_sync ? INFINIRT__POOL_SYNC : NULL, (void **)&p));
            fake_set_busy(&f, NULL); /* work using p queued on the NULL stream */
            ASSERT_OK(infinirt__pool_free(p, NULL, infinirt__want_any()));
            ASSERT_OK(infinirt__pool_alloc(pool, n, INFINIRT__POOL_SYNC, (void **)&q));
            if (!(q + n <= p || q >= p + n))
                TEST_FAILED_("%zu bytes%s: a synchronous allocation got %p, freed on the NULL stream behind "
                             "work still queued",
                             n, made_sync ? " (from one)" : "", (void *)p);
            ASSERT_OK(infinirt__pool_alloc(pool, n, NULL, (void **)&r));
            if (!made_sync)
                ASSERT_PTR_EQ(r, p); /* the NULL stream itself reuses it at once */
            ASSERT_OK(infinirt__pool_free(r, NULL, infinirt__want_any()));
            ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
            fake_complete_all(&f);
            CHECK(check_stats(pool, &f, 0, 0));
        }
    }
    return finish(pool, &f);
}

/* A backend's quiet_while_zero word: while it reads 0 a free, synchronous
 * or stream-ordered, asks for no fence at all (the backend promises none would be given: here
 * the pool is made to trust it against a busy stream, to show the call is
 * skipped); once it reads non-zero the free asks again, and the busy
 * stream pins the block. */
static int test_quiet_word(void)
{
    fake f;
    fake_init(&f, 0, 0, "quiet");
    atomic_uint_fast64_t word = 0;
    f.be.quiet_while_zero = &word;
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    char *p, *q, *r;
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&p));
    fake_set_busy(&f, (void *)0xA0);
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    ASSERT_EQ(f.take_calls, 0);
    ASSERT_EQ(f.taken, 0);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&q));
    ASSERT(q == p); /* back at once */
    atomic_store(&word, 1);
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_EQ(f.take_calls, 1);
    ASSERT_EQ(f.taken, 1);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&r));
    ASSERT(r + 3000 <= q || r >= q + 3000); /* pinned by the fence */
    ASSERT_OK(infinirt__pool_free_sync(r, infinirt__want_any()));
    /* A stream-ordered free trusts the word too: no call while it reads
     * 0, the backend's fence once it does not. */
    void *A = (void *)0xA0;
    char *s;
    int calls = f.take_calls;
    atomic_store(&word, 0);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, A, (void **)&s));
    ASSERT_OK(infinirt__pool_free(s, A, infinirt__want_any()));
    ASSERT_EQ(f.take_calls, calls);
    atomic_store(&word, 1);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, A, (void **)&s));
    ASSERT_OK(infinirt__pool_free(s, A, infinirt__want_any()));
    ASSERT_EQ(f.take_calls, calls + 1);
    fake_complete_all(&f);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* A free whose fence can be neither taken nor waited for fails and frees
 * nothing: the block stays allocated (not reused, freeable later), for a
 * stream-ordered and for a synchronous free. */
static int test_free_fence_fails(void)
{
    fake f;
    fake_init(&f, 0, 0, "take fails");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *A = (void *)0xA0;
    char *p, *q, *r;
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, A, (void **)&p));
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&q));
    fake_set_busy(&f, A);
    infinirtAllocatorStats_t before, after;
    infinirt__pool_stats(pool, &before);
    f.take_fails = INFINI_STATUS_INTERNAL_ERROR;
    ASSERT_STATUS(infinirt__pool_free(p, A, infinirt__want_any()), INFINI_STATUS_INTERNAL_ERROR);
    ASSERT_STATUS(infinirt__pool_free_sync(q, infinirt__want_any()), INFINI_STATUS_INTERNAL_ERROR);
    infinirt__pool_stats(pool, &after);
    ASSERT_EQ(after.allocated_bytes, before.allocated_bytes);
    ASSERT_EQ(after.active_blocks, 2);
    /* Neither is handed out again, on A or elsewhere. */
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, A, (void **)&r));
    ASSERT(r + 3000 <= p || r >= p + 3000);
    ASSERT(r + 3000 <= q || r >= q + 3000);
    f.take_fails = INFINI_STATUS_SUCCESS;
    /* Still theirs to free: not a double free. */
    ASSERT_OK(infinirt__pool_free(p, A, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(r, A, infinirt__want_any()));
    fake_complete_all(&f);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ------------------------------------------------------ out of memory */

static int test_oom_retry(void)
{
    fake f;
    fake_init(&f, 8 * MiB, 0, "oom");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a[3], *big, *more;
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, 2 * MiB, NULL, &a[i]));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirt__pool_free_sync(a[i], infinirt__want_any()));
    ASSERT_EQ(fake_live(&f), 6 * MiB); /* cached */
    ASSERT_OK(infinirt__pool_alloc(pool, 5 * MiB, NULL, &big));
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.retries, 1);
    ASSERT_EQ(st.oom_count, 0);
    ASSERT_EQ(st.reserved_bytes, 5 * MiB);
    ASSERT_EQ(infinirt__pool_alloc(pool, 4 * MiB, NULL, &more), INFINI_STATUS_OUT_OF_MEMORY);
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.retries, 2);
    ASSERT_EQ(st.oom_count, 1);
    ASSERT_EQ(st.alloc_requests, 4);
    CHECK(check_stats(pool, &f, 5 * MiB, 1));
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &more));
    ASSERT_OK(infinirt__pool_free_sync(big, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(more, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

static int test_oom_waits_for_fences(void)
{
    fake f;
    fake_init(&f, 8 * MiB, 0, "oomwait");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a, *b, *c;
    ASSERT_OK(infinirt__pool_alloc(pool, 5 * MiB, NULL, &a));
    ASSERT_OK(infinirt__pool_alloc(pool, 2 * MiB, NULL, &b));
    fake_set_busy(&f, NULL);
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any())); /* pending */
    size_t waits = f.waits;
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &c));
    ASSERT_GT(f.waits, waits); /* only the out-of-memory path waits */
    CHECK(check_stats(pool, &f, 8 * MiB, 2));
    ASSERT_OK(infinirt__pool_free_sync(a, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(c, infinirt__want_any()));
    return finish(pool, &f);
}

static int test_oom_last_resort(void)
{
    fake f;
    fake_init(&f, 2 * MiB, 0, "carve");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *s, *l;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, NULL, &s)); /* a 2 MiB small segment: full */
    ASSERT_OK(infinirt__pool_alloc(pool, 100 * KiB, NULL, &l));
    ASSERT(fake_contains(&f, l, 100 * KiB));
    CHECK(check_stats(pool, &f, 1000 + 100 * KiB, 2));
    ASSERT_OK(infinirt__pool_free_sync(l, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(s, infinirt__want_any()));
    return finish(pool, &f);
}

static int test_max_alloc_size(void)
{
    fake f;
    fake_init(&f, 0, 4 * MiB + 1000, "maxalloc");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *p;
    ASSERT_EQ(infinirt__pool_alloc(pool, 5 * MiB, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_alloc(pool, SIZE_MAX, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirt__pool_alloc(pool, 4 * MiB, NULL, &p));
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    for (int i = 0; i < 500; i++) {
        size_t size = 1 + rnd() % (4 * MiB);
        ASSERT_OK(infinirt__pool_alloc(pool, size, NULL, &p));
        ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    }
    ASSERT_LE(f.max_raw, 4 * MiB + 1000);
    CHECK(check_stats(pool, &f, 0, 0));
    infinirt__pool_destroy(pool);
    /* A device whose limit is below the small-segment size. */
    f.be.max_alloc_size = 256 * KiB;
    pool = make_pool(&f, NULL);
    f.max_raw = 0;
    void *ps[64];
    for (int i = 0; i < 64; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, 1 + rnd() % (256 * KiB), NULL, &ps[i]));
    for (int i = 0; i < 64; i++)
        ASSERT_OK(infinirt__pool_free_sync(ps[i], infinirt__want_any()));
    ASSERT_LE(f.max_raw, 256 * KiB);
    return finish(pool, &f);
}

/* Near the backend's capacity the pool stops trading memory for speed: a
 * free block 4.7% too big is no longer handed out whole. */
static int test_strict_near_capacity(void)
{
    fake f;
    fake_init(&f, 0, 0, "strict");
    f.be.total_memory = 16 * MiB;
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a, *b, *big;
    ASSERT_OK(infinirt__pool_alloc(pool, MiB + 48 * KiB, NULL, &a));
    ASSERT_OK(infinirt__pool_free_sync(a, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &b));
    ASSERT_PTR_EQ(b, a); /* far from capacity: reused whole */
    ASSERT_OK(infinirt__pool_alloc(pool, 12 * MiB, NULL, &big));
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &b));
    ASSERT_PTR_NE(b, a); /* near it: an exact segment instead */
    CHECK(check_stats(pool, &f, 13 * MiB, 2));
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(big, infinirt__want_any()));
    return finish(pool, &f);
}

/* The same random trace (RMM's random_allocations, scaled down) replayed
 * again and again - carving fragments the big segments differently each
 * time - must not grow the cache without bound: at most three times the
 * most ever in use, plus one segment. */
static int test_bounded_cache(void)
{
    fake f;
    fake_init(&f, 0, 0, "bounded");
    infinirt__pool *pool = make_pool(&f, NULL);
    enum { N = 4000 };
    const size_t cap = 64 * MiB, max = 4 * MiB;
    void *live[N];
    size_t sizes[N], peak_reserved = 0;
    for (int rep = 0; rep < 60; rep++) {
        uint64_t saved = g_rng;
        g_rng = 12345; /* the same trace every time */
        size_t n = 0, made = 0, bytes = 0;
        for (int i = 0; i < 2 * N; i++) {
            size_t size = 1 + rnd() % max;
            if (n == 0 || (rnd() % 100 < 73 && made < N && bytes + size < cap)) {
                ASSERT_OK(infinirt__pool_alloc(pool, size, NULL, &live[n]));
                sizes[n++] = size;
                bytes += size;
                made++;
            } else {
                size_t k = rnd() % n;
                ASSERT_OK(infinirt__pool_free_sync(live[k], infinirt__want_any()));
                bytes -= sizes[k];
                live[k] = live[--n];
                sizes[k] = sizes[n];
            }
            size_t r = fake_live(&f);
            peak_reserved = r > peak_reserved ? r : peak_reserved;
        }
        while (n > 0)
            ASSERT_OK(infinirt__pool_free_sync(live[--n], infinirt__want_any()));
        g_rng = saved;
    }
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    printf("peak allocated %zu, peak reserved %zu (%.2fx)\n", st.peak_allocated_bytes, peak_reserved,
           (double)peak_reserved / (double)st.peak_allocated_bytes);
    ASSERT_LE(peak_reserved, 3 * (st.peak_allocated_bytes + st.peak_allocated_bytes / 16) + max);
    return finish(pool, &f);
}

/* --------------------------------------------------------------- runner */

int main(int argc, char **argv)
{
    static const test_case tests[] = {ALLOC_TESTS(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
