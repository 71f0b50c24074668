/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_capacity.c - requests the device can never hold: they fail at
 * once without touching the cache, and a failed request changes how later
 * requests are served only by what the backend really refused.
 */
#include "alloc_test.h"

/* Beyond total_memory: OUT_OF_MEMORY with no raw call, no retry, nothing
 * released; the cached block serves the next request.  Beyond
 * max_alloc_size it stays BAD_PARAM, whatever the device's size. */
int test_huge_request_fails_fast(void)
{
    fake f;
    fake_init(&f, 16 * MiB, 0, "huge"); /* total_memory = 16 MiB */
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a, *b, *p = NULL;
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &a));
    ASSERT_OK(infinirt__pool_free_sync(a, infinirt__want_any()));
    infinirtAllocatorStats_t before, after;
    infinirt__pool_stats(pool, &before);
    size_t calls = f.raw_calls;
    ASSERT_EQ(infinirt__pool_alloc(pool, (size_t)1 << 50, NULL, &p), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(infinirt__pool_alloc(pool, 16 * MiB + 1, NULL, &p), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_EQ(infinirt__pool_alloc(pool, 16 * MiB + 1, (void *)0x40, &p), INFINI_STATUS_OUT_OF_MEMORY);
    ASSERT_PTR_EQ(p, NULL);
    ASSERT_EQ(f.raw_calls, calls);
    infinirt__pool_stats(pool, &after);
    ASSERT_EQ(after.reserved_bytes, before.reserved_bytes);
    ASSERT_EQ(after.cached_free_bytes, before.cached_free_bytes);
    ASSERT_EQ(after.raw_frees, before.raw_frees);
    ASSERT_EQ(after.retries, before.retries);
    ASSERT_EQ(after.oom_count, before.oom_count + 3);
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &b));
    ASSERT_PTR_EQ(b, a);
    ASSERT_EQ(f.raw_calls, calls);
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any()));
    /* All of the device still can be asked for (the cache makes room). */
    ASSERT_OK(infinirt__pool_alloc(pool, 16 * MiB, NULL, &b));
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    CHECK(finish(pool, &f));

    fake_init(&f, 16 * MiB, 4 * MiB, "huge-max");
    pool = make_pool(&f, NULL);
    ASSERT_EQ(infinirt__pool_alloc(pool, (size_t)1 << 50, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_alloc(pool, 5 * MiB, NULL, &p), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_stats(pool, &after);
    ASSERT_EQ(after.oom_count, 0);
    ASSERT_EQ(f.raw_calls, 0);
    return finish(pool, &f);
}

/* Whether the pool still hands a free block 4.7% too big out whole (far
 * from capacity) rather than asking for an exact segment (strict mode, near
 * capacity; see test_strict_near_capacity). */
static int serves_whole(infinirt__pool *pool, bool *whole)
{
    void *a, *b;
    ASSERT_OK(infinirt__pool_alloc(pool, MiB + 48 * KiB, NULL, &a));
    ASSERT_OK(infinirt__pool_free_sync(a, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &b));
    *whole = b == a;
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any()));
    return TEST_OK;
}

/* A backend of unknown size (total_memory 0) reaches the out-of-memory path
 * for any request.  A refused 1 TiB says nothing about how close the pool
 * is to the device's limit, so later requests are served as before; a
 * bound learned from a real refusal is dropped once the backend grants
 * memory past it. */
int test_oom_keeps_capacity(void)
{
    fake f;
    fake_init(&f, 64 * MiB, 0, "capacity");
    f.be.total_memory = 0;
    infinirt__pool *pool = make_pool(&f, NULL);
    void *keep, *p, *big;
    bool whole = false;
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &keep));
    CHECK(serves_whole(pool, &whole));
    ASSERT(whole);
    ASSERT_EQ(infinirt__pool_alloc(pool, (size_t)1 << 40, NULL, &p), INFINI_STATUS_OUT_OF_MEMORY);
    CHECK(serves_whole(pool, &whole));
    ASSERT(whole); /* not pushed into strict mode by an impossible request */

    /* A real refusal: 8 MiB with ~2 MiB held teaches a bound of ~10 MiB.
     * Far below it nothing changes... */
    f.limit = 8 * MiB;
    ASSERT_EQ(infinirt__pool_alloc(pool, 8 * MiB, NULL, &p), INFINI_STATUS_OUT_OF_MEMORY);
    CHECK(serves_whole(pool, &whole));
    ASSERT(whole);
    /* ... near it the pool saves memory (the backend's memory came back
     * meanwhile, which the pool cannot know yet)... */
    f.limit = 0;
    ASSERT_OK(infinirt__pool_alloc(pool, 6 * MiB, NULL, &big));
    CHECK(serves_whole(pool, &whole));
    ASSERT(!whole);
    ASSERT_OK(infinirt__pool_free_sync(big, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_trim(pool));
    /* ... until the backend grants memory past the bound, which drops it. */
    ASSERT_OK(infinirt__pool_alloc(pool, 12 * MiB, NULL, &big));
    CHECK(serves_whole(pool, &whole));
    ASSERT(whole);
    ASSERT_OK(infinirt__pool_free_sync(big, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_free_sync(keep, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}
