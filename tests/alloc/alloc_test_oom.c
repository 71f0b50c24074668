/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_oom.c - frees that cannot be queued behind their fence: the
 * pending queue could not grow (its realloc failed, made to by
 * alloc_faults.h).  The free then waits for its fence itself, with no
 * allocator lock held (builds with INFINIRT_LOCK_CHECKS abort otherwise),
 * and the block is handed out again only once the fence has completed.
 */
#define _GNU_SOURCE
#include "alloc_faults.h"
#include "alloc_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* The counter alloc_faults.h reads: the nth hooked realloc fails. */
atomic_int infinirt__test_fail_host_alloc;

typedef struct {
    infinirt__pool *pool;
    void *p;
    void *stream;
    bool sync;
    bool fast; /* the free takes the fast path (the thread's last arena) */
    atomic_bool returned;
} oom_free;

static void *free_thread(void *arg)
{
    oom_free *o = arg;
    void *warm = NULL;
    /* An allocation in p's arena makes it the thread's last one: the free
     * then takes pool_free's fast path, else free_slow. */
    if (o->fast)
        ASSERT_OK(infinirt__pool_alloc(o->pool, 64, (void *)0xA0, &warm));
    ASSERT_OK(free_either(o->p, o->sync, o->stream, infinirt__want_any()));
    atomic_store(&o->returned, true);
    if (warm != NULL)
        ASSERT_OK(infinirt__pool_free(warm, (void *)0xA0, infinirt__want_any()));
    return NULL;
}

/* Block p of `size`, allocated on stream A, is freed (on stream B, or
 * synchronously) while its fence is incomplete and the pending queue
 * cannot grow: the free blocks in fence_wait, and meanwhile an allocation
 * of the same size on A gets another block; once the fence completes the
 * free returns and p is reused. */
static int free_unqueued(bool sync, bool fast, size_t size)
{
#ifndef INFINIRT_ALLOC_FAULTS
    (void)sync, (void)fast, (void)size;
    return TEST_SKIP; /* a build without the failure hooks */
#endif
    fake f;
    fake_init(&f, 0, 0, sync ? "oom sync" : "oom async");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    void *A = (void *)0xA0, *B = (void *)0xB0;
    char *p, *q;
    ASSERT_OK(infinirt__pool_alloc(pool, size, A, (void **)&p));
    fake_set_busy(&f, sync ? A : B);
    f.wait_blocks = true;
    atomic_store(&infinirt__test_fail_host_alloc, 1);
    oom_free o = {pool, p, B, sync, fast, false};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, free_thread, &o), 0);
    while (fake_waiting(&f) == 0 && !atomic_load(&o.returned))
        sched_yield();
    /* The free waits for its fence: it did not return before that... */
    ASSERT(!atomic_load(&o.returned));
    /* ...and the queue's realloc was the one that failed. */
    ASSERT_EQ(atomic_load(&infinirt__test_fail_host_alloc), 0);
    ASSERT_EQ(f.taken, 1);
    ASSERT_EQ(f.released, 0);
    ASSERT_OK(infinirt__pool_alloc(pool, size, A, (void **)&q));
    ASSERT(q + size <= p || q >= p + size);
    /* The free is counted at once; the thread holds its 64 bytes. */
    CHECK(check_stats(pool, &f, size + (fast ? 64 : 0), fast ? 2 : 1));
    fake_complete_all(&f);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(f.waits, 1);
    ASSERT_EQ(f.released, 1);
    CHECK(check_stats(pool, &f, size, 1));
    /* Released into its arena: it comes back at the latest when the bins
     * run dry. */
    char *got[600];
    int n = 0, seen = 0;
    while (n < 600 && !seen) {
        ASSERT_OK(infinirt__pool_alloc(pool, size, A, (void **)&got[n]));
        seen = got[n++] == p;
    }
    ASSERT(seen);
    for (int i = 0; i < n; i++)
        ASSERT_OK(infinirt__pool_free(got[i], A, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(q, A, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

int test_free_unqueued_async(void)
{
    CHECK(free_unqueued(false, false, 8192));
    CHECK(free_unqueued(false, true, 8192));
    return free_unqueued(false, true, 3 * MiB);
}

int test_free_unqueued_sync(void)
{
    CHECK(free_unqueued(true, false, 3000));
    CHECK(free_unqueued(true, true, 3000));
    return free_unqueued(true, false, 3 * MiB);
}
