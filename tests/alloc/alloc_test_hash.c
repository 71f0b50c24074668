/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_hash.c - the live-block hash on its own, with keys chosen to
 * collide: the paths that random addresses almost never reach (a full home
 * bucket, a neighbourhood too crowded to place within reach, keys that
 * collide at every table size) must keep every entry findable.
 */
#define _GNU_SOURCE
#include "alloc_block.h"
#include "alloc_test.h"

#include <stdlib.h>

#define NKEYS 200

/* Keys that share their home bucket in a table of 2^bits buckets (when
 * `top` is 0), or the top `top` bits of their hash, so that they share it
 * at every size up to 2^top buckets. */
static size_t colliding_keys(uintptr_t *keys, size_t want, unsigned bits, unsigned top)
{
    unsigned shift = 64u - (top != 0 ? top : bits);
    uint64_t target = ((uint64_t)0x5000 * 0x9E3779B97F4A7C15ull) >> shift;
    size_t n = 0;
    for (uint64_t k = 16; n < want && k < ((uint64_t)1 << 40); k += 16)
        if ((((uint64_t)k * 0x9E3779B97F4A7C15ull) >> shift) == target)
            keys[n++] = (uintptr_t)k;
    return n;
}

/* Everything in the table is what the test put there, and nothing else. */
static int check_all(const infinirt__blktab *t, const uintptr_t *keys, const bool *in, infinirt__blk *blks, size_t n)
{
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        infinirt__blk *got = infinirt__ht_get(t, keys[i]);
        if (in[i]) {
            ASSERT_PTR_EQ(got, &blks[i]);
            live++;
        } else {
            ASSERT_PTR_EQ(got, NULL);
        }
    }
    ASSERT_EQ(t->count, live);
    size_t seen = 0;
    for (size_t b = 0; b <= t->mask; b++)
        for (unsigned j = 0; j < INFINIRT__HB_SLOTS; j++)
            seen += t->ht[b].key[j] != 0;
    ASSERT_EQ(seen, live);
    /* A key never inserted is not found. */
    ASSERT_PTR_EQ(infinirt__ht_get(t, 8), NULL);
    return TEST_OK;
}

static int run(unsigned top)
{
    infinirt__blktab t;
    memset(&t, 0, sizeof t);
    ASSERT_EQ(infinirt__ht_init(&t), 0);
    unsigned bits = (unsigned)__builtin_ctzll((unsigned long long)(t.mask + 1));
    static uintptr_t keys[NKEYS];
    static infinirt__blk blks[NKEYS];
    static bool in[NKEYS];
    size_t n = colliding_keys(keys, NKEYS, bits, top);
    ASSERT_EQ(n, NKEYS);
    for (size_t i = 0; i < n; i++) {
        memset(&blks[i], 0, sizeof blks[i]);
        blks[i].addr = keys[i];
        in[i] = false;
    }
    /* All into one neighbourhood: home buckets fill, then the reach, then
     * the table grows (or, for keys that collide at every size, entries go
     * further out). */
    size_t first_mask = t.mask;
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(infinirt__ht_put(&t, &blks[i]), 0);
        in[i] = true;
        if (i % 37 == 0)
            CHECK(check_all(&t, keys, in, blks, n));
    }
    CHECK(check_all(&t, keys, in, blks, n));
    ASSERT_GT(t.mask, first_mask);
    if (top != 0) /* no size spreads them: found beyond the insertion reach */
        ASSERT_GT(t.reach, INFINIRT__HB_REACH_MAX);
    /* The load stays at most half, and the table stays bounded even for
     * keys that collide at every size (8 slots per entry at most). */
    ASSERT_LE(t.count * 2, (t.mask + 1) * INFINIRT__HB_SLOTS);
    ASSERT_LE((t.mask + 1) * INFINIRT__HB_SLOTS, 16 * (size_t)n);
    /* Delete every other one, then put some back: deletions leave holes
     * that lookups of the others must see past. */
    for (size_t i = 0; i < n; i += 2) {
        ASSERT_PTR_EQ(infinirt__ht_del(&t, keys[i]), &blks[i]);
        in[i] = false;
        ASSERT_PTR_EQ(infinirt__ht_del(&t, keys[i]), NULL); /* twice: absent */
    }
    CHECK(check_all(&t, keys, in, blks, n));
    for (size_t i = 0; i < n; i += 4) {
        ASSERT_EQ(infinirt__ht_put(&t, &blks[i]), 0);
        in[i] = true;
    }
    CHECK(check_all(&t, keys, in, blks, n));
    for (size_t i = 0; i < n; i++)
        if (in[i]) {
            ASSERT_PTR_EQ(infinirt__ht_del(&t, keys[i]), &blks[i]);
            in[i] = false;
        }
    CHECK(check_all(&t, keys, in, blks, n));
    free(t.ht);
    return TEST_OK;
}

int test_hash_collisions(void)
{
    /* Colliding in the first table only, then at every size up to 2^16
     * buckets (more than this test lets the table grow to). */
    CHECK(run(0));
    return run(16);
}
