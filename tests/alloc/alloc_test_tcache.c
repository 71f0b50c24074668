/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_tcache.c - thread arenas (loader/alloc/alloc_tcache.c): each
 * thread's own arena for its small allocations on the NULL stream.  Reuse
 * on the thread at once and in LIFO order, by nobody else before the
 * fence; the arena given back when its thread exits, drained by trim while
 * its thread lives, dropped when the pool goes first; the statistics and
 * the peak exact across threads, and beside a stream's arena that keeps
 * slack as they do.  White-box: it reads the arena table through
 * alloc_pool.h.
 */
#define _GNU_SOURCE
#include "alloc_pool.h"
#include "alloc_test.h"

#include <pthread.h>
#include <stdlib.h>

/* ------------------------------------------------------------ helpers */

/* The arena holding p, and whether it is a thread's own. */
static infinirt__arena *arena_of(const void *p, bool *owned)
{
    infinirt__seg *s;
    infinirt__arena *a = infinirt__dir_lock_owner((uintptr_t)p, &s, true);
    if (a == NULL)
        return NULL;
    *owned = a->owner != NULL;
    infinirt__spin_unlock(&a->lock);
    return a;
}

typedef struct {
    unsigned owned;       /* own arenas in use */
    unsigned shared_null; /* shared arenas of the NULL stream in use */
    unsigned narenas;
    size_t shared_null_reserved;
} census;

static census take_census(infinirt__pool *pool)
{
    census c = {0};
    pthread_mutex_lock(&pool->mu);
    c.narenas = pool->narenas;
    for (unsigned i = 0; i < pool->narenas; i++) {
        infinirt__arena *a = pool->arenas[i];
        infinirt__spin_lock_read(&a->lock);
        if (a->in_use && a->owner != NULL)
            c.owned++;
        else if (a->in_use && a->stream == NULL) {
            c.shared_null++;
            c.shared_null_reserved += a->reserved;
        }
        infinirt__spin_unlock(&a->lock);
    }
    pthread_mutex_unlock(&pool->mu);
    return c;
}

/* A helper thread that runs the steps the test gives it, one at a time,
 * and stays alive between them (its arena with it) until told to exit. */
typedef struct worker {
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int (*step)(struct worker *w); /* the next step; NULL: none yet */
    bool quit, done;
    int rc; /* the last step's result */
    infinirt__pool *pool;
    void *p[256];
    void *arena; /* the arena of its last allocation */
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->step == NULL && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->step == NULL)
            break;
        int (*step)(worker *) = w->step;
        pthread_mutex_unlock(&w->mu);
        int rc = step(w);
        pthread_mutex_lock(&w->mu);
        w->rc = rc;
        w->step = NULL;
        w->done = true;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void worker_start(worker *w, infinirt__pool *pool)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->pool = pool;
    pthread_create(&w->t, NULL, worker_main, w);
}

/* Run one step on w's thread and wait for it. */
static int worker_do(worker *w, int (*step)(worker *))
{
    pthread_mutex_lock(&w->mu);
    w->done = false;
    w->step = step;
    pthread_cond_broadcast(&w->cv);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    int rc = w->rc;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* The thread exits (its thread-specific destructors run) and is joined. */
static void worker_exit(worker *w)
{
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->t, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

static bool inside(const void *p, uintptr_t base, size_t size)
{
    return (uintptr_t)p - base < size;
}

/* ------------------------------------------------------------- reuse */

/* On its thread, a small block freed on the NULL stream comes back at once
 * for the next request of its size on that stream (LIFO), even with work
 * queued there; never for another stream's request, nor a synchronous
 * one's (any stream may use those at once).  Large requests are the
 * shared arena's. */
int test_tcache_reuse_order(void)
{
    fake f;
    fake_init(&f, 0, 0, "reuse");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    void *a, *b, *c, *d;
    ASSERT_OK(infinirt__pool_alloc(pool, 64, NULL, &a));
    ASSERT_OK(infinirt__pool_alloc(pool, 64, NULL, &b));
    bool owned = false;
    ASSERT(arena_of(a, &owned) != NULL);
    ASSERT(owned);
    ASSERT_OK(infinirt__pool_free(a, NULL, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(b, NULL, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, 64, NULL, &c));
    ASSERT_OK(infinirt__pool_alloc(pool, 64, NULL, &d));
    ASSERT_PTR_EQ(c, b);
    ASSERT_PTR_EQ(d, a);
    /* Work queued on the NULL stream: the block is still the stream's. */
    fake_set_busy(&f, NULL);
    ASSERT_OK(infinirt__pool_free(c, NULL, infinirt__want_any()));
    void *again, *s, *sy;
    ASSERT_OK(infinirt__pool_alloc(pool, 64, NULL, &again));
    ASSERT_PTR_EQ(again, c);
    ASSERT_OK(infinirt__pool_free(again, NULL, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, 64, (void *)0x1000, &s));
    ASSERT_OK(infinirt__pool_alloc(pool, 64, INFINIRT__POOL_SYNC, &sy));
    ASSERT_PTR_NE(s, c);
    ASSERT_PTR_NE(sy, c);
    ASSERT(arena_of(s, &owned) != NULL);
    ASSERT(!owned);
    ASSERT(arena_of(sy, &owned) != NULL);
    ASSERT(!owned);
    void *big;
    ASSERT_OK(infinirt__pool_alloc(pool, 100 * KiB, NULL, &big));
    ASSERT(arena_of(big, &owned) != NULL);
    ASSERT(!owned);
    CHECK(check_stats(pool, &f, 64 + 64 + 64 + 100 * KiB, 4));
    ASSERT_OK(infinirt__pool_free(big, NULL, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(s, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(sy, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(d, infinirt__want_any()));
    fake_complete_all(&f);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ------------------------------------------------- threads, thread exit */

static int step_alloc_small(worker *w)
{
    for (int i = 0; i < 64; i++)
        if (infinirt__pool_alloc(w->pool, 1000 + (size_t)i, NULL, &w->p[i]) != INFINI_STATUS_SUCCESS)
            return TEST_FAIL;
    bool owned = false;
    w->arena = arena_of(w->p[0], &owned);
    return owned ? TEST_OK : TEST_FAIL;
}

/* Frees the first half (cached in its arena), keeps the rest. */
static int step_free_half(worker *w)
{
    for (int i = 0; i < 32; i++)
        if (infinirt__pool_free(w->p[i], NULL, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
            return TEST_FAIL;
    return TEST_OK;
}

/* Two threads allocating small blocks on the NULL stream have an arena
 * each, neither the shared one; when they exit, their arenas are out of
 * use and everything they held - their live blocks and the blocks they
 * freed and cached - is in the shared arena of the NULL stream, which
 * frees and trims them like any block. */
int test_tcache_exit_drain(void)
{
    fake f;
    fake_init(&f, 0, 0, "exit");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    worker w[2];
    for (int k = 0; k < 2; k++) {
        worker_start(&w[k], pool);
        ASSERT_EQ(worker_do(&w[k], step_alloc_small), TEST_OK);
        ASSERT_EQ(worker_do(&w[k], step_free_half), TEST_OK);
    }
    ASSERT(w[0].arena != w[1].arena);
    census c = take_census(pool);
    ASSERT_EQ(c.owned, 2);
    ASSERT_EQ(c.shared_null, 0);
    size_t live = 0;
    for (int i = 32; i < 64; i++)
        live += 1000 + (size_t)i;
    CHECK(check_stats(pool, &f, 2 * live, 64));
    infinirtAllocatorStats_t before;
    infinirt__pool_stats(pool, &before);
    for (int k = 0; k < 2; k++)
        worker_exit(&w[k]);
    c = take_census(pool);
    ASSERT_EQ(c.owned, 0);
    ASSERT_EQ(atomic_load(&pool->nowned), 0);
    ASSERT_EQ(c.shared_null, 1);
    /* Every segment the threads had, with its cached blocks, went over. */
    ASSERT_EQ(c.shared_null_reserved, before.reserved_bytes);
    CHECK(check_stats(pool, &f, 2 * live, 64));
    for (int k = 0; k < 2; k++) {
        for (int i = 32; i < 64; i++) {
            bool owned = true;
            ASSERT(arena_of(w[k].p[i], &owned) != NULL);
            ASSERT(!owned);
            ASSERT_OK(infinirt__pool_free(w[k].p[i], NULL, infinirt__want_any()));
        }
    }
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_EQ(fake_live(&f), 0);
    return finish(pool, &f);
}

static int step_churn(worker *w)
{
    void *p;
    if (infinirt__pool_alloc(w->pool, 4 * KiB, NULL, &p) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    return infinirt__pool_free(p, NULL, infinirt__want_any()) == INFINI_STATUS_SUCCESS ? TEST_OK : TEST_FAIL;
}

/* Threads that come and go one after another reuse the arenas and the
 * segments the earlier ones gave back: the arena table and the backend's
 * memory stay as they were after the first. */
int test_tcache_thread_churn(void)
{
    fake f;
    fake_init(&f, 0, 0, "churn");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    unsigned narenas = 0;
    size_t raw = 0;
    for (int i = 0; i < 50; i++) {
        worker w;
        worker_start(&w, pool);
        ASSERT_EQ(worker_do(&w, step_churn), TEST_OK);
        worker_exit(&w);
        census c = take_census(pool);
        ASSERT_EQ(c.owned, 0);
        if (i == 0) {
            narenas = c.narenas;
            raw = fake_nraw(&f);
        }
        ASSERT_EQ(c.narenas, narenas);
        ASSERT_EQ(fake_nraw(&f), raw);
    }
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ---------------------------------------------------------------- trim */

static int step_fill_and_free(worker *w)
{
    /* Three segments' worth, freed on a busy stream: cached behind fences. */
    enum { N = 3 * 2048 };
    void **v = malloc(N * sizeof *v);
    int rc = v != NULL ? TEST_OK : TEST_FAIL;
    for (int i = 0; i < N && rc == TEST_OK; i++)
        if (infinirt__pool_alloc(w->pool, 1000, NULL, &v[i]) != INFINI_STATUS_SUCCESS)
            rc = TEST_FAIL;
    for (int i = 0; i < N && rc == TEST_OK; i++)
        if (infinirt__pool_free(v[i], NULL, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
            rc = TEST_FAIL;
    free(v);
    return rc;
}

/* Trim gives back what every thread's arena caches while the threads
 * still live, fences included; they allocate as before afterwards. */
int test_tcache_trim_drains(void)
{
    fake f;
    fake_init(&f, 0, 0, "trim");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    fake_set_busy(&f, NULL);
    worker w[3];
    for (int k = 0; k < 3; k++) {
        worker_start(&w[k], pool);
        ASSERT_EQ(worker_do(&w[k], step_fill_and_free), TEST_OK);
    }
    ASSERT_EQ(take_census(pool).owned, 3);
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_GE(fake_live(&f), 3 * 2 * MiB);
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_EQ(fake_live(&f), 0);
    for (int k = 0; k < 3; k++) {
        ASSERT_EQ(worker_do(&w[k], step_churn), TEST_OK);
        worker_exit(&w[k]);
    }
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_EQ(fake_live(&f), 0);
    return finish(pool, &f);
}

/* ----------------------------------------------------------- statistics */

static size_t g_sz;
static int step_alloc_sz(worker *w)
{
    return infinirt__pool_alloc(w->pool, g_sz, NULL, &w->p[0]) == INFINI_STATUS_SUCCESS ? TEST_OK : TEST_FAIL;
}
static int step_free0(worker *w)
{
    return infinirt__pool_free(w->p[0], NULL, infinirt__want_any()) == INFINI_STATUS_SUCCESS ? TEST_OK : TEST_FAIL;
}

static int stats_are(infinirt__pool *pool, size_t allocated, size_t peak)
{
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.allocated_bytes, allocated);
    ASSERT_EQ(st.peak_allocated_bytes, peak);
    return TEST_OK;
}

/* The allocated bytes and the peak stay exact while threads allocate from
 * their own arenas in turn: a thread's freed bytes, still published
 * (slack), make no peak of their own, and a sum that does exist is
 * caught; a reset starts from the exact current sum. */
int test_tcache_stats_exact(void)
{
    fake f;
    fake_init(&f, 0, 0, "stats");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    worker t1, t2;
    worker_start(&t1, pool);
    worker_start(&t2, pool);
    g_sz = 10000;
    ASSERT_EQ(worker_do(&t1, step_alloc_sz), TEST_OK);
    CHECK(stats_are(pool, 10000, 10000));
    ASSERT_EQ(worker_do(&t1, step_free0), TEST_OK);
    CHECK(stats_are(pool, 0, 10000));
    g_sz = 3000;
    ASSERT_EQ(worker_do(&t2, step_alloc_sz), TEST_OK);
    CHECK(stats_are(pool, 3000, 10000)); /* not 13000: t1's 10000 are gone */
    g_sz = 9000;
    ASSERT_EQ(worker_do(&t1, step_alloc_sz), TEST_OK);
    CHECK(stats_are(pool, 12000, 12000)); /* a new peak, not a missed one */
    ASSERT_EQ(worker_do(&t1, step_free0), TEST_OK);
    ASSERT_EQ(worker_do(&t2, step_free0), TEST_OK);
    CHECK(stats_are(pool, 0, 12000));
    infinirt__pool_reset_peak(pool);
    CHECK(stats_are(pool, 0, 0));
    g_sz = 100;
    ASSERT_EQ(worker_do(&t2, step_alloc_sz), TEST_OK);
    CHECK(stats_are(pool, 100, 100));
    /* A stream's shared arena beside them. */
    void *s;
    ASSERT_OK(infinirt__pool_alloc(pool, 50, (void *)0x1000, &s));
    CHECK(stats_are(pool, 150, 150));
    ASSERT_OK(infinirt__pool_free(s, (void *)0x1000, infinirt__want_any()));
    /* The thread exits holding its block: nothing changes. */
    worker_exit(&t1);
    worker_exit(&t2);
    CHECK(stats_are(pool, 100, 150));
    CHECK(check_stats(pool, &f, 100, 1));
    ASSERT_OK(infinirt__pool_free(t2.p[0], NULL, infinirt__want_any()));
    CHECK(stats_are(pool, 0, 150));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* A stream's arena in which one thread allocates and frees over and over
 * (an operator's temporaries: MallocAsync, FreeAsync) keeps its falls as
 * slack, published no more: the peak stays exact all the same.  Its slack
 * makes no peak when another stream rises (a peak event takes it out), a
 * sum that does exist is caught, and a reset or the stream's retire takes
 * the slack out of the pool's total. */
int test_stream_slack_peak(void)
{
    fake f;
    fake_init(&f, 0, 0, "slack");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *A = (void *)0x5000, *B = (void *)0x6000, *w, *p, *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, INFINIRT__POOL_SYNC, &w)); /* weights: a second arena */
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(infinirt__pool_alloc(pool, 4000, A, &p));
        ASSERT_OK(infinirt__pool_free(p, A, infinirt__want_any()));
    }
    ASSERT_EQ(atomic_load(&pool->nslack), 1); /* A keeps its 4000 as slack */
    ASSERT_EQ(atomic_load(&pool->pub_total), 5000);
    CHECK(stats_are(pool, 1000, 5000));
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, B, &q));
    CHECK(stats_are(pool, 4000, 5000)); /* not 8000: A's 4000 are gone */
    ASSERT_EQ(atomic_load(&pool->nslack), 0);
    ASSERT_OK(infinirt__pool_alloc(pool, 4000, A, &p));
    CHECK(stats_are(pool, 8000, 8000)); /* a new peak, not a missed one */
    ASSERT_OK(infinirt__pool_free(q, B, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(p, A, infinirt__want_any()));
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(infinirt__pool_alloc(pool, 2000, A, &p));
        ASSERT_OK(infinirt__pool_free(p, A, infinirt__want_any()));
    }
    ASSERT_EQ(atomic_load(&pool->nslack), 1);
    infinirt__pool_reset_peak(pool);
    CHECK(stats_are(pool, 1000, 1000));
    ASSERT_EQ(atomic_load(&pool->nslack), 0);
    ASSERT_EQ(atomic_load(&pool->pub_total), 1000);
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(infinirt__pool_alloc(pool, 2000, A, &p));
        ASSERT_OK(infinirt__pool_free(p, A, infinirt__want_any()));
    }
    ASSERT_EQ(atomic_load(&pool->nslack), 1);
    infinirt__pool_stream_retired(pool, A);
    ASSERT_EQ(atomic_load(&pool->nslack), 0);
    ASSERT_EQ(atomic_load(&pool->pub_total), 1000);
    ASSERT_OK(infinirt__pool_alloc(pool, 500, B, &q));
    CHECK(stats_are(pool, 1500, 3000)); /* the reset's 1000, then A's 2000 above it */
    ASSERT_OK(infinirt__pool_free(q, B, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(w, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ------------------------------------------------ another thread, fences */

static int step_free_busy(worker *w)
{
    /* A 64 KiB block: the thread's first, alone in its 2 MiB segment. */
    if (infinirt__pool_alloc(w->pool, 64 * KiB, NULL, &w->p[0]) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    return infinirt__pool_free(w->p[0], NULL, infinirt__want_any()) == INFINI_STATUS_SUCCESS ? TEST_OK : TEST_FAIL;
}

static uintptr_t g_seg_base;
static int step_alloc_elsewhere(worker *w)
{
    if (infinirt__pool_alloc(w->pool, 64 * KiB, NULL, &w->p[1]) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    return inside(w->p[1], g_seg_base, 2 * MiB) ? TEST_FAIL : TEST_OK;
}
static int step_alloc_inside(worker *w)
{
    if (infinirt__pool_alloc(w->pool, 64 * KiB, NULL, &w->p[1]) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    return inside(w->p[1], g_seg_base, 2 * MiB) ? TEST_OK : TEST_FAIL;
}
static int step_free1(worker *w)
{
    return infinirt__pool_free(w->p[1], NULL, infinirt__want_any()) == INFINI_STATUS_SUCCESS ? TEST_OK : TEST_FAIL;
}

/* Memory a thread freed on the NULL stream behind queued work reaches
 * nobody else - another thread's NULL-stream allocations, a stream's, a
 * synchronous one - before that work is done, whether the thread still
 * lives or has exited (its arena given back with the segment's fence);
 * once the work is done another thread's arena takes the segment over
 * without asking the backend. */
int test_tcache_fence_other_thread(void)
{
    fake f;
    fake_init(&f, 0, 0, "fence");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    fake_set_busy(&f, NULL);
    worker t1, t2;
    worker_start(&t1, pool);
    worker_start(&t2, pool);
    ASSERT_EQ(worker_do(&t1, step_free_busy), TEST_OK);
    g_seg_base = (uintptr_t)t1.p[0];
    ASSERT_EQ(fake_nraw(&f), 1);
    ASSERT_EQ(worker_do(&t2, step_alloc_elsewhere), TEST_OK);
    void *sy, *s;
    ASSERT_OK(infinirt__pool_alloc(pool, 64 * KiB, INFINIRT__POOL_SYNC, &sy));
    ASSERT(!inside(sy, g_seg_base, 2 * MiB));
    ASSERT_OK(infinirt__pool_alloc(pool, 64 * KiB, (void *)0x1000, &s));
    ASSERT(!inside(s, g_seg_base, 2 * MiB));
    /* The thread exits: its segment is the shared arena's now, fenced. */
    worker_exit(&t1);
    ASSERT_EQ(take_census(pool).owned, 1);
    worker t3;
    worker_start(&t3, pool);
    ASSERT_EQ(worker_do(&t3, step_alloc_elsewhere), TEST_OK);
    void *s2;
    ASSERT_OK(infinirt__pool_alloc(pool, 64 * KiB, (void *)0x2000, &s2));
    ASSERT(!inside(s2, g_seg_base, 2 * MiB));
    /* The work is done: another thread's arena takes the segment over. */
    fake_complete_all(&f);
    size_t raw = fake_nraw(&f);
    worker t4;
    worker_start(&t4, pool);
    ASSERT_EQ(worker_do(&t4, step_alloc_inside), TEST_OK);
    ASSERT_EQ(fake_nraw(&f), raw);
    ASSERT_EQ(worker_do(&t4, step_free1), TEST_OK);
    ASSERT_EQ(worker_do(&t2, step_free1), TEST_OK);
    ASSERT_EQ(worker_do(&t3, step_free1), TEST_OK);
    worker_exit(&t2);
    worker_exit(&t3);
    worker_exit(&t4);
    ASSERT_OK(infinirt__pool_free_sync(sy, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(s, (void *)0x1000, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(s2, (void *)0x2000, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ------------------------------------------------------ pool destroyed */

/* A pool destroyed while a thread keeps an arena of it: the thread
 * allocates from the next pool as from a new one, and its exit touches
 * nothing of the pool that went (AddressSanitizer would see it). */
int test_tcache_pool_destroyed_first(void)
{
    fake f;
    fake_init(&f, 0, 0, "gone");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    worker w;
    worker_start(&w, pool);
    ASSERT_EQ(worker_do(&w, step_churn), TEST_OK);
    ASSERT_EQ(take_census(pool).owned, 1);
    CHECK(finish(pool, &f));
    for (int round = 0; round < 3; round++) {
        fake_init(&f, 0, 0, "next");
        pool = make_pool(&f, NULL);
        ASSERT(pool != NULL);
        w.pool = pool;
        ASSERT_EQ(worker_do(&w, step_alloc_small), TEST_OK);
        ASSERT_EQ(worker_do(&w, step_free_half), TEST_OK);
        ASSERT(w.arena != NULL);
        bool owned = false;
        ASSERT(arena_of(w.p[40], &owned) == w.arena);
        ASSERT(owned);
        if (round == 2)
            break;
        for (int i = 32; i < 64; i++)
            ASSERT_OK(infinirt__pool_free(w.p[i], NULL, infinirt__want_any()));
        CHECK(finish(pool, &f));
    }
    worker_exit(&w);
    ASSERT_EQ(take_census(pool).owned, 0);
    for (int i = 32; i < 64; i++)
        ASSERT_OK(infinirt__pool_free(w.p[i], NULL, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ------------------------------------------------ remembered blocks */

/* Allocates one 256 B block on the NULL stream, from its own arena, which
 * it remembers as its block used last (alloc_pool_lookup.c). */
static int step_alloc_remembered(worker *w)
{
    if (infinirt__pool_alloc(w->pool, 256, NULL, &w->p[0]) != INFINI_STATUS_SUCCESS)
        return TEST_FAIL;
    bool owned = false;
    const infinirt__lookup_hit *h = infinirt__lookup_hit_find((uintptr_t)w->p[0] + 255);
    return arena_of(w->p[0], &owned) != NULL && owned && h != NULL && h->start == (uintptr_t)w->p[0] ? TEST_OK
                                                                                                     : TEST_FAIL;
}

/* The block freed by another thread: this thread's entry no longer
 * stands, and no lookup finds the block. */
static int step_forgotten(worker *w)
{
    return infinirt__lookup_hit_find((uintptr_t)w->p[0]) == NULL && infinirt__pool_lookup(w->p[0], NULL) == 0
               ? TEST_OK
               : TEST_FAIL;
}

/* A MallocAsync block of a thread arena is remembered like any other, and
 * the entry never outlives it: another thread that frees it on the NULL
 * stream, into the owner's arena, takes that arena's lock and moves its
 * epoch.  (A thread's exit moves its segments to the shared arena, which
 * the entry sees too; its entries die with it.) */
int test_tcache_lookup_after_alloc(void)
{
    fake f;
    fake_init(&f, 0, 0, "remember");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    worker w;
    worker_start(&w, pool);
    ASSERT_EQ(worker_do(&w, step_alloc_remembered), TEST_OK);
    ASSERT_OK(infinirt__pool_free(w.p[0], NULL, infinirt__want_any()));
    ASSERT_EQ(worker_do(&w, step_forgotten), TEST_OK);
    /* Handed out again to its thread, then freed by this one again. */
    ASSERT_EQ(worker_do(&w, step_alloc_remembered), TEST_OK);
    ASSERT_OK(infinirt__pool_free(w.p[0], NULL, infinirt__want_any()));
    ASSERT_EQ(worker_do(&w, step_forgotten), TEST_OK);
    worker_exit(&w);
    fake_complete_all(&f);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}
