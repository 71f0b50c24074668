/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_invariants.c - the allocator's internal invariants, checked
 * after every step of random drivers (white-box: it reads the arenas, bins,
 * block tables and segments through alloc_pool.h).
 *
 * After each step, for every arena: every segment's blocks tile it in
 * address order and name it; a segment is flagged "on the empty stack"
 * exactly when it is there; every live block is in its arena's hash with
 * the entry the descriptor implies (requested bytes, size, WHOLE/STACKED);
 * the bins hold exactly the free blocks, each in its size class, with the
 * head sizes (hsz), successor sizes (nsz), prev links and bitmaps right; no
 * two free blocks are adjacent; and the used, reserved and fenced counters
 * equal what the blocks and segments say.
 */
#define _GNU_SOURCE
#include "alloc_pool.h"
#include "alloc_test.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>

/* ------------------------------------------------ invariant checker */

static int in_bins_list(const infinirt__bins *bins, const infinirt__blk *b)
{
    for (unsigned fl = 0; fl < INFINIRT__FL_COUNT; fl++)
        for (unsigned sl = 0; sl < INFINIRT__SL_COUNT; sl++)
            for (const infinirt__blk *x = bins->head[fl][sl]; x != NULL; x = x->next)
                if (x == b)
                    return 1;
    return 0;
}

static int check_bins(const infinirt__bins *bins, unsigned gshift, size_t *count)
{
    for (unsigned fl = 0; fl < INFINIRT__FL_COUNT; fl++) {
        for (unsigned sl = 0; sl < INFINIRT__SL_COUNT; sl++) {
            const infinirt__blk *h = bins->head[fl][sl];
            int bit = (int)((bins->sl_map[fl] >> sl) & 1);
            if ((h != NULL) != bit)
                TEST_FAILED_("bins map bit %u/%u = %d, head %p", fl, sl, bit, (void *)h);
            uint32_t want = h ? (uint32_t)((h->size >> gshift) < UINT32_MAX ? (h->size >> gshift) : UINT32_MAX) : 0;
            if (bins->hsz[fl][sl] != want)
                TEST_FAILED_("hsz[%u][%u] = %u, head has %u granules", fl, sl, bins->hsz[fl][sl], want);
            for (const infinirt__blk *x = h; x != NULL; x = x->next) {
                (*count)++;
                if (infinirt__blk_state(x) != INFINIRT__BLK_FREE)
                    TEST_FAILED_("block %p in bins in state %u", (void *)x, infinirt__blk_state(x));
                size_t n = x->size >> gshift;
                unsigned f2, s2;
                if (n < INFINIRT__SL_COUNT) {
                    f2 = 0;
                    s2 = (unsigned)n;
                } else {
                    unsigned f = 63u - (unsigned)__builtin_clzll(n);
                    f2 = f - INFINIRT__SL_LOG2 + 1;
                    s2 = (unsigned)(n >> (f - INFINIRT__SL_LOG2)) - INFINIRT__SL_COUNT;
                }
                if (f2 != fl || s2 != sl)
                    TEST_FAILED_("block %p of %zu granules in class %u/%u", (void *)x, n, fl, sl);
                uint32_t nw = x->next ? (uint32_t)((x->next->size >> gshift) < UINT32_MAX ? (x->next->size >> gshift)
                                                                                          : UINT32_MAX)
                                      : 0;
                if (x->nsz != nw)
                    TEST_FAILED_("nsz of %p is %u, next has %u", (void *)x, x->nsz, nw);
                if (x != h && x->prev->next != x)
                    TEST_FAILED_("prev of non-head %p is wrong", (void *)x);
            }
        }
        if ((bins->sl_map[fl] != 0) != (int)((bins->fl_map >> fl) & 1))
            TEST_FAILED_("fl_map bit %u", fl);
    }
    return TEST_OK;
}

static int check_arena(infinirt__arena *a)
{
    unsigned gshift = a->pool->gshift;
    size_t used = 0, nused = 0, nfree = 0, nfenced = 0, reserved = 0;
    for (infinirt__seg *s = a->segs; s != NULL; s = s->next) {
        reserved += s->size;
        if (s->fence)
            nfenced++;
        if (atomic_load(&s->arena) != a)
            TEST_FAILED_("segment %p in arena %p's list names %p", (void *)s, (void *)a,
                         (void *)atomic_load(&s->arena));
        if (((s->head.segst & INFINIRT__BLK_LARGE) != 0) != s->large)
            TEST_FAILED_("segment %p LARGE flag %d vs large %d", (void *)s, !!(s->head.segst & INFINIRT__BLK_LARGE),
                         s->large);
        int stacked = (s->head.segst & INFINIRT__BLK_STACKED) != 0;
        int on = s->eidx < a->nes && a->estack[s->eidx] == s;
        if (stacked != on)
            TEST_FAILED_("segment %p STACKED=%d but on stack=%d", (void *)s, stacked, on);
        uintptr_t at = s->base;
        const infinirt__blk *prev = NULL;
        for (infinirt__blk *b = &s->head; b != NULL; prev = b, b = b->nphys) {
            if (b->pphys != prev)
                TEST_FAILED_("pphys of %p", (void *)b);
            if (b->addr != at)
                TEST_FAILED_("block %p addr %#lx expected %#lx", (void *)b, (unsigned long)b->addr,
                             (unsigned long)at);
            at += b->size;
            if (infinirt__blk_seg(b) != s)
                TEST_FAILED_("block %p names segment %p not %p", (void *)b, (void *)infinirt__blk_seg(b), (void *)s);
            if (b != &s->head && (b->segst & INFINIRT__BLK_STACKED))
                TEST_FAILED_("non-head %p STACKED", (void *)b);
            if (((b->segst & INFINIRT__BLK_BITS) != 0) != (s->nw0 != 0))
                TEST_FAILED_("block %p BITS=%d nw0=%zu", (void *)b, !!(b->segst & INFINIRT__BLK_BITS), s->nw0);
            unsigned st = infinirt__blk_state(b);
            if (st == INFINIRT__BLK_USED) {
                used += b->size;
                nused++;
                unsigned i;
                infinirt__hbkt *k = infinirt__ht_find(&a->blocks, b->addr, &i);
                if (k == NULL || infinirt__ht_blk(k->val[i]) != b)
                    TEST_FAILED_("live block %p not in its arena's hash", (void *)b);
                if (k->req[i] != b->req)
                    TEST_FAILED_("hash req %zu vs %zu", k->req[i], b->req);
                if (k->val[i] != infinirt__ht_val(b) || k->size[i] != b->size)
                    TEST_FAILED_("hash val %#zx vs descriptor %#zx (block %p, head %d)", (size_t)k->val[i],
                                 (size_t)infinirt__ht_val(b), (void *)b, b == &s->head);
            } else if (st == INFINIRT__BLK_PENDING) {
                used += b->size;
            } else if (st == INFINIRT__BLK_FREE) {
                nfree++;
                if (!in_bins_list(infinirt__blk_bins(a, b), b))
                    TEST_FAILED_("free block %p not in its bins", (void *)b);
                if (b->nphys && infinirt__blk_state(b->nphys) == INFINIRT__BLK_FREE)
                    TEST_FAILED_("adjacent free blocks %p %p", (void *)b, (void *)b->nphys);
            } else if (st != INFINIRT__BLK_QUICK) {
                TEST_FAILED_("block %p in state %u", (void *)b, st);
            }
        }
        if (at != s->base + s->size)
            TEST_FAILED_("segment %p blocks end at %#lx", (void *)s, (unsigned long)at);
    }
    for (uint32_t k = 0; k < a->nes; k++) {
        infinirt__seg *s = a->estack[k];
        if (s->eidx != k || !(s->head.segst & INFINIRT__BLK_STACKED) || atomic_load(&s->arena) != a)
            TEST_FAILED_("estack[%u] = %p: eidx %u stacked %d arena %p", k, (void *)s, s->eidx,
                         !!(s->head.segst & INFINIRT__BLK_STACKED), (void *)atomic_load(&s->arena));
    }
    size_t c = 0;
    CHECK(check_bins(&a->small, gshift, &c));
    CHECK(check_bins(&a->large, gshift, &c));
    if (c != nfree)
        TEST_FAILED_("bins hold %zu blocks, segments %zu free ones", c, nfree);
    if (a->blocks.count != nused)
        TEST_FAILED_("hash holds %zu, %zu blocks used", a->blocks.count, nused);
    if (a->used != used)
        TEST_FAILED_("arena used %zu, blocks say %zu", a->used, used);
    if (a->nfenced != nfenced)
        TEST_FAILED_("nfenced %zu vs %zu", a->nfenced, nfenced);
    if (a->reserved != reserved)
        TEST_FAILED_("reserved %zu vs %zu", a->reserved, reserved);
    return TEST_OK;
}

static int check_pool(infinirt__pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    int rc = TEST_OK;
    unsigned owned = 0, slack = 0;
    size_t published = 0;
    bool multi = atomic_load(&pool->multi) != 0;
    for (unsigned i = 0; i < pool->narenas && rc == TEST_OK; i++) {
        infinirt__arena *a = pool->arenas[i];
        infinirt__spin_lock(&a->lock);
        rc = check_arena(a);
        /* What the arena published: its allocated bytes, or more where it
         * keeps slack (a thread's own, or a shared one counted in
         * nslack); never slack in a shared arena that does not. */
        bool keeps = infinirt__keeps_slack(a);
        slack += a->owner == NULL && keeps;
        published += a->published;
        if (rc == TEST_OK && multi && (keeps ? a->published < a->req_bytes : a->published != a->req_bytes)) {
            fprintf(stderr, "arena published %zu, allocated %zu, keeps slack %d\n", a->published, a->req_bytes,
                    keeps);
            rc = TEST_FAIL;
        }
        /* A thread's own arena is in use and serves the NULL stream. */
        if (rc == TEST_OK && a->owner != NULL && (!a->in_use || a->stream != NULL)) {
            fprintf(stderr, "own arena in use %d, stream %p\n", a->in_use, a->stream);
            rc = TEST_FAIL;
        }
        owned += a->owner != NULL;
        infinirt__spin_unlock(&a->lock);
        if (rc != TEST_OK)
            fprintf(stderr, "  (arena %u)\n", i);
    }
    if (rc == TEST_OK && owned != atomic_load(&pool->nowned)) {
        fprintf(stderr, "%u own arenas, nowned %u\n", owned, atomic_load(&pool->nowned));
        rc = TEST_FAIL;
    }
    if (rc == TEST_OK && slack != atomic_load(&pool->nslack)) {
        fprintf(stderr, "%u shared arenas keep slack, nslack %u\n", slack, atomic_load(&pool->nslack));
        rc = TEST_FAIL;
    }
    if (rc == TEST_OK && multi && published != atomic_load(&pool->pub_total)) {
        fprintf(stderr, "arenas published %zu, pool total %zu\n", published, atomic_load(&pool->pub_total));
        rc = TEST_FAIL;
    }
    pthread_mutex_unlock(&pool->mu);
    return rc;
}

/* A random driver with streams that come and go, lookups, trims, fences
 * and an optional byte limit, checking every invariant after each step. */
static int stress(size_t limit, const infinirt__alloc_config *cfg, int steps, uint64_t seed)
{
    fake f;
    fake_init(&f, limit, 0, "stress");
    infinirt__pool *pool = make_pool(&f, cfg);
    ASSERT(pool != NULL);
    typedef struct {
        char *p;
        size_t size;
    } lv;
    lv *live = malloc(2048 * sizeof *live);
    ASSERT(live != NULL);
    size_t nlive = 0, sum = 0;
    uint64_t r0 = seed;
    void *streams[6] = {NULL, (void *)0x1000, (void *)0x2000, (void *)0x3000, (void *)0x4000, (void *)0x5000};
    for (int step = 0; step < steps; step++) {
        r0 = r0 * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(r0 >> 33) % 1000;
        if ((r < 480 || nlive == 0) && nlive < 2048) {
            unsigned k = (unsigned)(rnd() % 100);
            size_t size = k < 60 ? 1 + rnd() % (64 * KiB) : k < 90 ? 64 * KiB + rnd() % MiB : 1 + rnd() % (6 * MiB);
            if (rnd() % 4 == 0)
                size = (size + 511) & ~(size_t)511; /* exact granules: whole large blocks */
            void *stream = rnd() % 7 == 0 ? INFINIRT__POOL_SYNC : streams[rnd() % 6];
            char *p;
            infiniStatus_t st = infinirt__pool_alloc(pool, size, stream, (void **)&p);
            if (limit != 0 && st == INFINI_STATUS_OUT_OF_MEMORY)
                goto check;
            ASSERT_OK(st);
            p[0] = 1;
            p[size - 1] = 2;
            live[nlive++] = (lv){p, size};
            sum += size;
        } else if (r < 880) {
            size_t i = rnd() % nlive;
            lv b = live[i];
            bool sync = rnd() % 4 == 0;
            ASSERT_OK(free_either(b.p, sync, sync ? NULL : streams[rnd() % 6], infinirt__want_any()));
            live[i] = live[--nlive];
            sum -= b.size;
        } else if (r < 920) {
            fake_set_busy(&f, streams[rnd() % 6]);
        } else if (r < 960) {
            fake_complete_all(&f);
        } else if (r < 975) {
            ASSERT_OK(infinirt__pool_trim(pool));
        } else {
            /* retire a stream whose work is done (what the loader does) */
            fake_complete_all(&f);
            infinirt__pool_stream_retired(pool, streams[1 + rnd() % 5]);
        }
        if (nlive > 0 && rnd() % 2) {
            lv b = live[rnd() % nlive];
            size_t off = rnd() % b.size;
            infinirt__ptr_info info;
            ASSERT_EQ(infinirt__pool_lookup(b.p + off, &info), 1);
            ASSERT_PTR_EQ(info.block_base, b.p);
        }
    check:
        if (check_pool(pool) != TEST_OK) {
            fprintf(stderr, "step %d (op %u)\n", step, r);
            return TEST_FAIL;
        }
        CHECK(check_stats(pool, &f, sum, nlive));
    }
    while (nlive > 0)
        ASSERT_OK(infinirt__pool_free_sync(live[--nlive].p, infinirt__want_any()));
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_pool(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_EQ(fake_live(&f), 0);
    free(live);
    return finish(pool, &f);
}

/* Single-threaded: under ThreadSanitizer (which finds nothing here and runs
 * it ~15x slower) one seed per configuration instead of six. */
#if defined(__SANITIZE_THREAD__)
#define STRESS_SEEDS 1
#else
#define STRESS_SEEDS 6
#endif

int test_invariants_stress(void)
{
    infinirt__log_set_default_level(INFINIRT__LOG_ERROR); /* the limited runs log ~2,500 expected OOM lines */
    for (uint64_t seed = 1; seed <= STRESS_SEEDS; seed++) {
        CHECK(stress(0, NULL, 6000, seed));
        CHECK(stress(40 * MiB, NULL, 6000, seed * 77));
    }
    infinirt__alloc_config c;
    infinirt__alloc_config_default(&c);
    c.max_split_size = 0;
    CHECK(stress(0, &c, 6000, 99));
    CHECK(stress(32 * MiB, &c, 6000, 98));
    c.max_split_size = 64 * KiB;
    c.max_cached_bytes = 8 * MiB;
    CHECK(stress(0, &c, 6000, 97));
    c.max_cached_bytes = 0;
    c.release_on_free = 1;
    CHECK(stress(0, &c, 6000, 96));
    return TEST_OK;
}

/* Two threads on one stream (one arena): one grows the hash while the other
 * frees through the fast path, whose prefetch reads the table pointer
 * before taking the lock (run under TSan by ./dev test).  Not the NULL
 * stream, whose small blocks come from each thread's own arena. */
#define RP_STREAM ((void *)(uintptr_t)0x7000)
static infinirt__pool *g_rp;
static void *grow_worker(void *arg)
{
    (void)arg;
    static void *v[20000];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 20000; i++)
            if (infinirt__pool_alloc(g_rp, 512, RP_STREAM, &v[i]) != INFINI_STATUS_SUCCESS)
                return (void *)1;
        for (int i = 0; i < 20000; i++)
            infinirt__pool_free(v[i], RP_STREAM, infinirt__want_any());
    }
    return NULL;
}
int test_hash_prefetch_during_grow(void)
{
    fake f;
    fake_init(&f, 0, 0, "race");
    g_rp = make_pool(&f, NULL);
    pthread_t t;
    pthread_create(&t, NULL, grow_worker, NULL);
    for (int i = 0; i < 200000; i++) {
        void *p;
        ASSERT_OK(infinirt__pool_alloc(g_rp, 1024, RP_STREAM, &p));
        ASSERT_OK(infinirt__pool_free(p, RP_STREAM, infinirt__want_any()));
    }
    void *rv;
    pthread_join(t, &rv);
    ASSERT(rv == NULL);
    return finish(g_rp, &f);
}

/* Four threads with their own streams, each retiring its stream now and
 * then and moving to a new key, a quarter of their blocks on the NULL
 * stream (their own arenas); blocks handed between threads (freed on
 * another thread, synchronously); steal active; then four more; the
 * invariants after each four have exited. */
static infinirt__pool *g_mp;
static fake *g_mf;
static pthread_mutex_t g_hmu = PTHREAD_MUTEX_INITIALIZER;
static void *g_hand[128];
static int g_nh;
static void *mt_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t st = 0x9876543ull * (uint64_t)(id + 1);
    uintptr_t key = 0x10000u * (uintptr_t)(id + 1);
    void *mine[64], *mkey[64]; /* blocks, and the stream each was allocated on */
    int n = 0;
    for (int it = 0; it < 30000; it++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(st >> 33);
        if (n < 64 && (r % 3 != 0 || n == 0)) {
            size_t size = r % 5 == 0 ? (size_t)(1 + r % 16) * 256 * KiB : 1 + (r >> 8) % (32 * KiB);
            /* A quarter on the NULL stream: the thread's own arena. */
            mkey[n] = (r >> 12) % 4 == 0 ? NULL : (void *)key;
            if (infinirt__pool_alloc(g_mp, size, mkey[n], &mine[n]) != INFINI_STATUS_SUCCESS)
                return (void *)1;
            n++;
        } else {
            int i = (int)(r % (unsigned)n);
            void *p = mine[i], *pkey = mkey[i];
            mine[i] = mine[--n];
            mkey[i] = mkey[n];
            if (r % 7 == 0) {
                void *other = NULL;
                pthread_mutex_lock(&g_hmu);
                if (g_nh < 128)
                    g_hand[g_nh++] = p, p = NULL;
                if (g_nh > 64)
                    other = g_hand[--g_nh];
                pthread_mutex_unlock(&g_hmu);
                if (other && infinirt__pool_free_sync(other, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
                    return (void *)2;
                if (p == NULL)
                    continue;
            }
            if (r % 11 == 0)
                fake_set_busy(g_mf, r % 3 == 0 ? NULL : (void *)key);
            if (r % 13 == 0)
                fake_complete_all(g_mf);
            if (free_either(p, r % 4 == 0, pkey, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
                return (void *)3;
        }
        if (r % 1000 == 0) {
            infinirt__pool_stream_retired(g_mp, (void *)key);
            key += 0x10;
        }
        if (r % 2000 == 1)
            infinirt__pool_trim(g_mp);
    }
    while (n > 0)
        if (infinirt__pool_free_sync(mine[--n], infinirt__want_any()) != INFINI_STATUS_SUCCESS)
            return (void *)4;
    return NULL;
}
int test_invariants_threads(void)
{
    fake f;
    fake_init(&f, 0, 0, "mt");
    g_mf = &f;
    g_mp = make_pool(&f, NULL);
    /* Two waves: the second's threads take the own arenas the first's
     * gave back at their exit. */
    for (int wave = 0; wave < 2; wave++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, mt_worker, (void *)(intptr_t)(4 * wave + i));
        for (int i = 0; i < 4; i++) {
            void *rv;
            pthread_join(t[i], &rv);
            ASSERT(rv == NULL);
        }
        CHECK(check_pool(g_mp));
        ASSERT_EQ(atomic_load(&g_mp->nowned), 0);
    }
    while (g_nh > 0)
        ASSERT_OK(infinirt__pool_free_sync(g_hand[--g_nh], infinirt__want_any()));
    CHECK(check_pool(g_mp));
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_trim(g_mp));
    CHECK(check_pool(g_mp));
    CHECK(check_stats(g_mp, &f, 0, 0));
    ASSERT_EQ(fake_live(&f), 0);
    return finish(g_mp, &f);
}
