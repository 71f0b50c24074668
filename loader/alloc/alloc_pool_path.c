/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_pool_path.c - the pool's alloc and free paths, the out-of-memory
 * path, and pass-through mode (every allocation a raw one) beside them.
 * Design: docs/allocator.md.
 */
#define _GNU_SOURCE
#include "alloc_quick.h"
#include "../log.h"

#include <stdlib.h>
#include <string.h>

/* Defined beside the thread caches of the hot paths, which read it on
 * every call (alloc_pool.h). */
atomic_uint_fast64_t infinirt__alloc_gen = 1;

/* The thread's caches of the quick paths (alloc_quick.h). */
INFINIRT__QUICK_TLS infinirt__tl_map_ent infinirt__tl_map[4];
INFINIRT__QUICK_TLS infinirt__arena *infinirt__tl_last;
INFINIRT__QUICK_TLS uint_fast64_t infinirt__tl_last_gen;
INFINIRT__QUICK_TLS uintptr_t infinirt__tl_last_free;
INFINIRT__QUICK_TLS infinirt__tl_own_ent infinirt__tl_own[2];

void infinirt__tl_own_forget(void)
{
    for (int i = 0; i < 2; i++)
        infinirt__tl_own[i] = (infinirt__tl_own_ent){NULL, NULL, 0};
}

/* --------------------------------------------------------------- alloc */

/* Near the backend's capacity - 7/8 of its total memory, or of the bytes
 * reserved when it last refused - the pool stops trading memory for speed. */
static inline bool strict_mode(infinirt__pool *pool, size_t bytes)
{
    size_t cap = atomic_load_explicit(&pool->capacity, memory_order_relaxed);
    return cap != 0 && atomic_load_explicit(&pool->reserved, memory_order_relaxed) + bytes > cap / 8 * 7;
}

/* Whether a free large block of bn granules serves n whole: it wastes at
 * most 1/16 of the request (1/64 near capacity). */
static inline bool whole_fits(size_t bn, size_t n, bool strict)
{
    return bn - n <= n / (strict ? INFINIRT__WASTE_DIV_STRICT : INFINIRT__WASTE_DIV);
}

/* The policy for n granules, from the bins only (arena locked).  A small
 * request splits any small block.  A large block serves a large request
 * whole when that wastes little (whole_fits); otherwise it is split only
 * when no larger than max_split_size or - away from capacity - when over a
 * third of the arena's memory lies free (the cache is then too big to keep
 * growing). */
static infinirt__blk *from_bins(infinirt__arena *a, size_t n, bool small)
{
    infinirt__pool *pool = a->pool;
    if (small) {
        infinirt__blk *b = infinirt__bins_find(&a->small, n, pool->gshift);
        return b != NULL ? infinirt__blk_take(a, b, n, true) : NULL;
    }
    infinirt__blk *b = infinirt__bins_find(&a->large, n, pool->gshift);
    if (b == NULL)
        return NULL;
    bool strict = strict_mode(pool, n << pool->gshift);
    if (whole_fits(b->size >> pool->gshift, n, strict))
        return infinirt__blk_take(a, b, n, false);
    if (b->size <= pool->max_split || (!strict && a->reserved - a->used > a->reserved / 3))
        return infinirt__blk_take(a, b, n, true);
    return NULL;
}

static void log_oom(infinirt__pool *pool, size_t size)
{
    infinirt__arena_walk w = {.pool = pool};
    size_t allocated = 0, largest = 0;
    for (infinirt__arena *a; (a = infinirt__arena_next(&w)) != NULL;) {
        infinirt__spin_lock(&a->lock);
        allocated += a->req_bytes;
        size_t l = infinirt__bins_largest(&a->small), m = infinirt__bins_largest(&a->large);
        l = l > m ? l : m;
        largest = l > largest ? l : largest;
        infinirt__spin_unlock(&a->lock);
    }
    INFINIRT__WARN("%s: out of memory: requested %zu bytes; allocated %zu, reserved %zu, largest free block %zu "
                   "bytes (after releasing the cache and retrying)",
                   pool->be.label, size, allocated, atomic_load(&pool->reserved), largest);
}

/* The backend refused `refused` more bytes while the pool held `reserved`:
 * it has room for less than their sum, and strict mode starts below that.
 * Only the lowest bound is kept, so a request far beyond the device (which
 * teaches nothing about it) never lowers the capacity that sizes the
 * segments of every later allocation. */
static void learn_capacity(infinirt__pool *pool, size_t refused)
{
    size_t r = atomic_load(&pool->reserved);
    size_t bound = refused > SIZE_MAX - r ? SIZE_MAX : r + refused;
    size_t cap = atomic_load(&pool->capacity);
    while ((cap == 0 || bound < cap) && !atomic_compare_exchange_weak(&pool->capacity, &cap, bound))
        ;
}

/* A segment granted beyond the learned capacity proves it stale (the memory
 * other users held came back): return to what the device reports. */
static void forget_stale_capacity(infinirt__pool *pool)
{
    size_t cap = atomic_load_explicit(&pool->capacity, memory_order_relaxed);
    if (cap != pool->be.total_memory && atomic_load(&pool->reserved) > cap)
        atomic_store(&pool->capacity, pool->be.total_memory);
}

/* The last resort's block, any that fits, in arena a (locked). */
static infinirt__blk *last_resort(infinirt__arena *a, size_t n, bool small)
{
    unsigned gshift = a->gshift;
    infinirt__pending_poll(a);
    infinirt__quick_flush(a);
    infinirt__blk *b = infinirt__bins_find(small ? &a->small : &a->large, n, gshift);
    if (b == NULL)
        b = infinirt__bins_find(small ? &a->large : &a->small, n, gshift);
    return b != NULL ? infinirt__blk_take(a, b, n, true) : NULL;
}

/* The last resort in the other arenas of a's stream (a unlocked): the
 * shared one and the threads' own (alloc_tcache.c), whose free blocks an
 * allocation on the stream may take at once.  The arena found is returned
 * locked, holding the block in *out; NULL if none had one. */
static infinirt__arena *last_resort_elsewhere(infinirt__arena *a, void *stream, size_t n, bool small,
                                              infinirt__blk **out)
{
    infinirt__arena_walk w = {.pool = a->pool};
    for (infinirt__arena *x; (x = infinirt__arena_next(&w)) != NULL;) {
        if (x == a)
            continue;
        infinirt__spin_lock(&x->lock);
        /* (A spare arena's key may still read as the stream: it holds no
         * block.) */
        if (x->stream == stream && (*out = last_resort(x, n, small)) != NULL)
            return x;
        infinirt__spin_unlock(&x->lock);
    }
    return NULL;
}

/* alloc_slow's body (*ap locked; returns an arena locked, in *ap). */
static infiniStatus_t alloc_slow_in(infinirt__arena **ap, size_t n, size_t size, bool small, infinirt__blk **out)
{
    infinirt__arena *a = *ap;
    infinirt__pool *pool = a->pool;
    size_t got = infinirt__pending_poll(a);
    if (a->quick.bytes != 0) {
        infinirt__quick_flush(a);
        got++;
    }
    if (got && (*out = from_bins(a, n, small)) != NULL)
        return INFINI_STATUS_SUCCESS;
    infinirt__spin_unlock(&a->lock);

    infinirt__seg *s = NULL;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;
    size_t exact = n << pool->gshift;
    if (atomic_load_explicit(&pool->multi, memory_order_relaxed))
        s = infinirt__steal(pool, a, n, !small);
    if (s == NULL) {
        size_t grow = small ? pool->small_seg : exact;
        infinirt__arena_shrink(a, grow);
        st = infinirt__raw_segment(pool, grow, !small, &s);
        if (st == INFINI_STATUS_OUT_OF_MEMORY) {
            /* Give back what the cache holds and ask for exactly what is
             * needed; then wait for the work in flight and try once more. */
            atomic_fetch_add(&pool->retries, 1);
            if (pool->be.note != NULL)
                pool->be.note(pool, INFINIRT__POOL_NOTE_OOM_RETRY, grow, NULL);
            learn_capacity(pool, grow);
            infinirt__release_cached(pool);
            st = infinirt__raw_segment(pool, exact, !small, &s);
            if (st == INFINI_STATUS_OUT_OF_MEMORY && infinirt__wait_all(pool)) {
                infinirt__release_cached(pool);
                st = infinirt__raw_segment(pool, exact, !small, &s);
            }
        }
    }
    if (s != NULL)
        forget_stale_capacity(pool);
    infinirt__spin_lock(&a->lock);
    if (s != NULL) {
        infinirt__blk *b = infinirt__seg_attach(a, s);
        bool split = small || !whole_fits(b->size >> pool->gshift, n, strict_mode(pool, 0));
        *out = infinirt__blk_take(a, b, n, split);
        return INFINI_STATUS_SUCCESS;
    }
    if (st != INFINI_STATUS_OUT_OF_MEMORY)
        return st;
    /* Last resort: any block that fits, whatever the policy or its bins,
     * here or in another arena of the same stream. */
    if ((*out = last_resort(a, n, small)) != NULL)
        return INFINI_STATUS_SUCCESS;
    void *stream = a->stream;
    infinirt__spin_unlock(&a->lock);
    infinirt__arena *x = last_resort_elsewhere(a, stream, n, small, out);
    if (x != NULL) {
        *ap = x;
        return INFINI_STATUS_SUCCESS;
    }
    atomic_fetch_add(&pool->oom, 1);
    log_oom(pool, size);
    infinirt__spin_lock(&a->lock);
    return INFINI_STATUS_OUT_OF_MEMORY;
}

/* A miss in the bins (arena a locked): completed and deferred frees
 * first, then an empty segment of another arena, then a new segment, then
 * the out-of-memory path.  Returns the arena that holds the block (a, or
 * another of its stream's), locked, the status in *st. */
static __attribute__((noinline)) infinirt__arena *alloc_slow(infinirt__arena *a, size_t n, size_t size, bool small,
                                                             infinirt__blk **out, infiniStatus_t *st)
{
    *st = alloc_slow_in(&a, n, size, small, out);
    return a;
}

/* A request of 0 or more than max_req bytes, refused before anything is
 * released or counted as a retry: BAD_PARAM beyond the largest single
 * allocation, OUT_OF_MEMORY beyond the device's memory (what cudaMalloc
 * answers for a request no device could hold). */
static infiniStatus_t bad_size(infinirt__pool *pool, size_t size)
{
    if (size == 0)
        return INFINI_STATUS_BAD_PARAM;
    size_t max = infinirt__max_single(pool);
    if (size > max) {
        INFINIRT__WARN("%s: cannot allocate %zu bytes: larger than the device's maximum single allocation "
                       "(%zu bytes)",
                       pool->be.label, size, max);
        return INFINI_STATUS_BAD_PARAM;
    }
    atomic_fetch_add(&pool->oom, 1);
    INFINIRT__WARN("%s: out of memory: requested %zu bytes, more than the device's %zu bytes of memory",
                   pool->be.label, size, pool->be.total_memory);
    return INFINI_STATUS_OUT_OF_MEMORY;
}

/* Pass-through mode (the cache off): every allocation is a raw allocation
 * of exactly `size` bytes (so that sanitizers see its real bounds), tracked
 * like any block: lookups, double frees and statistics work as with the
 * cache. */
static infiniStatus_t passthrough_alloc(infinirt__pool *pool, size_t size, void **out)
{
    infinirt__arena *a = pool->arenas[0];
    infinirt__seg *s;
    infiniStatus_t st = infinirt__raw_segment(pool, size, true, &s);
    if (st != INFINI_STATUS_SUCCESS) {
        if (st == INFINI_STATUS_OUT_OF_MEMORY) {
            atomic_fetch_add(&pool->oom, 1);
            log_oom(pool, size);
        }
        return st;
    }
    infinirt__spin_lock(&a->lock);
    infinirt__blk *b = infinirt__seg_attach(a, s);
    infinirt__bins_remove(&a->large, b, pool->gshift);
    infinirt__empty_drop(a, s);
    infinirt__blk_set_state(b, INFINIRT__BLK_USED);
    b->req = size;
    if (infinirt__ht_put(&a->blocks, b) != 0) {
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

/* An allocation whose block is not in a's quick list, or whose table
 * entry needs ht_put's slow part (a locked; gen: the generation read
 * before a was found).  Out of line: the fast paths tail-call it. */
__attribute__((noinline)) infiniStatus_t infinirt__pool_alloc_locked(infinirt__arena *a, size_t size, void *stream,
                                                                     uint_fast64_t gen, void **out)
{
    infinirt__pool *pool = a->pool;
    size_t n = (size + pool->g - 1) >> pool->gshift;
    infinirt__blk *b;
    if (n <= pool->quick_max && (b = a->quick.list[n]) != NULL) {
        infinirt__quick_unlink(&a->quick, b, n);
    } else {
        bool small = n <= (pool->small_max >> pool->gshift);
        b = from_bins(a, n, small);
        if (b == NULL) {
            infiniStatus_t st;
            a = alloc_slow(a, n, size, small, &b, &st);
            if (st != INFINI_STATUS_SUCCESS) {
                infinirt__spin_unlock(&a->lock);
                return st;
            }
        }
    }
    infinirt__blk_set_state(b, INFINIRT__BLK_USED);
    b->req = size;
    if (__builtin_expect(infinirt__ht_put(&a->blocks, b) != 0, 0)) {
        infinirt__blk_release(a, b);
        infinirt__spin_unlock(&a->lock);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    infinirt__alloc_peak_due(pool, infinirt__alloc_done(pool, a, b, size, stream, gen, out));
    return INFINI_STATUS_SUCCESS;
}

/* Every allocation the fast path (infinirt__pool_alloc_quick) does not
 * finish itself, but those it leaves with the arena locked. */
__attribute__((noinline)) infiniStatus_t infinirt__pool_alloc_any(infinirt__pool *pool, size_t size, void *stream,
                                                                  void **out)
{
    if (__builtin_expect(size - 1 >= pool->max_req, 0))
        return bad_size(pool, size);
    if (__builtin_expect(!pool->cfg.enabled, 0))
        return passthrough_alloc(pool, size, out);
    size_t n = (size + pool->g - 1) >> pool->gshift;
    uint_fast64_t gen = atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire);
    infinirt__arena *a = infinirt__arena_of(pool, stream, n, gen, false);
    if (__builtin_expect(a == NULL, 0))
        return INFINI_STATUS_OUT_OF_MEMORY;
    infinirt__spin_lock(&a->lock);
    return infinirt__pool_alloc_locked(a, size, stream, gen, out);
}

/* The quick part (infinirt__pool_alloc_quick, inline), then whichever
 * out-of-line part it left the allocation to.  infinirtMallocAsync runs the
 * same quick part itself (loader/memory.c). */
infiniStatus_t infinirt__pool_alloc(infinirt__pool *pool, size_t size, void *stream, void **out)
{
    infinirt__arena *a;
    uint_fast64_t gen;
    switch (infinirt__pool_alloc_quick(pool, size, stream, out, &a, &gen)) {
    case INFINIRT__QUICK_DONE:
        return INFINI_STATUS_SUCCESS;
    case INFINIRT__QUICK_PEAK:
        infinirt__alloc_peak_due(pool, true);
        return INFINI_STATUS_SUCCESS;
    case INFINIRT__QUICK_LOCKED:
        return infinirt__pool_alloc_locked(a, size, stream, gen, out);
    default:
        return infinirt__pool_alloc_any(pool, size, stream, out);
    }
}

/* --------------------------------------------------------------- free */

/* A free is ordered on `stream` or, when `sync`, on every stream (stream
 * NULL then): the fence it needs. */
static inline infiniStatus_t fence_for(infinirt__pool *pool, void *stream, bool sync, infinirt__fence **f)
{
    return sync ? infinirt__take_fence_all(pool, f) : infinirt__take_fence(pool, stream, f);
}

/* free_done for a block the quick lists do not take: to the bins, and its
 * segment given back when the settings say so. */
static __attribute__((noinline)) infinirt__seg *free_release(infinirt__arena *a, infinirt__blk *b)
{
    infinirt__pool *pool = a->pool;
    infinirt__seg *s = infinirt__blk_seg(b);
    a->used -= b->size;
    infinirt__blk_release(a, b);
    if ((pool->cfg.release_on_free ||
         (pool->cfg.max_cached_bytes != 0 && a->reserved - a->used > pool->cfg.max_cached_bytes)) &&
        infinirt__seg_empty(s) && infinirt__seg_fence_done(a, s)) {
        infinirt__seg_detach(a, s);
        return s;
    }
    return NULL;
}

/* The end of a free, once nothing is left to wait for: block b (state USED
 * or PENDING, in no table or queue) goes to the quick list or the bins of
 * arena a (locked).  Returns a segment to give back once unlocked, or NULL.
 * Inline: the quick list is where most small frees end. */
static inline __attribute__((always_inline)) infinirt__seg *free_done(infinirt__arena *a, infinirt__blk *b)
{
    if (infinirt__free_quick_takes(a, b)) {
        infinirt__free_quick_push(a, b);
        return NULL;
    }
    return free_release(a, b);
}

/* Block b (just out of the hash) is freed on `stream` (or synchronously)
 * with fence f (arena locked).  Returns a segment to give back once
 * unlocked, or NULL.  When the block can be neither queued behind f nor
 * released, *wait is set to f: the caller unlocks and calls free_waited. */
static infinirt__seg *free_locked(infinirt__arena *a, infinirt__blk *b, void *stream, bool sync, infinirt__fence *f,
                                  infinirt__fence **wait)
{
    const infinirt__pool_backend *be = &a->pool->be;
    infinirt__seg *s = infinirt__blk_seg(b);
    infinirt__account_free(a, b->req);
    if (!sync && stream == a->stream) {
        /* Reusable at once on this stream.  Other arenas (steal) and the
         * backend (release) need the segment's latest same-stream fence,
         * which covers every earlier one. */
        if (f != NULL || (a->nfenced != 0 && s->fence != NULL)) {
            if (s->fence != NULL) {
                be->fence_release(be->ctx, s->fence);
                a->nfenced--;
            }
            if (f != NULL)
                a->nfenced++;
            s->fence = f;
        }
    } else if (f != NULL) {
        /* This free waits anyway: retiring completed queue heads now keeps
         * the queues short, at one query each. */
        if (a->npq != 0)
            infinirt__pending_poll(a);
        if (__builtin_expect(infinirt__pending_add(a, b, stream, sync, f) == 0, 1))
            return NULL;
        /* No memory to queue it: the caller waits, with no lock held.
         * Meanwhile the block is PENDING in no queue: no neighbour merges
         * with it and a stream retire moving its segment leaves it be. */
        infinirt__blk_set_state(b, INFINIRT__BLK_PENDING);
        b->fence = NULL;
        *wait = f;
        return NULL;
    } else if (sync && a->nfenced != 0 && s->fence != NULL) {
        /* Nothing in flight on any stream: the segment's fence is complete. */
        be->fence_release(be->ctx, s->fence);
        s->fence = NULL;
        a->nfenced--;
    }
    return free_done(a, b);
}

/* The rest of a free that free_locked could not queue (called with no lock
 * held): wait for fence f, then release block b into the arena that owns
 * its segment now (a stream retire may have moved it meanwhile).  If the
 * wait fails the block stays PENDING in no queue: never handed out again
 * rather than handed out early. */
static void free_waited(infinirt__pool *pool, infinirt__blk *b, infinirt__fence *f)
{
    const infinirt__pool_backend *be = &pool->be;
    INFINIRT__ALLOC_UNLOCKED("fence_wait");
    infiniStatus_t st = be->fence_wait(be->ctx, f);
    be->fence_release(be->ctx, f);
    if (st != INFINI_STATUS_SUCCESS) {
        INFINIRT__ERROR("%s: a freed block of %zu bytes could not be queued or waited for (%s); it is "
                        "kept out of use",
                        be->label, b->size, be->status_name(st));
        return;
    }
    infinirt__seg *s;
    /* Never NULL: the segment holds this block, so it is not empty and
     * stays attached to some arena of the pool. */
    infinirt__arena *a = infinirt__dir_lock_owner(b->addr, &s, false);
    infinirt__seg *rel = free_done(a, b);
    infinirt__spin_unlock(&a->lock);
    if (rel != NULL)
        infinirt__seg_destroy(pool, rel);
}

/* The rest of a free that takes or meets a fence (a locked, b out of its
 * hash): free_locked, then what it left to do once a is unlocked. */
static __attribute__((noinline)) infiniStatus_t
free_fenced(infinirt__pool *pool, infinirt__arena *a, infinirt__blk *b, void *stream, bool sync, infinirt__fence *f)
{
    infinirt__fence *wait = NULL;
    infinirt__seg *rel = free_locked(a, b, stream, sync, f, &wait);
    infinirt__spin_unlock(&a->lock);
    if (rel != NULL)
        infinirt__seg_destroy(pool, rel);
    if (__builtin_expect(wait != NULL, 0))
        free_waited(pool, b, wait);
    return INFINI_STATUS_SUCCESS;
}

/* What free_locked does for a block that spans its large segment (hash
 * entry flagged HW_WHOLE) when no fence is involved - no fence taken, none
 * held by any segment of the arena - from the hash entry alone: the
 * block's descriptor is written, never read, so a free costs the hash
 * bucket's cache miss and not a second, dependent one on the descriptor
 * (with thousands of live blocks both are out of the cache). */
static inline void free_whole(infinirt__arena *a, infinirt__blk *b, size_t req, size_t size, unsigned flags)
{
    infinirt__account_free(a, req);
    a->used -= size;
    /* The head of its segment (offset 0 of the segment struct), large, no
     * bitmap: the whole of segst is known. */
    b->segst = (uintptr_t)b | INFINIRT__BLK_LARGE | INFINIRT__BLK_FREE |
               ((flags & INFINIRT__HW_STACKED) ? INFINIRT__BLK_STACKED : 0);
    infinirt__bins_insert_n(&a->large, b, size >> a->pool->gshift);
    if (!(flags & INFINIRT__HW_STACKED))
        infinirt__empty_push(a, (infinirt__seg *)b);
}

/* Pass-through mode's free: the block's segment goes back to the backend
 * once the work that may use it is done. */
static infiniStatus_t passthrough_free(infinirt__pool *pool, uintptr_t key, void *stream, bool sync)
{
    /* The fence first: when none can be had the free fails unchanged. */
    infinirt__fence *f;
    infiniStatus_t st = fence_for(pool, stream, sync, &f);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    infinirt__seg *s;
    infinirt__arena *a = infinirt__dir_lock_owner(key, &s, false);
    infinirt__blk *b = a != NULL ? infinirt__ht_del(&a->blocks, key) : NULL;
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
        INFINIRT__ALLOC_UNLOCKED("fence_wait");
        st = pool->be.fence_wait(pool->be.ctx, f);
        pool->be.fence_release(pool->be.ctx, f);
        if (st != INFINI_STATUS_SUCCESS) {
            INFINIRT__ERROR("%s: waiting for the work using a freed block failed (%s); its %zu bytes are kept "
                            "out of use",
                            pool->be.label, pool->be.status_name(st), s->size);
            return INFINI_STATUS_SUCCESS;
        }
    }
    infinirt__seg_destroy(pool, s);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t free_slow(uintptr_t key, void *stream, bool sync, infinirt__pool_want want)
{
    for (;;) {
        infinirt__pool *pool = infinirt__dir_pool_of(key);
        if (pool == NULL || !infinirt__pool_wanted(want, pool))
            return INFINI_STATUS_BAD_PARAM;
        if (!pool->cfg.enabled)
            return passthrough_free(pool, key, stream, sync);
        infinirt__fence *f;
        infiniStatus_t st = fence_for(pool, stream, sync, &f);
        if (st != INFINI_STATUS_SUCCESS)
            return st;
        infinirt__seg *s;
        infinirt__arena *a = infinirt__dir_lock_owner(key, &s, false);
        infinirt__blk *b = NULL;
        if (a != NULL && a->pool == pool)
            b = infinirt__ht_del(&a->blocks, key);
        if (b == NULL) {
            bool moved = a != NULL && a->pool != pool; /* the range changed hands meanwhile */
            if (a != NULL)
                infinirt__spin_unlock(&a->lock);
            if (f != NULL)
                pool->be.fence_release(pool->be.ctx, f);
            if (moved)
                continue;
            return INFINI_STATUS_BAD_PARAM;
        }
        infinirt__fence *wait = NULL;
        infinirt__seg *rel = free_locked(a, b, stream, sync, f, &wait);
        infinirt__spin_unlock(&a->lock);
        infinirt__tl_last = a;
        infinirt__tl_last_gen = atomic_load_explicit(&infinirt__alloc_gen, memory_order_relaxed);
        if (rel != NULL)
            infinirt__seg_destroy(pool, rel);
        if (wait != NULL)
            free_waited(pool, b, wait);
        return INFINI_STATUS_SUCCESS;
    }
}

/* A free's part once arena a (the thread's last, of pool) is locked, with
 * fence f taken: the block of key out of a's table and freed, or, when a
 * holds none, free_slow. */
static inline __attribute__((always_inline)) infiniStatus_t free_in(infinirt__pool *pool, infinirt__arena *a,
                                                                    uintptr_t key, void *stream, bool sync,
                                                                    infinirt__pool_want want, infinirt__fence *f)
{
    size_t req, size;
    unsigned flags;
    infinirt__blk *b = infinirt__ht_take(&a->blocks, key, &req, &size, &flags);
    if ((flags & INFINIRT__HW_WHOLE) && f == NULL && a->nfenced == 0 && pool->keep_empty) {
        free_whole(a, b, req, size, flags);
        infinirt__spin_unlock(&a->lock);
        return INFINI_STATUS_SUCCESS;
    }
    if (__builtin_expect(b != NULL, 1)) {
        infinirt__seg *rel;
        if (f == NULL && a->nfenced == 0) {
            /* What free_locked comes to with no fence taken or
             * held in the arena, without the call (nothing to
             * wait for). */
            infinirt__account_free(a, req);
            rel = free_done(a, b);
            infinirt__spin_unlock(&a->lock);
            if (__builtin_expect(rel != NULL, 0))
                infinirt__seg_destroy(pool, rel);
            return INFINI_STATUS_SUCCESS;
        }
        return free_fenced(pool, a, b, stream, sync, f);
    }
    infinirt__spin_unlock(&a->lock);
    if (f != NULL)
        pool->be.fence_release(pool->be.ctx, f);
    return free_slow(key, stream, sync, want);
}

/* A free's part once arena a (the thread's last, of pool, which `want`
 * accepts) is found: its fence, then free_in. */
static inline __attribute__((always_inline)) infiniStatus_t
free_at(infinirt__pool *pool, infinirt__arena *a, uintptr_t key, void *stream, bool sync, infinirt__pool_want want)
{
    infinirt__fence *f;
    infiniStatus_t st = fence_for(pool, stream, sync, &f);
    if (__builtin_expect(st != INFINI_STATUS_SUCCESS, 0))
        return free_slow(key, stream, sync, want); /* ptr may be another pool's: ask its own */
    infinirt__spin_lock(&a->lock);
    return free_in(pool, a, key, stream, sync, want, f);
}

/* Both frees, the tests of `sync` folded away in each. */
static inline __attribute__((always_inline)) infiniStatus_t pool_free(void *ptr, void *stream, bool sync,
                                                                      infinirt__pool_want want)
{
    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    uintptr_t key = (uintptr_t)ptr;
    infinirt__arena *a = infinirt__tl_last;
    if (a != NULL && infinirt__tl_last_gen == atomic_load_explicit(&infinirt__alloc_gen, memory_order_relaxed)) {
        infinirt__pool *pool = a->pool;
        if (infinirt__pool_wanted(want, pool) && pool->cfg.enabled) {
            /* Start fetching the hash bucket while the fence is taken. */
            infinirt__ht_prefetch(&a->blocks, key);
            return free_at(pool, a, key, stream, sync, want);
        }
    }
    return free_slow(key, stream, sync, want);
}

/* The quick path's arena is the thread's last, of a pool `want` accepts.
 * As in pool_free, the hash bucket is fetched while the fence is taken. */
__attribute__((noinline)) infiniStatus_t infinirt__pool_free_arena(infinirt__arena *a, void *ptr, void *stream,
                                                                   infinirt__pool_want want)
{
    infinirt__ht_prefetch(&a->blocks, (uintptr_t)ptr);
    return free_at(a->pool, a, (uintptr_t)ptr, stream, false, want);
}

/* The quick path's arena is the thread's last, of a pool `want` accepts,
 * and no fence was taken. */
__attribute__((noinline)) infiniStatus_t infinirt__pool_free_locked(infinirt__arena *a, void *ptr, void *stream,
                                                                    infinirt__pool_want want)
{
    return free_in(a->pool, a, (uintptr_t)ptr, stream, false, want, NULL);
}

infiniStatus_t infinirt__pool_free(void *ptr, void *stream, infinirt__pool_want want)
{
    return pool_free(ptr, stream, false, want);
}

infiniStatus_t infinirt__pool_free_sync(void *ptr, infinirt__pool_want want)
{
    return pool_free(ptr, NULL, true, want);
}
