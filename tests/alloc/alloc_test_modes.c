/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_modes.c - what surrounds the alloc/free pair: pointers handed
 * back wrong (interior, foreign, freed twice, the other kind of pool) and
 * lookups of interior pointers; then the pool's modes and upkeep:
 * pass-through, release on free, a cap on the cache, trim and the peak's
 * reset, a retired stream's blocks.
 */
#include "alloc_test.h"

#include <pthread.h>

/* -------------------------------------------------- pointer validation */

int test_bad_free(void)
{
    fake f;
    fake_init(&f, 0, 0, "badfree");
    infinirt__pool *pool = make_pool(&f, NULL), *other = make_pool(&f, NULL);
    char *p, *q, *big;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, NULL, (void **)&p));
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&q));
    ASSERT_OK(infinirt__pool_alloc(pool, 300 * KiB, NULL, (void **)&big));
    infinirtAllocatorStats_t before, after;
    infinirt__pool_stats(pool, &before);
    int local;
    ASSERT_EQ(infinirt__pool_free_sync(p + 512, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(p + 1, NULL, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free_sync(big + 4096, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free_sync(&local, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free_sync(q, infinirt__want_pool(other)), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_stats(pool, &after);
    ASSERT_MEM_EQ(&before, &after, sizeof before);
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_pool(pool)));
    ASSERT_EQ(infinirt__pool_free_sync(p, infinirt__want_any()), INFINI_STATUS_BAD_PARAM); /* double free */
    infinirt__pool_stats(pool, &before);
    ASSERT_EQ(infinirt__pool_free(p, (void *)0x77, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_stats(pool, &after);
    ASSERT_MEM_EQ(&before, &after, sizeof before);
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(big, infinirt__want_any()));
    ASSERT_EQ(infinirt__pool_free_sync(big, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_destroy(other);
    /* Device memory only through want_device, host memory only through want_host. */
    fake hf;
    fake_init(&hf, 0, 0, "host");
    hf.be.device_id = -1;
    infinirt__pool *host = make_pool(&hf, NULL);
    char *h, *d;
    ASSERT_OK(infinirt__pool_alloc(host, 5000, NULL, (void **)&h));
    ASSERT_OK(infinirt__pool_alloc(pool, 5000, NULL, (void **)&d));
    ASSERT_EQ(infinirt__pool_free_sync(h, infinirt__want_device()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free_sync(d, infinirt__want_host()), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirt__pool_free_sync(h, infinirt__want_host()));
    ASSERT_OK(infinirt__pool_free_sync(d, infinirt__want_device()));
    CHECK(finish(host, &hf));
    return finish(pool, &f);
}

int test_lookup_interior(void)
{
    fake f;
    fake_init(&f, 0, 0, "lookup");
    f.be.device_type = INFINI_DEVICE_NVIDIA;
    f.be.device_id = 3;
    infinirt__pool *pool = make_pool(&f, NULL);
    char *p[40];
    size_t sz[40];
    for (int i = 0; i < 40; i++) {
        sz[i] = 1 + rnd() % (i % 2 ? 600 * KiB : 5000);
        ASSERT_OK(infinirt__pool_alloc(pool, sz[i], NULL, (void **)&p[i]));
    }
    for (int i = 0; i < 40; i += 3) /* holes between live blocks */
        ASSERT_OK(infinirt__pool_free_sync(p[i], infinirt__want_any()));
    infinirt__ptr_info info;
    for (int i = 0; i < 40; i++) {
        if (i % 3 == 0) {
            ASSERT_EQ(infinirt__pool_lookup(p[i], &info), 0);
            continue;
        }
        size_t offs[] = {0, 1, sz[i] / 2, sz[i] - 1};
        for (int k = 0; k < 4; k++) {
            ASSERT_EQ(infinirt__pool_lookup(p[i] + offs[k], &info), 1);
            ASSERT_PTR_EQ(info.block_base, p[i]);
            ASSERT_EQ(info.block_size, sz[i]);
            ASSERT_EQ(info.offset, offs[k]);
            ASSERT_EQ(info.device_type, INFINI_DEVICE_NVIDIA);
            ASSERT_EQ(info.device_id, 3);
        }
        /* Past the requested end: no longer this block (slack or a neighbour). */
        ASSERT(infinirt__pool_lookup(p[i] + sz[i], &info) == 0 || info.block_base != p[i]);
    }
    int local;
    ASSERT_EQ(infinirt__pool_lookup(&local, &info), 0);
    ASSERT_EQ(infinirt__pool_lookup(NULL, &info), 0);
    for (int i = 0; i < 40; i++)
        if (i % 3 != 0)
            ASSERT_OK(infinirt__pool_free_sync(p[i], infinirt__want_any()));
    /* Many blocks in one segment: the first lookup builds the block-start
     * bitmap, later splits and merges keep it right. */
    char *q[200];
    size_t qsz[200];
    for (int i = 0; i < 200; i++) {
        qsz[i] = 700 + (size_t)i;
        ASSERT_OK(infinirt__pool_alloc(pool, qsz[i], NULL, (void **)&q[i]));
    }
    for (int round = 0; round < 3; round++) {
        for (int i = round; i < 200; i += 3) {
            ASSERT_OK(infinirt__pool_free_sync(q[i], infinirt__want_any()));
            qsz[i] = 300 + (size_t)(i * (round + 1)) % 900;
            ASSERT_OK(infinirt__pool_alloc(pool, qsz[i], NULL, (void **)&q[i]));
        }
        for (int i = 0; i < 200; i++) {
            ASSERT_EQ(infinirt__pool_lookup(q[i] + qsz[i] - 1, &info), 1);
            ASSERT_PTR_EQ(info.block_base, q[i]);
            ASSERT_EQ(info.offset, qsz[i] - 1);
        }
    }
    for (int i = 0; i < 200; i++)
        ASSERT_OK(infinirt__pool_free_sync(q[i], infinirt__want_any()));
    return finish(pool, &f);
}

struct free_on {
    void *p, *stream;
    infiniStatus_t st;
};

static void *free_there(void *arg)
{
    struct free_on *f = arg;
    f->st = infinirt__pool_free(f->p, f->stream, infinirt__want_any());
    return NULL;
}

/* A stream-ordered allocation is remembered as this thread's block used
 * last, so that the copy into it that follows finds it with no lookup
 * under a lock; the entry never outlives the block: freed, handed out
 * again smaller, freed by another thread. */
int test_lookup_after_alloc(void)
{
    fake f;
    fake_init(&f, 0, 0, "remember");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *stream = (void *)(uintptr_t)0x1000;
    char *p, *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 256, stream, (void **)&p));
    const infinirt__lookup_hit *h = infinirt__lookup_hit_find((uintptr_t)p + 255);
    ASSERT_PTR_NE(h, NULL);
    ASSERT_EQ(h->start, (uintptr_t)p);
    ASSERT_EQ(h->req, 256);
    ASSERT_PTR_EQ(h->pool, pool);
    ASSERT_PTR_EQ(infinirt__lookup_hit_find((uintptr_t)p + 256), NULL);
    /* Freed: forgotten. */
    ASSERT_OK(infinirt__pool_free(p, stream, infinirt__want_any()));
    ASSERT_PTR_EQ(infinirt__lookup_hit_find((uintptr_t)p), NULL);
    ASSERT_EQ(infinirt__pool_lookup(p, NULL), 0);
    /* Handed out again, smaller: the entry has the new size. */
    ASSERT_OK(infinirt__pool_alloc(pool, 128, stream, (void **)&q));
    h = infinirt__lookup_hit_find((uintptr_t)q);
    ASSERT_PTR_NE(h, NULL);
    ASSERT_EQ(h->req, 128);
    ASSERT_PTR_EQ(infinirt__lookup_hit_find((uintptr_t)q + 200), NULL);
    infinirt__ptr_info info;
    ASSERT(infinirt__pool_lookup(q + 200, &info) == 0 || info.block_base != q);
    /* Freed by another thread: this thread's entry no longer stands. */
    struct free_on fo = {q, stream, INFINI_STATUS_INTERNAL_ERROR};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, free_there, &fo), 0);
    pthread_join(t, NULL);
    ASSERT_OK(fo.st);
    ASSERT_PTR_EQ(infinirt__lookup_hit_find((uintptr_t)q), NULL);
    ASSERT_EQ(infinirt__pool_lookup(q, NULL), 0);
    return finish(pool, &f);
}

/* ----------------------------------------------------------- modes */

int test_passthrough(void)
{
    fake f;
    fake_init(&f, 0, 0, "passthrough");
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.enabled = 0;
    infinirt__pool *pool = make_pool(&f, &cfg), *other = make_pool(&f, &cfg);
    char *p, *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, NULL, (void **)&p));
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, (void *)0x10, (void **)&q));
    ASSERT_EQ(fake_live(&f), 1000 + 3 * MiB); /* exact sizes: sanitizers see real bounds */
    CHECK(check_stats(pool, &f, 1000 + 3 * MiB, 2));
    infinirt__ptr_info info;
    ASSERT_EQ(infinirt__pool_lookup(q + 12345, &info), 1);
    ASSERT_PTR_EQ(info.block_base, q);
    ASSERT_EQ(info.offset, 12345);
    ASSERT_EQ(infinirt__pool_free_sync(q + 1, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free_sync(q, infinirt__want_pool(other)), INFINI_STATUS_BAD_PARAM);
    fake_set_busy(&f, (void *)0x10);
    size_t waits = f.waits;
    ASSERT_OK(infinirt__pool_free(q, (void *)0x10, infinirt__want_any()));
    ASSERT_GT(f.waits, waits); /* no cache: the free waits for the stream */
    ASSERT_EQ(infinirt__pool_free_sync(q, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_lookup(q, &info), 0);
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_pool(pool)));
    ASSERT_EQ(infinirt__pool_free_sync(p, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.raw_allocs, 2);
    ASSERT_EQ(st.raw_frees, 2);
    ASSERT_EQ(st.peak_allocated_bytes, 1000 + 3 * MiB);
    CHECK(check_stats(pool, &f, 0, 0));
    infinirt__pool_destroy(other);
    return finish(pool, &f);
}

int test_release_on_free(void)
{
    fake f;
    fake_init(&f, 0, 0, "release");
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.release_on_free = 1;
    infinirt__pool *pool = make_pool(&f, &cfg);
    void *p, *q, *S = (void *)0x30;
    ASSERT_OK(infinirt__pool_alloc(pool, 100 * KiB, NULL, &p));
    ASSERT_OK(infinirt__pool_alloc(pool, 100, NULL, &q));
    ASSERT_OK(infinirt__pool_free_sync(p, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_EQ(fake_live(&f), 0);
    ASSERT_OK(infinirt__pool_alloc(pool, 100 * KiB, S, &p));
    fake_set_busy(&f, S);
    ASSERT_OK(infinirt__pool_free(p, S, infinirt__want_any())); /* its fence is pending: kept */
    ASSERT_EQ(fake_live(&f), 100 * KiB);
    ASSERT_OK(infinirt__pool_trim(pool)); /* waits, then gives it back */
    ASSERT_EQ(fake_live(&f), 0);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

int test_max_cached(void)
{
    fake f;
    fake_init(&f, 0, 0, "maxcached");
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.max_cached_bytes = MiB;
    infinirt__pool *pool = make_pool(&f, &cfg);
    void *p[8];
    for (int i = 0; i < 8; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &p[i]));
    for (int i = 0; i < 8; i++)
        ASSERT_OK(infinirt__pool_free_sync(p[i], infinirt__want_any()));
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_LE(st.cached_free_bytes, MiB);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

int test_trim_and_peak(void)
{
    fake f;
    fake_init(&f, 0, 0, "trim");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *p[10];
    for (int i = 0; i < 10; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, (size_t)(i + 1) * 100 * KiB, NULL, &p[i]));
    for (int i = 0; i < 9; i++)
        ASSERT_OK(infinirt__pool_free_sync(p[i], infinirt__want_any()));
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.peak_allocated_bytes, 5500 * KiB);
    ASSERT_EQ(st.allocated_bytes, 1000 * KiB);
    infinirt__pool_reset_peak(pool);
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.peak_allocated_bytes, 1000 * KiB);
    ASSERT_EQ(st.peak_reserved_bytes, st.reserved_bytes);
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(fake_live(&f), 1000 * KiB); /* only the live block's segment */
    CHECK(check_stats(pool, &f, 1000 * KiB, 1));
    ASSERT_OK(infinirt__pool_free_sync(p[9], infinirt__want_any()));
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.segments, 0);
    return finish(pool, &f);
}

int test_stream_retired(void)
{
    fake f;
    fake_init(&f, 0, 0, "retire");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *S = (void *)0x5000, *p1, *p2, *p3, *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, S, &p1));
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, S, &p2));
    ASSERT_OK(infinirt__pool_alloc(pool, 5000, S, &p3));
    fake_set_busy(&f, S);
    ASSERT_OK(infinirt__pool_free(p1, S, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free(p2, S, infinirt__want_any()));
    fake_complete_all(&f); /* the stream is destroyed after its work */
    infinirt__pool_stream_retired(pool, S);
    CHECK(check_stats(pool, &f, 5000, 1));
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, INFINIRT__POOL_SYNC, &q));
    ASSERT_PTR_EQ(q, p2); /* now in arena 0's bins, any stream's */
    infinirt__ptr_info info;
    ASSERT_EQ(infinirt__pool_lookup((char *)p3 + 10, &info), 1);
    ASSERT_OK(infinirt__pool_free_sync(p3, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, S, &p1)); /* the key may come back */
    ASSERT_OK(infinirt__pool_free(p1, S, infinirt__want_any()));
    infinirt__pool_stream_retired(pool, S);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}
