/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_whole.c - frees of blocks that span their large segment, which
 * the pool completes from the block's hash entry without reading its
 * descriptor (free_whole in loader/alloc/alloc_pool_path.c).  The entry
 * carries a copy of the segment's "on the empty stack" flag; these tests
 * take that flag away behind the entry's back in every way the pool can,
 * then check that the segment is still found when it empties.
 */
#define _GNU_SOURCE
#include "alloc_test.h"

static int segments(infinirt__pool *pool)
{
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    return (int)st.segments;
}

/* Make arena 0 (synchronous allocations') the one a free tries first. */
static int touch_default(infinirt__pool *pool)
{
    void *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, INFINIRT__POOL_SYNC, &q));
    ASSERT_OK(infinirt__pool_free_sync(q, infinirt__want_any()));
    return TEST_OK;
}

/* One pass of every case at granularity `g`.  Requests are a byte over a
 * multiple of 1 MiB, so that at granularity 1 or 2 the block sizes have
 * their low bits set: the flags of the hash entry must not live there. */
static int whole_cases(size_t g)
{
    fake f;
    fake_init(&f, 0, 0, "whole");
    infinirt__alloc_config cfg;
    infinirt__alloc_config_default(&cfg);
    cfg.granularity = g;
    infinirt__pool *pool = make_pool(&f, &cfg);
    ASSERT(pool != NULL);
#define SZ(m) ((size_t)(m)*MiB + 1)

    /* 1. The plain case: whole blocks freed and reused, counters exact. */
    void *p[8];
    size_t all = 0, odd = 0;
    for (int i = 0; i < 8; i++) {
        ASSERT_OK(infinirt__pool_alloc(pool, SZ(i + 1), NULL, &p[i]));
        all += SZ(i + 1);
        odd += (i % 2 == 1) ? SZ(i + 1) : 0;
    }
    CHECK(check_stats(pool, &f, all, 8));
    size_t raw = fake_nraw(&f);
    for (int i = 0; i < 8; i += 2)
        ASSERT_OK(infinirt__pool_free_sync(p[i], infinirt__want_any()));
    CHECK(check_stats(pool, &f, odd, 4));
    ASSERT_STATUS(infinirt__pool_free_sync(p[0], infinirt__want_any()), INFINI_STATUS_BAD_PARAM); /* twice */
    for (int i = 0; i < 8; i += 2) {
        void *q;
        ASSERT_OK(infinirt__pool_alloc(pool, SZ(i + 1), NULL, &q));
        ASSERT_PTR_EQ(q, p[i]); /* the cached segment, back in the bins */
    }
    ASSERT_EQ(fake_nraw(&f), raw);
    for (int i = 0; i < 8; i++)
        ASSERT_OK(infinirt__pool_free_sync(p[i], infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0); /* every emptied segment was found */

    /* Small blocks of odd sizes share a segment: none of them is whole. */
    void *s4[4];
    for (int i = 0; i < 4; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, 1001, NULL, &s4[i]));
    for (int i = 0; i < 4; i++)
        ASSERT_OK(infinirt__pool_free_sync(s4[i], infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);

    /* 2. A scan takes a live segment off the empty stack (trim: it is in
     * use again), then its block is freed: the segment must go back on. */
    void *a;
    ASSERT_OK(infinirt__pool_alloc(pool, SZ(3), NULL, &a));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 1);
    ASSERT_OK(infinirt__pool_free_sync(a, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);

    /* 3. A retired stream's arena moves into arena 0 with a live whole
     * block whose segment was on the retired arena's empty stack. */
    void *S = (void *)0x5000, *b;
    ASSERT_OK(infinirt__pool_alloc(pool, SZ(2), S, &b));
    infinirt__pool_stream_retired(pool, S);
    CHECK(touch_default(pool));
    ASSERT_OK(infinirt__pool_free_sync(b, infinirt__want_any()));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);

    /* 4. With work in flight the free takes a fence and the ordinary path:
     * another stream does not get the block before the fence completes. */
    void *T = (void *)0x6000, *c, *d;
    ASSERT_OK(infinirt__pool_alloc(pool, SZ(4), T, &c));
    fake_set_busy(&f, T);
    ASSERT_OK(infinirt__pool_free(c, T, infinirt__want_any()));
    ASSERT_OK(infinirt__pool_alloc(pool, SZ(4), NULL, &d));
    ASSERT_PTR_NE(d, c);
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_free_sync(d, infinirt__want_any()));
    infinirt__pool_stream_retired(pool, T);
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);
#undef SZ
    return finish(pool, &f);
}

int test_whole_block_frees(void)
{
    static const size_t grans[] = {1, 2, 512, 4096};
    for (size_t i = 0; i < sizeof grans / sizeof grans[0]; i++)
        if (whole_cases(grans[i]) != TEST_OK) {
            fprintf(stderr, "  (granularity %zu)\n", grans[i]);
            return TEST_FAIL;
        }
    return TEST_OK;
}
