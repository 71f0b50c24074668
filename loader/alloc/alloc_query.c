/*
 * alloc_query.c - the caching allocator's pass-through mode, pointer
 * lookup, statistics, trim and stream retirement.
 */
#define _GNU_SOURCE
#include "alloc_int.h"
#include "../log.h"

#include <string.h>

/* The segment of this thread's last lookup (segment structs are never
 * freed, so it is validated, not trusted). */
static _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__seg *tl_seg;

/* The blocks of this thread's last two successful lookups, as found under
 * their arenas' locks.  One is answered again with no lock while nobody
 * has taken its arena's lock since (the epoch): a block changes only under
 * its arena's lock (freed, moved with its segment), so an untouched arena
 * means the block is still live with the same size.  Two, because a D2D
 * copy looks up its source and its destination on every call, and they
 * are usually different blocks in different segments: the loop of a
 * program that copies between two buffers then costs a few loads per
 * lookup.  A miss replaces the entry not used last. */
typedef struct {
    uintptr_t start;
    size_t req;
    infinirt__seg *seg;
    infinirt__arena *arena;
    uint_fast64_t epoch;
    uint_fast64_t gen;
} lookup_hit;
static _Thread_local __attribute__((tls_model("initial-exec"))) lookup_hit tl_hit[2];
static _Thread_local __attribute__((tls_model("initial-exec"))) unsigned tl_hit_last; /* used last */

static inline int hit_valid(const lookup_hit *h, uintptr_t p)
{
    return h->seg != NULL && p - h->start < h->req &&
           atomic_load_explicit(&h->seg->arena, memory_order_acquire) == h->arena &&
           atomic_load_explicit(&h->arena->lock.epoch, memory_order_acquire) == h->epoch &&
           atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire) == h->gen;
}

/* --------------------------------------------------------- pass-through */

/* Every allocation is a raw allocation of exactly `size` bytes (so that
 * sanitizers see its real bounds), tracked like any block: lookups, double
 * frees and statistics work as with the cache. */
infiniStatus_t infinirt__passthrough_alloc(infinirt__pool *pool, size_t size, void **out)
{
    infinirt__arena *a = pool->arenas[0];
    infinirt__seg *s;
    infiniStatus_t st = infinirt__raw_segment(pool, size, true, &s);
    if (st != INFINI_STATUS_SUCCESS) {
        if (st == INFINI_STATUS_OUT_OF_MEMORY) {
            atomic_fetch_add(&pool->oom, 1);
            infinirt__log_oom(pool, size);
        }
        return st;
    }
    infinirt__spin_lock(&a->lock);
    infinirt__blk *b = infinirt__seg_attach(a, s);
    infinirt__bins_remove(&a->large, b, pool->gshift);
    infinirt__empty_drop(a, s);
    infinirt__blk_set_state(b, INFINIRT__BLK_USED);
    b->req = size;
    if (infinirt__ht_put(a, b) != 0) {
        infinirt__blk_set_state(b, INFINIRT__BLK_LOOSE);
        infinirt__seg_detach(a, s);
        infinirt__spin_unlock(&a->lock);
        infinirt__seg_destroy(pool, s);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    a->used += size;
    a->active++;
    a->requests++;
    a->req_bytes += size;
    if (a->req_bytes > a->peak_req)
        a->peak_req = a->req_bytes;
    infinirt__spin_unlock(&a->lock);
    *out = (void *)b->addr;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt__passthrough_free(infinirt__pool *pool, uintptr_t key, void *stream)
{
    /* The fence first: when none can be had the free fails unchanged. */
    infinirt__fence *f;
    infiniStatus_t st = infinirt__take_fence(pool, stream, &f);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__seg *s;
    infinirt__arena *a = infinirt__dir_lock_owner(key, &s, false);
    infinirt__blk *b = a != NULL ? infinirt__ht_del(a, key) : NULL;
    if (b == NULL) {
        if (a != NULL)
            infinirt__spin_unlock(&a->lock);
        if (f != NULL)
            pool->be.fence_release(pool->be.ctx, f);
        return INFINI_STATUS_BAD_PARAM;
    }
    a->active--;
    a->req_bytes -= b->req;
    a->used -= b->size;
    infinirt__blk_set_state(b, INFINIRT__BLK_LOOSE);
    infinirt__seg_detach(a, s);
    infinirt__spin_unlock(&a->lock);
    /* No cache to protect: wait for the work that may still use the memory.
     * If the wait fails the memory is never given back to the plugin (it
     * could be handed out again while that work runs). */
    if (f != NULL) {
        st = pool->be.fence_wait(pool->be.ctx, f);
        pool->be.fence_release(pool->be.ctx, f);
        if (st != INFINI_STATUS_SUCCESS) {
            INFINIRT__ERROR("%s: waiting for the work using a freed block failed (%s); its %zu bytes are kept "
                            "out of use",
                            pool->be.label, infinirtGetErrorName(st), s->size);
            return INFINI_STATUS_SUCCESS;
        }
    }
    infinirt__seg_destroy(pool, s);
    return INFINI_STATUS_SUCCESS;
}

/* ------------------------------------------------------------- queries */

int infinirt__pool_lookup(const void *ptr, infinirt__ptr_info *info)
{
    uintptr_t p = (uintptr_t)ptr;
    if (p == 0)
        return 0;
    unsigned k = tl_hit_last;
    const lookup_hit *h = &tl_hit[k];
    if (!hit_valid(h, p))
        h = &tl_hit[k ^= 1u];
    if (hit_valid(h, p)) {
        tl_hit_last = k;
        if (info != NULL) {
            infinirt__pool *pool = h->arena->pool;
            info->pool = pool;
            info->owner = pool->be.ctx;
            info->device_type = pool->be.device_type;
            info->device_id = pool->be.device_id;
            info->block_base = (void *)h->start;
            info->block_size = h->req;
            info->offset = p - h->start;
        }
        return 1;
    }
    /* Host memory on the stack or the heap, the other side of most
     * copies: no lock, and the thread's remembered block stays. */
    if (infinirt__dir_outside(p))
        return 0;
    uint_fast64_t gen = atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire);
    infinirt__seg *s = tl_seg;
    infinirt__arena *a = NULL;
    if (s != NULL && (a = atomic_load_explicit(&s->arena, memory_order_acquire)) != NULL) {
        infinirt__spin_lock_read(&a->lock); /* a look-up changes nothing */
        if (atomic_load_explicit(&s->arena, memory_order_relaxed) != a || p - s->base >= s->size) {
            infinirt__spin_unlock(&a->lock);
            a = NULL;
        }
    }
    if (a == NULL && (a = infinirt__dir_lock_owner(p, &s, true)) == NULL)
        return 0;
    infinirt__pool *pool = a->pool;
    uintptr_t start = infinirt__seg_block_start(s, p, pool->gshift);
    infinirt__blk *b = infinirt__ht_get(a, start);
    int found = b != NULL && p - start < b->req;
    if (found) {
        tl_hit_last ^= 1u; /* the entry not used last */
        tl_hit[tl_hit_last] =
            (lookup_hit){start, b->req, s, a, atomic_load_explicit(&a->lock.epoch, memory_order_relaxed), gen};
    }
    if (found && info != NULL) {
        info->pool = pool;
        info->owner = pool->be.ctx;
        info->device_type = pool->be.device_type;
        info->device_id = pool->be.device_id;
        info->block_base = (void *)start;
        info->block_size = b->req;
        info->offset = p - start;
    }
    infinirt__spin_unlock(&a->lock);
    tl_seg = s;
    return found;
}

int infinirt__pool_holds(const void *ptr)
{
    return ptr != NULL && infinirt__dir_pool_of((uintptr_t)ptr) != NULL;
}

void infinirt__pool_stats(infinirt__pool *pool, infinirtAllocatorStats_t *st)
{
    memset(st, 0, sizeof *st);
    infinirt__arena *arenas[INFINIRT__SNAP_MAX];
    size_t peak = 0;
    for (unsigned start = 0, na; (na = infinirt__arenas_snapshot(pool, arenas, INFINIRT__SNAP_MAX, start)) != 0;
         start += na) {
        for (unsigned i = 0; i < na; i++) {
            infinirt__arena *a = arenas[i];
            infinirt__spin_lock(&a->lock);
            st->allocated_bytes += a->req_bytes;
            st->active_blocks += a->active;
            st->alloc_requests += a->requests;
            if (a->peak_req > peak)
                peak = a->peak_req;
            infinirt__spin_unlock(&a->lock);
        }
    }
    /* One arena: its peak is the pool's.  Several: the published total's
     * (see publish() in alloc.c). */
    if (atomic_load(&pool->multi)) {
        size_t pub = atomic_load(&pool->pub_peak);
        peak = pub > peak ? pub : peak;
        peak = st->allocated_bytes > peak ? st->allocated_bytes : peak;
    }
    st->peak_allocated_bytes = peak;
    st->reserved_bytes = atomic_load(&pool->reserved);
    st->peak_reserved_bytes = atomic_load(&pool->peak_reserved);
    st->segments = atomic_load(&pool->segments);
    st->raw_allocs = atomic_load(&pool->raw_allocs);
    st->raw_frees = atomic_load(&pool->raw_frees);
    st->retries = atomic_load(&pool->retries);
    st->oom_count = atomic_load(&pool->oom);
    st->cached_free_bytes = st->reserved_bytes > st->allocated_bytes ? st->reserved_bytes - st->allocated_bytes : 0;
}

void infinirt__pool_reset_peak(infinirt__pool *pool)
{
    infinirt__arena *arenas[INFINIRT__SNAP_MAX];
    size_t total = 0;
    for (unsigned start = 0, na; (na = infinirt__arenas_snapshot(pool, arenas, INFINIRT__SNAP_MAX, start)) != 0;
         start += na) {
        for (unsigned i = 0; i < na; i++) {
            infinirt__arena *a = arenas[i];
            infinirt__spin_lock(&a->lock);
            a->peak_req = a->req_bytes;
            total += a->req_bytes;
            infinirt__spin_unlock(&a->lock);
        }
    }
    /* Several arenas: the published total is the exact current figure. */
    atomic_store(&pool->pub_peak, atomic_load(&pool->multi) ? atomic_load(&pool->pub_total) : total);
    atomic_store(&pool->peak_reserved, atomic_load(&pool->reserved));
}

infiniStatus_t infinirt__pool_trim(infinirt__pool *pool)
{
    if (!pool->cfg.enabled)
        return INFINI_STATUS_SUCCESS;
    infinirt__wait_all(pool);
    infinirt__release_cached(pool);
    return INFINI_STATUS_SUCCESS;
}

void infinirt__pool_stream_retired(infinirt__pool *pool, void *stream)
{
    if (pool == NULL || stream == NULL || stream == INFINIRT__POOL_SYNC || !pool->cfg.enabled)
        return;
    pthread_mutex_lock(&pool->mu);
    for (unsigned i = 1; i < pool->narenas; i++) {
        infinirt__arena *a = pool->arenas[i];
        if (!a->in_use || a->stream != stream)
            continue;
        if (infinirt__arena_merge_into(pool->arenas[0], a) == 0) {
            a->in_use = false;
            /* Thread caches naming this arena for `stream` are stale now. */
            atomic_fetch_add(&infinirt__alloc_gen, 1);
        }
        break;
    }
    pthread_mutex_unlock(&pool->mu);
}
