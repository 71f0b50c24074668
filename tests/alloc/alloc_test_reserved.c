/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_reserved.c - reserved_bytes and peak_reserved_bytes against
 * what the backend holds, at every moment a thread can observe: the fake
 * reads the pool's counter at each raw call, under its own lock
 * (fake_watch_reserved), and remembers its own peak.
 */
#define _GNU_SOURCE
#include "alloc_test.h"
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------- a free and an alloc, interleaved */

typedef struct {
    infinirt__pool *pool;
    fake *f;
    size_t size;
    void *p;
    infiniStatus_t st;
    infinirtAllocatorStats_t seen; /* the statistics right after the backend's free */
} race_arg;

static void *alloc_thread(void *arg)
{
    race_arg *r = arg;
    r->st = infinirt__pool_alloc(r->pool, r->size, NULL, &r->p);
    return NULL;
}

/* Between the backend taking a segment back and the free returning to the
 * pool: read the statistics (what any thread could read then), and let
 * another thread allocate as much, which the backend serves again. */
static void after_backend_free(void *arg)
{
    race_arg *r = arg;
    infinirt__pool_stats(r->pool, &r->seen);
    pthread_t t;
    pthread_create(&t, NULL, alloc_thread, r);
    pthread_join(t, NULL);
}

/* A segment given back while another thread allocates: reserved_bytes
 * never counts the bytes the backend already has back (nor those it has
 * handed out again twice), and peak_reserved_bytes stays at the backend's
 * own peak.  The free path forced into the window between the backend's
 * free and the pool's bookkeeping with the fake's after_free hook. */
int test_reserved_free_alloc_race(void)
{
    fake f;
    fake_init(&f, 0, 0, "race");
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.release_on_free = 1; /* an empty segment goes back at its free */
    infinirt__pool *pool = make_pool(&f, &cfg);
    ASSERT(pool != NULL);
    fake_watch_reserved(&f, pool);
    race_arg r = {.pool = pool, .f = &f, .size = 8 * MiB};
    void *p;
    ASSERT_OK(infinirt__pool_alloc(pool, r.size, NULL, &p));
    ASSERT_EQ(fake_live(&f), r.size);
    f.after_free = after_backend_free;
    f.after_free_arg = &r;
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    ASSERT_OK(r.st);
    /* While the backend held nothing, no statistics counted the segment. */
    ASSERT_EQ(r.seen.reserved_bytes, 0);
    ASSERT_EQ(r.seen.segments, 0);
    /* The counter never exceeded the backend's bytes at any raw call. */
    ASSERT_EQ(f.reserved_over, 0);
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.reserved_bytes, r.size);
    ASSERT_EQ(f.peak_live, r.size);
    ASSERT_LE(st.peak_reserved_bytes, f.peak_live);
    ASSERT_OK(infinirt__pool_free_sync(r.p, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_EQ(f.reserved_over, 0);
    return finish(pool, &f);
}

/* ------------------------------------------------ many threads, a limit */

enum { RES_THREADS = 8, RES_ROUNDS = 600, RES_HELD = 4 };

typedef struct {
    infinirt__pool *pool;
    int id;
} res_arg;

static void *res_worker(void *arg)
{
    res_arg *t = arg;
    void *stream = (void *)(uintptr_t)(0x100 * (t->id + 1));
    void *held[RES_HELD] = {0};
    uint32_t x = 2654435761u * (uint32_t)(t->id + 1);
    for (int r = 0; r < RES_ROUNDS; r++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        int k = (int)(x % RES_HELD);
        if (held[k] != NULL) {
            /* Half the frees on the block's stream, half synchronous. */
            if (free_either(held[k], (x >> 8) & 1, stream, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
                return (void *)1;
            held[k] = NULL;
            continue;
        }
        /* Small blocks (shared small segments) and large ones of up to
         * 6 MiB (a segment each): 8 threads holding 4 each can need more
         * than the limit, so the out-of-memory path releases and retries. */
        size_t size = (x >> 4) % 4 == 0 ? 1 + (x >> 8) % (64 * KiB) : 1 + (x >> 8) % (6 * MiB);
        infiniStatus_t st = infinirt__pool_alloc(t->pool, size, stream, &held[k]);
        if (st == INFINI_STATUS_OUT_OF_MEMORY)
            held[k] = NULL;
        else if (st != INFINI_STATUS_SUCCESS)
            return (void *)2;
    }
    for (int k = 0; k < RES_HELD; k++)
        if (held[k] != NULL && infinirt__pool_free(held[k], stream, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
            return (void *)3;
    return NULL;
}

/* 8 threads allocate and free under a 48 MiB limit with a small cache cap,
 * so segments come and go through the backend all the time (caps, the
 * out-of-memory release and retry, give-backs at free): at no raw call is
 * reserved_bytes above what the backend holds, and the pool's peak is
 * never above the backend's. */
int test_reserved_threads_limit(void)
{
    infinirt__log_set_default_level(INFINIRT__LOG_ERROR); /* the expected OOM lines */
    fake f;
    fake_init(&f, 48 * MiB, 0, "limit");
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.max_cached_bytes = 4 * MiB;
    infinirt__pool *pool = make_pool(&f, &cfg);
    ASSERT(pool != NULL);
    fake_watch_reserved(&f, pool);
    pthread_t th[RES_THREADS];
    res_arg args[RES_THREADS];
    for (int i = 0; i < RES_THREADS; i++) {
        args[i] = (res_arg){pool, i};
        ASSERT_EQ(pthread_create(&th[i], NULL, res_worker, &args[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < RES_THREADS; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        if (rc != NULL) {
            fprintf(stderr, "worker %d failed with %d\n", i, (int)(uintptr_t)rc);
            bad = 1;
        }
    }
    ASSERT_EQ(bad, 0);
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    if (f.reserved_over != 0)
        fprintf(stderr, "reserved_bytes exceeded the backend's bytes at %zu of %zu raw calls, by up to %zu bytes\n",
                f.reserved_over, f.raw_calls, f.reserved_excess);
    ASSERT_EQ(f.reserved_over, 0);
    ASSERT_LE(f.peak_live, 48 * MiB);
    ASSERT_LE(st.peak_reserved_bytes, f.peak_live);
    ASSERT_GT(st.raw_frees, 0); /* segments did go back meanwhile */
    fake_complete_all(&f);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}
