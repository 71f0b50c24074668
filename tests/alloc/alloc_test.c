/*
 * alloc_test.c - unit tests of the caching allocator (loader/alloc/)
 * against a fake backend (fake_backend.c); the randomized and multithreaded
 * ones are in alloc_test_model.c.  Usage: alloc_test NAME | --list.
 */
#define _GNU_SOURCE
#include "alloc_test.h"
#include "log.h"

#include <stdbool.h>
#include <stdint.h>

/* The tests link the allocator without the loader's API file. */
const char *infinirtGetErrorName(infiniStatus_t status)
{
    switch ((int)status) {
#define NAME_CASE_(name, value, text) \
    case value:                       \
        return #name;
        INFINI_STATUS_MAP(NAME_CASE_)
#undef NAME_CASE_
    }
    return "UNKNOWN_STATUS";
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

infinirt__pool *make_pool(fake *f, const infinirt__alloc_config *cfg)
{
    infinirt__alloc_config c;
    infinirt__alloc_config_default(&c);
    infinirt__pool *p = NULL;
    if (infinirt__pool_create(&f->be, cfg ? cfg : &c, &p) != INFINI_STATUS_SUCCESS)
        return NULL;
    return p;
}

/* Destroy the pool; the fake must be left with no memory and no fence. */
int finish(infinirt__pool *pool, fake *f)
{
    infinirt__pool_destroy(pool);
    ASSERT_EQ(fake_live(f), 0);
    ASSERT_EQ(fake_nraw(f), 0);
    ASSERT_EQ(f->taken, f->released);
    ASSERT_EQ(f->nfence, 0);
    ASSERT_EQ(f->bad_release, 0);
    fake_fini(f);
    return TEST_OK;
}

/* Statistics against what the test knows, and against the backend. */
int check_stats(infinirt__pool *pool, fake *f, size_t allocated, size_t active)
{
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.allocated_bytes, allocated);
    ASSERT_EQ(st.active_blocks, active);
    ASSERT_EQ(st.reserved_bytes, fake_live(f));
    ASSERT_EQ(st.segments, fake_nraw(f));
    ASSERT_EQ(st.raw_allocs - st.raw_frees, st.segments);
    ASSERT_EQ(st.cached_free_bytes, st.reserved_bytes - st.allocated_bytes);
    ASSERT_GE(st.peak_allocated_bytes, st.allocated_bytes);
    ASSERT_GE(st.peak_reserved_bytes, st.reserved_bytes);
    return TEST_OK;
}

/* ------------------------------------------------------------- basics */

static int test_basic(void)
{
    fake f;
    fake_init(&f, 0, 0, "basic");
    infinirt__pool *pool = make_pool(&f, NULL);
    ASSERT(pool != NULL);
    void *p, *q;
    ASSERT_EQ(infinirt__pool_alloc(pool, 0, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirt__pool_alloc(pool, 1, NULL, &p));
    CHECK(check_stats(pool, &f, 1, 1));
    ASSERT_OK(infinirt__pool_free(p, SYNC, NULL));
    CHECK(check_stats(pool, &f, 0, 0));
    ASSERT_OK(infinirt__pool_alloc(pool, 1, NULL, &q));
    ASSERT_PTR_EQ(q, p); /* the cache serves it again */
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(NULL, SYNC, NULL));
    /* One raw allocation served everything. */
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.raw_allocs, 1);
    ASSERT_EQ(st.alloc_requests, 2);
    ASSERT_EQ(st.peak_allocated_bytes, 1);
    return finish(pool, &f);
}

/* --------------------------------------------------------- stream order */

static int test_stream_order_async(void)
{
    fake f;
    fake_init(&f, 0, 0, "order");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *A = (void *)0xA0, *B = (void *)0xB0;
    char *p, *q, *r, *r2, *x;
    /* Small block: reused at once on its own stream. */
    ASSERT_OK(infinirt__pool_alloc(pool, 4096, A, (void **)&p));
    fake_set_busy(&f, A);
    ASSERT_OK(infinirt__pool_free(p, A, NULL));
    ASSERT_EQ(f.taken, 1);
    ASSERT_OK(infinirt__pool_alloc(pool, 4096, A, (void **)&q));
    ASSERT_PTR_EQ(q, p);
    ASSERT_OK(infinirt__pool_free(q, A, NULL));
    ASSERT_EQ(f.taken, 2);
    ASSERT_EQ(f.released, 1); /* the newer fence covers the older one */
    ASSERT_OK(infinirt__pool_alloc(pool, 4096, B, (void **)&r));
    ASSERT(r + 4096 <= p || r >= p + 4096);
    ASSERT_OK(infinirt__pool_free(r, B, NULL));
    /* Large block: stream B cannot have it while A's fence is pending... */
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, A, (void **)&x));
    ASSERT_OK(infinirt__pool_free(x, A, NULL));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, B, (void **)&r));
    ASSERT_PTR_NE(r, x);
    ASSERT_OK(infinirt__pool_free(r, B, NULL)); /* B is idle: no fence */
    /* ...and can once it completes (after B's own cached block). */
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, B, (void **)&r));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, B, (void **)&r2));
    ASSERT_PTR_EQ(r2, x);
    ASSERT_OK(infinirt__pool_free(r, B, NULL));
    ASSERT_OK(infinirt__pool_free(r2, B, NULL));
    /* A block freed on another stream than its own waits for that fence. */
    ASSERT_OK(infinirt__pool_alloc(pool, 8192, A, (void **)&p));
    fake_set_busy(&f, B);
    ASSERT_OK(infinirt__pool_free(p, B, NULL));
    ASSERT_OK(infinirt__pool_alloc(pool, 8192, A, (void **)&q));
    ASSERT(q + 8192 <= p || q >= p + 8192);
    fake_complete_all(&f);
    /* Completed: it comes back at the latest when the bins run dry. */
    char *got[600];
    int n = 0, seen = 0;
    while (n < 600 && !seen) {
        ASSERT_OK(infinirt__pool_alloc(pool, 8192, A, (void **)&got[n]));
        seen = got[n++] == p;
    }
    ASSERT(seen);
    while (n > 0)
        ASSERT_OK(infinirt__pool_free(got[--n], A, NULL));
    ASSERT_OK(infinirt__pool_free(q, A, NULL));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

static int test_stream_order_sync(void)
{
    fake f;
    fake_init(&f, 0, 0, "sync");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *A = (void *)0xA0;
    char *p, *q, *r, *s;
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&p));
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, NULL, (void **)&s));
    fake_set_busy(&f, A); /* work on any stream pins a synchronous free */
    ASSERT_OK(infinirt__pool_free(p, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(s, SYNC, NULL));
    ASSERT_EQ(f.taken, 2);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&q));
    ASSERT(q + 3000 <= p || q >= p + 3000);
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, A, (void **)&r));
    ASSERT(r + 3000 <= p || r >= p + 3000);
    ASSERT_OK(infinirt__pool_free(r, A, NULL));
    char *t;
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, NULL, (void **)&t));
    ASSERT_PTR_NE(t, s);
    ASSERT_OK(infinirt__pool_free(t, SYNC, NULL));
    fake_complete_all(&f);
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, NULL, (void **)&t));
    char *t2;
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, NULL, (void **)&t2));
    ASSERT(t == s || t2 == s);
    ASSERT_OK(infinirt__pool_free(t, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(t2, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    /* Nothing in flight: a synchronous free takes no fence. */
    size_t before = f.taken;
    ASSERT_OK(infinirt__pool_alloc(pool, 3000, NULL, (void **)&q));
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    ASSERT_EQ(f.taken, before);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* ------------------------------------------------------ out of memory */

static int test_oom_retry(void)
{
    fake f;
    fake_init(&f, 8 * MiB, 0, "oom");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a[3], *big, *more;
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, 2 * MiB, NULL, &a[i]));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(infinirt__pool_free(a[i], SYNC, NULL));
    ASSERT_EQ(fake_live(&f), 6 * MiB); /* cached */
    ASSERT_OK(infinirt__pool_alloc(pool, 5 * MiB, NULL, &big));
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.retries, 1);
    ASSERT_EQ(st.oom_count, 0);
    ASSERT_EQ(st.reserved_bytes, 5 * MiB);
    ASSERT_EQ(infinirt__pool_alloc(pool, 4 * MiB, NULL, &more), INFINI_STATUS_OUT_OF_MEMORY);
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.retries, 2);
    ASSERT_EQ(st.oom_count, 1);
    ASSERT_EQ(st.alloc_requests, 4);
    CHECK(check_stats(pool, &f, 5 * MiB, 1));
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &more));
    ASSERT_OK(infinirt__pool_free(big, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(more, SYNC, NULL));
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

static int test_oom_waits_for_fences(void)
{
    fake f;
    fake_init(&f, 8 * MiB, 0, "oomwait");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a, *b, *c;
    ASSERT_OK(infinirt__pool_alloc(pool, 5 * MiB, NULL, &a));
    ASSERT_OK(infinirt__pool_alloc(pool, 2 * MiB, NULL, &b));
    fake_set_busy(&f, NULL);
    ASSERT_OK(infinirt__pool_free(b, SYNC, NULL)); /* pending */
    size_t waits = f.waits;
    ASSERT_OK(infinirt__pool_alloc(pool, 3 * MiB, NULL, &c));
    ASSERT_GT(f.waits, waits); /* only the out-of-memory path waits */
    CHECK(check_stats(pool, &f, 8 * MiB, 2));
    ASSERT_OK(infinirt__pool_free(a, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(c, SYNC, NULL));
    return finish(pool, &f);
}

static int test_oom_last_resort(void)
{
    fake f;
    fake_init(&f, 2 * MiB, 0, "carve");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *s, *l;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, NULL, &s)); /* a 2 MiB small segment: full */
    ASSERT_OK(infinirt__pool_alloc(pool, 100 * KiB, NULL, &l));
    ASSERT(fake_contains(&f, l, 100 * KiB));
    CHECK(check_stats(pool, &f, 1000 + 100 * KiB, 2));
    ASSERT_OK(infinirt__pool_free(l, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(s, SYNC, NULL));
    return finish(pool, &f);
}

static int test_max_alloc_size(void)
{
    fake f;
    fake_init(&f, 0, 4 * MiB + 1000, "maxalloc");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *p;
    ASSERT_EQ(infinirt__pool_alloc(pool, 5 * MiB, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_alloc(pool, SIZE_MAX, NULL, &p), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirt__pool_alloc(pool, 4 * MiB, NULL, &p));
    ASSERT_OK(infinirt__pool_free(p, SYNC, NULL));
    for (int i = 0; i < 500; i++) {
        size_t size = 1 + rnd() % (4 * MiB);
        ASSERT_OK(infinirt__pool_alloc(pool, size, NULL, &p));
        ASSERT_OK(infinirt__pool_free(p, SYNC, NULL));
    }
    ASSERT_LE(f.max_raw, 4 * MiB + 1000);
    CHECK(check_stats(pool, &f, 0, 0));
    infinirt__pool_destroy(pool);
    /* A device whose limit is below the small-segment size. */
    f.be.max_alloc_size = 256 * KiB;
    pool = make_pool(&f, NULL);
    f.max_raw = 0;
    void *ps[64];
    for (int i = 0; i < 64; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, 1 + rnd() % (256 * KiB), NULL, &ps[i]));
    for (int i = 0; i < 64; i++)
        ASSERT_OK(infinirt__pool_free(ps[i], SYNC, NULL));
    ASSERT_LE(f.max_raw, 256 * KiB);
    return finish(pool, &f);
}

/* Near the backend's capacity the pool stops trading memory for speed: a
 * free block 4.7% too big is no longer handed out whole. */
static int test_strict_near_capacity(void)
{
    fake f;
    fake_init(&f, 0, 0, "strict");
    f.be.total_memory = 16 * MiB;
    infinirt__pool *pool = make_pool(&f, NULL);
    void *a, *b, *big;
    ASSERT_OK(infinirt__pool_alloc(pool, MiB + 48 * KiB, NULL, &a));
    ASSERT_OK(infinirt__pool_free(a, SYNC, NULL));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &b));
    ASSERT_PTR_EQ(b, a); /* far from capacity: reused whole */
    ASSERT_OK(infinirt__pool_alloc(pool, 12 * MiB, NULL, &big));
    ASSERT_OK(infinirt__pool_free(b, SYNC, NULL));
    ASSERT_OK(infinirt__pool_alloc(pool, MiB, NULL, &b));
    ASSERT_PTR_NE(b, a); /* near it: an exact segment instead */
    CHECK(check_stats(pool, &f, 13 * MiB, 2));
    ASSERT_OK(infinirt__pool_free(b, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(big, SYNC, NULL));
    return finish(pool, &f);
}

/* The same random trace (RMM's random_allocations, scaled down) replayed
 * again and again - carving fragments the big segments differently each
 * time - must not grow the cache without bound: at most three times the
 * most ever in use, plus one segment. */
static int test_bounded_cache(void)
{
    fake f;
    fake_init(&f, 0, 0, "bounded");
    infinirt__pool *pool = make_pool(&f, NULL);
    enum { N = 4000 };
    const size_t cap = 64 * MiB, max = 4 * MiB;
    void *live[N];
    size_t sizes[N], peak_reserved = 0;
    for (int rep = 0; rep < 60; rep++) {
        uint64_t saved = g_rng;
        g_rng = 12345; /* the same trace every time */
        size_t n = 0, made = 0, bytes = 0;
        for (int i = 0; i < 2 * N; i++) {
            size_t size = 1 + rnd() % max;
            if (n == 0 || (rnd() % 100 < 73 && made < N && bytes + size < cap)) {
                ASSERT_OK(infinirt__pool_alloc(pool, size, NULL, &live[n]));
                sizes[n++] = size;
                bytes += size;
                made++;
            } else {
                size_t k = rnd() % n;
                ASSERT_OK(infinirt__pool_free(live[k], SYNC, NULL));
                bytes -= sizes[k];
                live[k] = live[--n];
                sizes[k] = sizes[n];
            }
            size_t r = fake_live(&f);
            peak_reserved = r > peak_reserved ? r : peak_reserved;
        }
        while (n > 0)
            ASSERT_OK(infinirt__pool_free(live[--n], SYNC, NULL));
        g_rng = saved;
    }
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    printf("peak allocated %zu, peak reserved %zu (%.2fx)\n", st.peak_allocated_bytes, peak_reserved,
           (double)peak_reserved / (double)st.peak_allocated_bytes);
    ASSERT_LE(peak_reserved, 3 * (st.peak_allocated_bytes + st.peak_allocated_bytes / 16) + max);
    return finish(pool, &f);
}

/* -------------------------------------------------- pointer validation */

static int test_bad_free(void)
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
    ASSERT_EQ(infinirt__pool_free(p + 512, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(p + 1, NULL, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(big + 4096, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(&local, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(q, SYNC, other), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_stats(pool, &after);
    ASSERT_MEM_EQ(&before, &after, sizeof before);
    ASSERT_OK(infinirt__pool_free(p, SYNC, pool));
    ASSERT_EQ(infinirt__pool_free(p, SYNC, NULL), INFINI_STATUS_BAD_PARAM); /* double free */
    infinirt__pool_stats(pool, &before);
    ASSERT_EQ(infinirt__pool_free(p, (void *)0x77, NULL), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_stats(pool, &after);
    ASSERT_MEM_EQ(&before, &after, sizeof before);
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(big, SYNC, NULL));
    ASSERT_EQ(infinirt__pool_free(big, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    infinirt__pool_destroy(other);
    /* Device memory only through ANY_DEVICE, host memory only through ANY_HOST. */
    fake hf;
    fake_init(&hf, 0, 0, "host");
    hf.be.device_id = -1;
    infinirt__pool *host = make_pool(&hf, NULL);
    char *h, *d;
    ASSERT_OK(infinirt__pool_alloc(host, 5000, NULL, (void **)&h));
    ASSERT_OK(infinirt__pool_alloc(pool, 5000, NULL, (void **)&d));
    ASSERT_EQ(infinirt__pool_free(h, SYNC, INFINIRT__POOL_ANY_DEVICE), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(d, SYNC, INFINIRT__POOL_ANY_HOST), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirt__pool_free(h, SYNC, INFINIRT__POOL_ANY_HOST));
    ASSERT_OK(infinirt__pool_free(d, SYNC, INFINIRT__POOL_ANY_DEVICE));
    CHECK(finish(host, &hf));
    return finish(pool, &f);
}

static int test_lookup_interior(void)
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
        ASSERT_OK(infinirt__pool_free(p[i], SYNC, NULL));
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
            ASSERT_OK(infinirt__pool_free(p[i], SYNC, NULL));
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
            ASSERT_OK(infinirt__pool_free(q[i], SYNC, NULL));
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
        ASSERT_OK(infinirt__pool_free(q[i], SYNC, NULL));
    return finish(pool, &f);
}

/* ----------------------------------------------------------- modes */

static int test_passthrough(void)
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
    ASSERT_EQ(infinirt__pool_free(q + 1, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_free(q, SYNC, other), INFINI_STATUS_BAD_PARAM);
    fake_set_busy(&f, (void *)0x10);
    size_t waits = f.waits;
    ASSERT_OK(infinirt__pool_free(q, (void *)0x10, NULL));
    ASSERT_GT(f.waits, waits); /* no cache: the free waits for the stream */
    ASSERT_EQ(infinirt__pool_free(q, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(infinirt__pool_lookup(q, &info), 0);
    ASSERT_OK(infinirt__pool_free(p, SYNC, pool));
    ASSERT_EQ(infinirt__pool_free(p, SYNC, NULL), INFINI_STATUS_BAD_PARAM);
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.raw_allocs, 2);
    ASSERT_EQ(st.raw_frees, 2);
    ASSERT_EQ(st.peak_allocated_bytes, 1000 + 3 * MiB);
    CHECK(check_stats(pool, &f, 0, 0));
    infinirt__pool_destroy(other);
    return finish(pool, &f);
}

static int test_release_on_free(void)
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
    ASSERT_OK(infinirt__pool_free(p, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    ASSERT_EQ(fake_live(&f), 0);
    ASSERT_OK(infinirt__pool_alloc(pool, 100 * KiB, S, &p));
    fake_set_busy(&f, S);
    ASSERT_OK(infinirt__pool_free(p, S, NULL)); /* its fence is pending: kept */
    ASSERT_EQ(fake_live(&f), 100 * KiB);
    ASSERT_OK(infinirt__pool_trim(pool)); /* waits, then gives it back */
    ASSERT_EQ(fake_live(&f), 0);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

static int test_max_cached(void)
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
        ASSERT_OK(infinirt__pool_free(p[i], SYNC, NULL));
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(pool, &st);
    ASSERT_LE(st.cached_free_bytes, MiB);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

static int test_trim_and_peak(void)
{
    fake f;
    fake_init(&f, 0, 0, "trim");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *p[10];
    for (int i = 0; i < 10; i++)
        ASSERT_OK(infinirt__pool_alloc(pool, (size_t)(i + 1) * 100 * KiB, NULL, &p[i]));
    for (int i = 0; i < 9; i++)
        ASSERT_OK(infinirt__pool_free(p[i], SYNC, NULL));
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
    ASSERT_OK(infinirt__pool_free(p[9], SYNC, NULL));
    ASSERT_OK(infinirt__pool_trim(pool));
    CHECK(check_stats(pool, &f, 0, 0));
    infinirt__pool_stats(pool, &st);
    ASSERT_EQ(st.segments, 0);
    return finish(pool, &f);
}

static int test_stream_retired(void)
{
    fake f;
    fake_init(&f, 0, 0, "retire");
    infinirt__pool *pool = make_pool(&f, NULL);
    void *S = (void *)0x5000, *p1, *p2, *p3, *q;
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, S, &p1));
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, S, &p2));
    ASSERT_OK(infinirt__pool_alloc(pool, 5000, S, &p3));
    fake_set_busy(&f, S);
    ASSERT_OK(infinirt__pool_free(p1, S, NULL));
    ASSERT_OK(infinirt__pool_free(p2, S, NULL));
    fake_complete_all(&f); /* the stream is destroyed after its work */
    infinirt__pool_stream_retired(pool, S);
    CHECK(check_stats(pool, &f, 5000, 1));
    ASSERT_OK(infinirt__pool_alloc(pool, 200 * KiB, NULL, &q));
    ASSERT_PTR_EQ(q, p2); /* now in the shared bins */
    infinirt__ptr_info info;
    ASSERT_EQ(infinirt__pool_lookup((char *)p3 + 10, &info), 1);
    ASSERT_OK(infinirt__pool_free(p3, SYNC, NULL));
    ASSERT_OK(infinirt__pool_free(q, SYNC, NULL));
    ASSERT_OK(infinirt__pool_alloc(pool, 1000, S, &p1)); /* the key may come back */
    ASSERT_OK(infinirt__pool_free(p1, S, NULL));
    infinirt__pool_stream_retired(pool, S);
    CHECK(check_stats(pool, &f, 0, 0));
    return finish(pool, &f);
}

/* --------------------------------------------------------------- runner */

#define ALLOC_TESTS(X)                                                                         \
    X(basic) X(random_model) X(random_model_oom) X(stream_order_async) X(stream_order_sync)    \
    X(oom_retry) X(oom_waits_for_fences) X(oom_last_resort) X(strict_near_capacity)            \
    X(huge_request_fails_fast) X(oom_keeps_capacity)                                           \
    X(bounded_cache)                                                                           \
    X(max_alloc_size) X(bad_free) X(lookup_interior) X(passthrough) X(release_on_free)         \
    X(max_cached) X(trim_and_peak) X(stream_retired) X(threads) X(hash_collisions) X(whole_block_frees)    \
    X(invariants_stress) X(invariants_threads) X(hash_prefetch_during_grow)

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } tests[] = {
#define ENTRY_(n) {#n, test_##n},
        ALLOC_TESTS(ENTRY_)
#undef ENTRY_
    };
    size_t count = sizeof tests / sizeof tests[0];
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < count; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    for (size_t i = 0; argc == 2 && i < count; i++)
        if (strcmp(argv[1], tests[i].name) == 0)
            return tests[i].fn();
    fprintf(stderr, "usage: %s NAME | --list\n", argv[0]);
    return 2;
}
