/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_test_model.c - the allocator's randomized test against a reference
 * model, and its multithreaded test (run under TSan too).
 */
#define _GNU_SOURCE
#include "alloc_test.h"
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>

/* ----------------------------------------------------- randomized model */

typedef struct {
    char *p;
    size_t size;
} live_t;

typedef struct {
    uintptr_t lo, hi;
    void *allowed; /* the one stream that may reuse at once, */
    bool sync;     /* unless freed synchronously: none */
    unsigned seq;
} guard_t;

static int cmp_live(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const live_t *)x)->p, b = (uintptr_t)((const live_t *)y)->p;
    return a < b ? -1 : a > b;
}

/* No two live blocks overlap; each lies in a raw allocation of the fake. */
static int check_layout(fake *f, const live_t *live, size_t n)
{
    live_t *s = malloc((n + 1) * sizeof *s);
    memcpy(s, live, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_live);
    size_t nr;
    fake_raw *r = fake_raws_sorted(f, &nr);
    int rc = TEST_OK;
    for (size_t i = 0; i < n && rc == TEST_OK; i++) {
        if (i + 1 < n && (uintptr_t)s[i].p + s[i].size > (uintptr_t)s[i + 1].p) {
            fprintf(stderr, "blocks %p+%zu and %p overlap\n", (void *)s[i].p, s[i].size, (void *)s[i + 1].p);
            rc = TEST_FAIL;
        }
        size_t lo = 0, hi = nr;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if ((uintptr_t)r[mid].p <= (uintptr_t)s[i].p)
                lo = mid;
            else
                hi = mid;
        }
        uintptr_t b = nr ? (uintptr_t)r[lo].p : 0;
        if (nr == 0 || (uintptr_t)s[i].p < b || (uintptr_t)s[i].p + s[i].size > b + r[lo].size) {
            fprintf(stderr, "block %p+%zu is outside every raw allocation\n", (void *)s[i].p, s[i].size);
            rc = TEST_FAIL;
        }
    }
    free(s);
    free(r);
    return rc;
}

static size_t random_size(void)
{
    unsigned k = (unsigned)(rnd() % 100);
    if (k < 70)
        return 1 + rnd() % (64 * KiB);
    if (k < 95)
        return 1 + rnd() % MiB;
    return 1 + rnd() % (8 * MiB);
}

static int random_model(size_t limit, int steps)
{
    fake f;
    fake_init(&f, limit, 0, "model");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    /* Frees are ordered on the first three; allocations also come from the
     * synchronous key, which may reuse no guarded block. */
    void *streams[] = {NULL, (void *)0x1000, (void *)0x2000, INFINIRT__POOL_SYNC};
    live_t *live = malloc(4096 * sizeof *live);
    guard_t *guards = malloc(65536 * sizeof *guards);
    size_t nlive = 0, nguard = 0, sum = 0, peak = 0, requests = 0, ooms = 0;
    for (int step = 0; step < steps; step++) {
        unsigned r = (unsigned)(rnd() % 100);
        if ((r < 50 || nlive == 0) && nlive < 4096) {
            size_t size = random_size();
            void *stream = streams[rnd() % 4];
            char *p;
            infiniStatus_t st = infinirt__pool_alloc(pool, size, stream, (void **)&p);
            if (limit != 0 && st == INFINI_STATUS_OUT_OF_MEMORY) {
                ooms++;
                continue;
            }
            ASSERT_OK(st);
            for (size_t g = 0; g < nguard; g++) {
                guard_t *gd = &guards[g];
                if ((gd->sync || gd->allowed != stream) && (uintptr_t)p < gd->hi && (uintptr_t)p + size > gd->lo &&
                    !fake_seq_done(&f, gd->seq))
                    TEST_FAILED_("step %d: %p+%zu handed to stream %p while fence %u is pending", step, (void *)p,
                                 size, stream, gd->seq);
            }
            p[0] = 1; /* the memory is real: ASan checks the bounds */
            p[size - 1] = 2;
            live[nlive++] = (live_t){p, size};
            sum += size;
            requests++;
            peak = sum > peak ? sum : peak;
        } else if (r < 90) {
            size_t i = rnd() % nlive;
            live_t b = live[i];
            bool sync = rnd() % 4 == 0;
            void *fs = sync ? NULL : streams[rnd() % 3];
            size_t before = f.taken;
            ASSERT_OK(free_either(b.p, sync, fs, rnd() % 2 ? infinirt__want_pool(pool) : infinirt__want_any()));
            if (f.taken != before && nguard < 65536)
                guards[nguard++] = (guard_t){(uintptr_t)b.p, (uintptr_t)b.p + b.size, fs, sync, f.last_seq};
            if (rnd() % 16 == 0)
                ASSERT_EQ(infinirt__pool_free_sync(b.p, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
            live[i] = live[--nlive];
            sum -= b.size;
        } else if (r < 95) {
            fake_set_busy(&f, streams[rnd() % 3]);
        } else if (r < 99) {
            fake_complete_all(&f);
            nguard = 0;
        } else {
            ASSERT_OK(infinirt__pool_trim(pool));
        }
        if (nlive > 0) {
            live_t b = live[rnd() % nlive];
            size_t off = rnd() % b.size;
            infinirt__ptr_info info;
            ASSERT_EQ(infinirt__pool_lookup(b.p + off, &info), 1);
            ASSERT_PTR_EQ(info.block_base, b.p);
            ASSERT_EQ(info.block_size, b.size);
            ASSERT_EQ(info.offset, off);
            ASSERT_PTR_EQ(info.pool, pool);
            if (off != 0)
                ASSERT_EQ(infinirt__pool_free_sync(b.p + off, infinirt__want_any()), INFINI_STATUS_BAD_PARAM);
        }
        CHECK(check_stats(pool, &f, sum, nlive));
        infinirtAllocatorStats_t st;
        infinirt__pool_stats(pool, &st);
        ASSERT_EQ(st.alloc_requests, requests);
        ASSERT_LE(st.peak_allocated_bytes, peak);
        ASSERT_EQ(st.oom_count, ooms);
        if (step % 4 == 0 || step > steps - 100)
            CHECK(check_layout(&f, live, nlive));
    }
    while (nlive > 0) {
        ASSERT_OK(infinirt__pool_free_sync(live[nlive - 1].p, infinirt__want_any()));
        nlive--;
    }
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_EQ(fake_live(&f), 0);
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    printf("%d steps: %zu allocations, %zu out of memory, %zu retries, %zu raw allocations, %zu fences, "
           "peak %zu allocated / %zu reserved bytes\n",
           steps, requests, ooms, st.retries, st.raw_allocs, f.taken, peak, st.peak_reserved_bytes);
    if (limit != 0)
        ASSERT_GT(st.retries, 0);
    free(live);
    free(guards);
    return finish(pool, &f);
}

int test_random_model(void)
{
    return random_model(0, 20000);
}

int test_random_model_oom(void)
{
    infinirt__log_set_default_level(INFINIRT__LOG_ERROR); /* ~1,500 expected OOM lines */
    return random_model(48 * MiB, 20000);
}

/* -------------------------------------------------------------- threads */

typedef struct {
    infinirt__pool *pools[2];
    fake *fakes[2];
    int id;
} targ;

static pthread_mutex_t g_xmu = PTHREAD_MUTEX_INITIALIZER;
static void *g_xchg[64];
static int g_nx;
static atomic_int g_running;

static void *worker(void *arg)
{
    targ *t = arg;
    void *stream = (void *)(uintptr_t)(0x100 * (t->id + 1));
    char *mine[64];
    size_t msz[64];
    void *mkey[64]; /* the stream each block was allocated on: its own or, for a */
    int n = 0;      /* quarter, the NULL stream (the thread's own arena when small) */
    uint64_t st = 0x1234567ull * (uint64_t)(t->id + 1);
    for (int it = 0; it < 20000; it++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(st >> 33);
        if (n < 64 && (r % 3 != 0 || n == 0)) {
            size_t size = 1 + (r >> 4) % (r % 7 == 0 ? 400 * KiB : 8 * KiB);
            infinirt__pool *pool = t->pools[r % 2];
            void *key = (r >> 12) % 4 == 0 ? NULL : stream;
            char *p;
            if (infinirt__pool_alloc(pool, size, key, (void **)&p) != INFINI_STATUS_SUCCESS)
                return (void *)1;
            memset(p, t->id, size < 64 ? size : 64);
            p[size - 1] = (char)t->id;
            mine[n] = p;
            mkey[n] = key;
            msz[n++] = size;
        } else {
            int i = (int)(r % (unsigned)n);
            char *p = mine[i];
            size_t size = msz[i];
            void *key = mkey[i];
            if (p[0] != (char)t->id || p[size - 1] != (char)t->id)
                return (void *)2; /* someone else wrote into our block */
            infinirt__ptr_info info;
            if (!infinirt__pool_lookup(p + size / 2, &info) || info.block_base != p)
                return (void *)3;
            mine[i] = mine[--n];
            msz[i] = msz[n];
            mkey[i] = mkey[n];
            if (r % 11 == 0) {
                fake_set_busy(t->fakes[r % 2], r % 3 == 0 ? NULL : stream);
            } else if (r % 13 == 0) {
                fake_complete_all(t->fakes[0]);
                fake_complete_all(t->fakes[1]);
            }
            if (r % 5 == 0) { /* hand it to another thread to free */
                void *other = NULL;
                bool handed = false;
                pthread_mutex_lock(&g_xmu);
                if (g_nx < 64) {
                    g_xchg[g_nx++] = p;
                    handed = true;
                }
                if (g_nx > 32)
                    other = g_xchg[--g_nx];
                pthread_mutex_unlock(&g_xmu);
                if (other != NULL && infinirt__pool_free_sync(other, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
                    return (void *)4;
                if (handed)
                    continue;
            }
            if (free_either(p, r % 4 == 0, key, infinirt__want_any()) != INFINI_STATUS_SUCCESS)
                return (void *)5;
        }
    }
    for (int i = 0; i < n; i++)
        if (infinirt__pool_free(mine[i], mkey[i], infinirt__want_any()) != INFINI_STATUS_SUCCESS)
            return (void *)6;
    /* The stream goes away while other threads still free its blocks
     * (handed over through g_xchg): they must find them wherever they move. */
    infinirt__pool_stream_retired(t->pools[0], stream);
    infinirt__pool_stream_retired(t->pools[1], stream);
    return NULL;
}

static void *observer(void *arg)
{
    targ *t = arg;
    while (atomic_load(&g_running)) {
        infinirtAllocatorStats_t st;
        infinirt__pool_stats(t->pools[0], &st);
        infinirt__pool_stats(t->pools[1], &st);
        infinirt__pool_trim(t->pools[1]);
        infinirt__ptr_info info;
        int local;
        infinirt__pool_lookup(&local, &info);
    }
    return NULL;
}

int test_threads(void)
{
    fake f[2];
    fake_init(&f[0], 0, 0, "t0");
    fake_init(&f[1], 0, 0, "t1");
    targ args[5];
    pthread_t th[5];
    infinirt__pool *p0 = make_pool(&f[0], NULL), *p1 = make_pool(&f[1], NULL);
    atomic_store(&g_running, 1);
    for (int i = 0; i < 5; i++) {
        args[i] = (targ){{p0, p1}, {&f[0], &f[1]}, i};
        pthread_create(&th[i], NULL, i < 4 ? worker : observer, &args[i]);
    }
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        if (rc != NULL) {
            fprintf(stderr, "worker %d failed with %d\n", i, (int)(uintptr_t)rc);
            bad = 1;
        }
    }
    atomic_store(&g_running, 0);
    pthread_join(th[4], NULL);
    ASSERT_EQ(bad, 0);
    for (int i = 0; i < g_nx; i++)
        ASSERT_OK(infinirt__pool_free_sync(g_xchg[i], infinirt__want_any()));
    fake_complete_all(&f[0]);
    fake_complete_all(&f[1]);
    CHECK(check_stats(p0, &f[0], 0, 0));
    CHECK(check_stats(p1, &f[1], 0, 0));
    CHECK(finish(p1, &f[1]));
    return finish(p0, &f[0]);
}
