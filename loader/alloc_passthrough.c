/*
 * alloc_passthrough.c - the allocator interface without caching: every
 * allocation is one raw plugin allocation, recorded in a process-wide
 * directory so that Free, Memcpy and Memset find the owner of any pointer
 * (interior pointers too) and double frees are caught.
 *
 * Frees honour stream order by waiting for the fence before the raw free:
 * slow, but never unsafe.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct infinirt__pool {
    infinirt__pool_backend be;
    pthread_mutex_t lock;
    infinirtAllocatorStats_t st;
};

typedef struct {
    uintptr_t base;
    size_t size;
    infinirt__pool *pool;
} entry;

static pthread_rwlock_t g_dir_lock = PTHREAD_RWLOCK_INITIALIZER;
static entry *g_dir;
static size_t g_dir_n, g_dir_cap;

/* Index of the last entry with base <= p, or -1.  Caller holds the lock. */
static long dir_floor(uintptr_t p)
{
    long lo = 0, hi = (long)g_dir_n - 1, ans = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (g_dir[mid].base <= p) {
            ans = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return ans;
}

void infinirt__alloc_config_default(infinirt__alloc_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->enabled = 1;
    cfg->granularity = 512;
}

infiniStatus_t infinirt__pool_create(const infinirt__pool_backend *backend, const infinirt__alloc_config *cfg,
                                     infinirt__pool **out)
{
    (void)cfg;
    infinirt__pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    p->be = *backend;
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return INFINI_STATUS_SUCCESS;
}

void infinirt__pool_destroy(infinirt__pool *pool)
{
    if (pool == NULL)
        return;
    pthread_rwlock_wrlock(&g_dir_lock);
    size_t j = 0;
    for (size_t i = 0; i < g_dir_n; i++) {
        if (g_dir[i].pool == pool)
            pool->be.raw_free(pool->be.ctx, (void *)g_dir[i].base);
        else
            g_dir[j++] = g_dir[i];
    }
    g_dir_n = j;
    pthread_rwlock_unlock(&g_dir_lock);
    free(pool);
}

infiniStatus_t infinirt__pool_alloc(infinirt__pool *pool, size_t size, void *stream, void **out)
{
    (void)stream;
    if (pool->be.max_alloc_size != 0 && size > pool->be.max_alloc_size) {
        INFINIRT__WARN("%s: %zu bytes exceed the device's largest allocation of %zu bytes", pool->be.label, size,
                       pool->be.max_alloc_size);
        return INFINI_STATUS_BAD_PARAM;
    }
    void *p = NULL;
    infiniStatus_t st = pool->be.raw_alloc(pool->be.ctx, size, &p);
    pthread_mutex_lock(&pool->lock);
    if (st != INFINI_STATUS_SUCCESS) {
        if (st == INFINI_STATUS_OUT_OF_MEMORY)
            pool->st.oom_count++;
        pthread_mutex_unlock(&pool->lock);
        INFINIRT__WARN("%s: raw allocation of %zu bytes failed (%s); allocated %zu, reserved %zu", pool->be.label,
                       size, infinirtGetErrorName(st), pool->st.allocated_bytes, pool->st.reserved_bytes);
        return st;
    }
    pthread_mutex_unlock(&pool->lock);

    pthread_rwlock_wrlock(&g_dir_lock);
    if (g_dir_n == g_dir_cap) {
        size_t nc = g_dir_cap ? g_dir_cap * 2 : 64;
        entry *n = realloc(g_dir, nc * sizeof *n);
        if (n == NULL) {
            pthread_rwlock_unlock(&g_dir_lock);
            pool->be.raw_free(pool->be.ctx, p);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
        g_dir = n;
        g_dir_cap = nc;
    }
    long at = dir_floor((uintptr_t)p) + 1;
    memmove(&g_dir[at + 1], &g_dir[at], (g_dir_n - (size_t)at) * sizeof *g_dir);
    g_dir[at] = (entry){(uintptr_t)p, size, pool};
    g_dir_n++;
    pthread_rwlock_unlock(&g_dir_lock);

    pthread_mutex_lock(&pool->lock);
    infinirtAllocatorStats_t *s = &pool->st;
    s->allocated_bytes += size;
    s->reserved_bytes += size;
    s->active_blocks++;
    s->segments++;
    s->raw_allocs++;
    s->alloc_requests++;
    if (s->allocated_bytes > s->peak_allocated_bytes)
        s->peak_allocated_bytes = s->allocated_bytes;
    if (s->reserved_bytes > s->peak_reserved_bytes)
        s->peak_reserved_bytes = s->reserved_bytes;
    pthread_mutex_unlock(&pool->lock);
    *out = p;
    return INFINI_STATUS_SUCCESS;
}

static bool pool_matches(const infinirt__pool *have, const infinirt__pool *want)
{
    if (want == NULL)
        return true;
    if (want == INFINIRT__POOL_ANY_DEVICE)
        return have->be.device_id >= 0;
    if (want == INFINIRT__POOL_ANY_HOST)
        return have->be.device_id < 0;
    return have == want;
}

infiniStatus_t infinirt__pool_free(void *ptr, void *stream, infinirt__pool *want_pool)
{
    pthread_rwlock_wrlock(&g_dir_lock);
    long i = dir_floor((uintptr_t)ptr);
    if (i < 0 || g_dir[i].base != (uintptr_t)ptr || !pool_matches(g_dir[i].pool, want_pool)) {
        pthread_rwlock_unlock(&g_dir_lock);
        return INFINI_STATUS_BAD_PARAM;
    }
    entry e = g_dir[i];
    memmove(&g_dir[i], &g_dir[i + 1], (g_dir_n - (size_t)i - 1) * sizeof *g_dir);
    g_dir_n--;
    pthread_rwlock_unlock(&g_dir_lock);

    infinirt__pool *pool = e.pool;
    infinirt__fence *f = NULL;
    if (pool->be.fence_take(pool->be.ctx, stream, &f) == INFINI_STATUS_SUCCESS && f != NULL) {
        pool->be.fence_wait(pool->be.ctx, f);
        pool->be.fence_release(pool->be.ctx, f);
    }
    infiniStatus_t st = pool->be.raw_free(pool->be.ctx, ptr);
    pthread_mutex_lock(&pool->lock);
    pool->st.allocated_bytes -= e.size;
    pool->st.reserved_bytes -= e.size;
    pool->st.active_blocks--;
    pool->st.segments--;
    pool->st.raw_frees++;
    pthread_mutex_unlock(&pool->lock);
    if (st != INFINI_STATUS_SUCCESS)
        INFINIRT__WARN("%s: raw free of %p failed: %s", pool->be.label, ptr, infinirtGetErrorName(st));
    return INFINI_STATUS_SUCCESS;
}

void infinirt__pool_stream_retired(infinirt__pool *pool, void *stream)
{
    (void)pool;
    (void)stream;
}

int infinirt__pool_lookup(const void *ptr, infinirt__ptr_info *info)
{
    pthread_rwlock_rdlock(&g_dir_lock);
    long i = dir_floor((uintptr_t)ptr);
    int found = i >= 0 && (uintptr_t)ptr - g_dir[i].base < g_dir[i].size;
    if (found) {
        entry e = g_dir[i];
        *info = (infinirt__ptr_info){e.pool, e.pool->be.device_type, e.pool->be.device_id, (void *)e.base, e.size,
                                     (size_t)((uintptr_t)ptr - e.base)};
    }
    pthread_rwlock_unlock(&g_dir_lock);
    return found;
}

void infinirt__pool_stats(infinirt__pool *pool, infinirtAllocatorStats_t *stats)
{
    pthread_mutex_lock(&pool->lock);
    *stats = pool->st;
    pthread_mutex_unlock(&pool->lock);
}

void infinirt__pool_reset_peak(infinirt__pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->st.peak_allocated_bytes = pool->st.allocated_bytes;
    pool->st.peak_reserved_bytes = pool->st.reserved_bytes;
    pthread_mutex_unlock(&pool->lock);
}

infiniStatus_t infinirt__pool_trim(infinirt__pool *pool)
{
    (void)pool; /* nothing is cached */
    return INFINI_STATUS_SUCCESS;
}
