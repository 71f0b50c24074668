/*
 * alloc_test_whole.c - frees of blocks that span their large segment, which
 * the pool completes from the block's hash entry without reading its
 * descriptor (free_whole in loader/alloc.c).  The entry carries a copy of
 * the segment's "on the empty stack" flag; these tests take that flag away
 * behind the entry's back in every way the pool can, then check that the
 * segment is still found when it empties.
 */
#define _GNU_SOURCE
#include "alloc_test.h"

static int segments(infinirt__pool *pool)
{
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    return (int)st.segments;
}

/* Make arena 0 (the default stream's) the one a free tries first. */
static int touch_default(infinirt__pool *pool)
{
    void *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, NULL, &q));
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    return TEST_OK;
}

int test_whole_block_frees(void)
{
    fake f;
    fake_init(&f, 0, 0, "whole");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);

    /* 1. The plain case: whole blocks freed and reused, counters exact. */
    void *p[8];
    for (int i = 0; i < 8; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, (size_t)(i + 1) * MiB, NULL, &p[i]));
    CHECK(check_stats(pool, &f, 36 * MiB, 8));
    size_t raw = fake_nraw(&f);
    for (int i = 0; i < 8; i += 2)
        ASSERT_OK(infinirt__pool_free(p[i], SYNC, NULL));
    CHECK(check_stats(pool, &f, 20 * MiB, 4)); /* 2 + 4 + 6 + 8 MiB left */
    ASSERT_STATUS(infinirt__pool_free(p[0], SYNC, NULL), INFINI_STATUS_BAD_PARAM); /* twice */
    for (int i = 0; i < 8; i += 2) {
        void *q;
        ASSERT_OK(infinirt__pool_alloc(pool, (size_t)(i + 1) * MiB, NULL, &q));
        ASSERT_PTR_EQ(q, p[i]); /* the cached segment, back in the bins */
    }
    ASSERT_EQ(fake_nraw(&f), raw);
    for (int i = 0; i < 8; i++)
        ASSERT_OK(infinirt__pool_free(p[i], SYNC, NULL));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0); /* every emptied segment was found */

    /* 2. A scan takes a live segment off the empty stack (trim: it is in
     * use again), then its block is freed: the segment must go back on. */
    void *a;
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &a));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 1);
    ASSERT_OK(infinirt__pool_free(a, SYNC, NULL));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);

    /* 3. A retired stream's arena moves into arena 0 with a live whole
     * block whose segment was on the retired arena's empty stack. */
    void *S = (void *)0x5000, *b;
    ASSERT_OK(infinirt__pool_alloc(pool, 2 * MiB, S, &b));
    infinirt__pool_stream_retired(pool, S);
    CHECK(touch_default(pool));
    ASSERT_OK(infinirt__pool_free(b, SYNC, NULL));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);

    /* 4. With work in flight the free takes a fence and the ordinary path:
     * another stream does not get the block before the fence completes. */
    void *T = (void *)0x6000, *c, *d;
    ASSERT_OK(infinirt__pool_alloc(pool, 4 * MiB, T, &c));
    fake_set_busy(&f, T);
    ASSERT_OK(infinirt__pool_free(c, T, NULL));
    ASSERT_OK(infinirt__pool_alloc(pool, 4 * MiB, NULL, &d));
    ASSERT_PTR_NE(d, c);
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_free(d, SYNC, NULL));
    infinirt__pool_stream_retired(pool, T);
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_trim(pool));
    ASSERT_EQ(segments(pool), 0);
    return finish(pool, &f);
}
