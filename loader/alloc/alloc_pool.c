/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_pool.c - pools (alloc_pool.h): create and destroy, the arena table,
 * raw segments from the backend, waiting for fences, releasing and stealing cached
 * segments, statistics, trim and stream retirement.  The alloc and free
 * paths are in alloc_pool_path.c.
 */
#define _GNU_SOURCE
#include "alloc_pool.h"
#include "../log.h"

#include <stdlib.h>
#include <string.h>

void infinirt__alloc_config_default(infinirt__alloc_config *cfg)
{
    cfg->enabled = 1;
    cfg->granularity = 512;
    cfg->max_cached_bytes = 0;
    cfg->max_split_size = (size_t)64 << 10;
    cfg->release_on_free = 0;
}

/* ---------------------------------------------------------- arena table */

/* The pool goes multi-arena (pool->mu held): from now on every arena
 * publishes its changes.  `multi` is set first, so a call that takes an
 * arena's lock after this publishes itself; what each arena did before is
 * published here, with the one-arena peak as the starting peak. */
static void start_multi(infinirt__pool *pool)
{
    atomic_store(&pool->multi, 1);
    size_t peak = 0;
    for (unsigned i = 0; i < pool->narenas; i++) {
        infinirt__arena *x = pool->arenas[i];
        infinirt__spin_lock(&x->lock);
        (void)infinirt__publish(pool, x); /* the peak is raised below */
        if (x->peak_req > peak)
            peak = x->peak_req;
        infinirt__spin_unlock(&x->lock);
    }
    infinirt__raise_peak(pool, peak);
}

/* Take the slack of every arena keeping it out of the pool's total
 * (pool->mu held; those arenas locked together, so their allocated bytes
 * hold still while the total is read; shared ones stop keeping slack).
 * Returns the total then: the exact sum of the arenas' allocated bytes,
 * each other shared arena's as it last published it. */
static size_t tighten_locked(infinirt__pool *pool)
{
    size_t slack = 0;
    for (unsigned i = 0; i < pool->narenas; i++) {
        infinirt__arena *x = pool->arenas[i];
        /* A shared arena starts keeping slack under its own lock only:
         * the flag read here is a hint, read again once locked. */
        x->tight = x->owner != NULL || atomic_load_explicit(&x->slack, memory_order_relaxed);
        if (!x->tight)
            continue;
        /* Read locks: nothing a remembered lookup depends on changes. */
        infinirt__spin_lock_read(&x->lock);
        if (infinirt__keeps_slack(x))
            slack += infinirt__slack_take(pool, x);
    }
    size_t total = atomic_fetch_sub(&pool->pub_total, slack) - slack;
    for (unsigned i = 0; i < pool->narenas; i++) {
        if (pool->arenas[i]->tight)
            infinirt__spin_unlock(&pool->arenas[i]->lock);
        pool->arenas[i]->tight = false;
    }
    return total;
}

void infinirt__peak_event(infinirt__pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(1);
    infinirt__raise_peak(pool, tighten_locked(pool));
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&pool->mu);
}

/* The arena of `stream` shared by every thread (owner NULL), or a new
 * arena of `owner`'s own (pool->mu held): an arena out of use is taken
 * again before a new one is made.  NULL without host memory. */
static infinirt__arena *arena_locked(infinirt__pool *pool, void *stream, void *owner)
{
    infinirt__arena *a = NULL, *spare = NULL;
    unsigned in_use = 0;
    for (unsigned i = 0; i < pool->narenas && a == NULL; i++) {
        infinirt__arena *x = pool->arenas[i];
        if (!x->in_use)
            spare = spare ? spare : x;
        else if (owner == NULL && x->stream == stream && x->owner == NULL)
            a = x;
        else
            in_use++;
    }
    if (a == NULL) {
        a = spare;
        if (a == NULL && pool->narenas == pool->caparenas) {
            infinirt__arena **n = realloc(pool->arenas, 2 * pool->caparenas * sizeof *n);
            if (n != NULL) {
                pool->arenas = n;
                pool->caparenas *= 2;
            }
        }
        if (a == NULL && pool->narenas < pool->caparenas &&
            (a = infinirt__arena_new(pool, &pool->be, pool->gshift)) != NULL)
            pool->arenas[pool->narenas++] = a;
        if (a != NULL) {
            infinirt__spin_lock(&a->lock);
            a->stream = stream;
            a->in_use = true;
            a->owner = owner;
            infinirt__spin_unlock(&a->lock);
            if (owner != NULL)
                atomic_fetch_add(&pool->nowned, 1);
            if (in_use > 0 && !atomic_load(&pool->multi))
                start_multi(pool);
        }
    }
    return a;
}

infinirt__arena *infinirt__pool_arena(infinirt__pool *pool, void *stream)
{
    pthread_mutex_lock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(1);
    infinirt__arena *a = arena_locked(pool, stream, NULL);
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&pool->mu);
    return a;
}

infinirt__arena *infinirt__pool_arena_owned(infinirt__pool *pool, void *stream, void *owner)
{
    pthread_mutex_lock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(1);
    infinirt__arena *a = arena_locked(pool, stream, owner);
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&pool->mu);
    return a;
}

bool infinirt__pool_arena_disown(infinirt__pool *pool, infinirt__arena *a)
{
    pthread_mutex_lock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(1);
    /* The stream's shared arena takes everything, fences included: blocks
     * freed on the stream stay reusable at once by allocations on it only,
     * and by anyone else only once their fences have completed, as they
     * were in the thread's arena. */
    /* Its slack out of the total first: the arena it joins (or it, staying
     * as a shared arena) publishes every change. */
    infinirt__spin_lock_read(&a->lock);
    atomic_fetch_sub(&pool->pub_total, a->published - a->req_bytes);
    a->published = a->req_bytes;
    infinirt__spin_unlock(&a->lock);
    infinirt__arena *to = arena_locked(pool, a->stream, NULL);
    bool merged = to != NULL && infinirt__arena_merge_into(to, a, true) == 0;
    /* No generation to bump: no thread's map of (pool, stream) names an
     * owned arena, a free that tries it as the thread's last arena finds
     * its block only where it is, and a remembered lookup sees its
     * segment's arena change. */
    if (merged)
        a->in_use = false;
    /* Not merged (no host memory): the arena stays, as one more shared
     * arena of its stream - nothing is lost, nothing reused early. */
    infinirt__spin_lock_read(&a->lock);
    a->owner = NULL;
    infinirt__spin_unlock(&a->lock);
    atomic_fetch_sub(&pool->nowned, 1);
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&pool->mu);
    return merged;
}

infinirt__arena *infinirt__arena_next(infinirt__arena_walk *w)
{
    if (w->i == w->n) {
        infinirt__pool *pool = w->pool;
        w->start += w->n;
        pthread_mutex_lock(&pool->mu);
        INFINIRT__ALLOC_LOCKS(1);
        unsigned n = w->start < pool->narenas ? pool->narenas - w->start : 0;
        w->n = n < INFINIRT__SNAP_MAX ? n : INFINIRT__SNAP_MAX;
        memcpy(w->chunk, pool->arenas + w->start, w->n * sizeof *w->chunk);
        INFINIRT__ALLOC_LOCKS(-1);
        pthread_mutex_unlock(&pool->mu);
        w->i = 0;
        if (w->n == 0)
            return NULL;
    }
    return w->chunk[w->i++];
}

/* ---------------------------------------------------------------- pool */

infiniStatus_t infinirt__pool_create(const infinirt__pool_backend *backend, const infinirt__alloc_config *cfg,
                                     infinirt__pool **out)
{
    if (backend == NULL || out == NULL || backend->raw_alloc == NULL || backend->raw_free == NULL)
        return INFINI_STATUS_BAD_PARAM;
    infinirt__pool *pool = infinirt__line_calloc(sizeof *pool);
    if (pool == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    pool->be = *backend;
    pool->be.label[sizeof pool->be.label - 1] = '\0';
    if (cfg != NULL)
        pool->cfg = *cfg;
    else
        infinirt__alloc_config_default(&pool->cfg);
    infinirt__pool_backend *be = &pool->be;
    if (be->fence_take != NULL && (be->fence_take_all == NULL || be->fence_query == NULL || be->fence_wait == NULL ||
                                   be->fence_release == NULL)) {
        INFINIRT__WARN("%s: incomplete fence callbacks; stream order is not tracked", be->label);
        be->fence_take = NULL;
    }
    size_t g = pool->cfg.granularity;
    if (g == 0 || (g & (g - 1)) != 0 || g > ((size_t)1 << 30)) {
        INFINIRT__WARN("%s: granularity %zu is not a power of two up to 1G; using 512", be->label, g);
        g = 512;
    }
    pool->g = g;
    pool->gshift = (unsigned)__builtin_ctzll((unsigned long long)g);
    size_t max = infinirt__max_single(pool);
    pool->small_seg = INFINIRT__SMALL_SEG < max ? INFINIRT__SMALL_SEG : max;
    /* A request beyond the device's memory fails at once (bad_size), with
     * nothing released or learned. */
    if (be->total_memory != 0 && be->total_memory < max)
        max = be->total_memory;
    pool->max_req = max;
    pool->small_max = INFINIRT__SMALL_MAX < pool->small_seg / 4 ? INFINIRT__SMALL_MAX : pool->small_seg / 4;
    pool->small_max &= ~(g - 1);
    /* Thread arenas for every small request (docs/allocator.md). */
    pool->own_max = pool->small_max >> pool->gshift;
    atomic_init(&pool->capacity, be->total_memory);
    pool->max_split = pool->cfg.max_split_size ? pool->cfg.max_split_size : SIZE_MAX;
    /* Deferred coalescing would hide empty segments from the settings that
     * give them back as soon as they empty. */
    if (!pool->cfg.release_on_free && pool->cfg.max_cached_bytes == 0) {
        size_t q = pool->small_max >> pool->gshift;
        pool->quick_max = q < INFINIRT__QUICK_MAX ? (unsigned)q : INFINIRT__QUICK_MAX;
        pool->keep_empty = true;
    }
    pthread_mutex_init(&pool->mu, NULL);
    pool->caparenas = 4;
    pool->arenas = calloc(pool->caparenas, sizeof *pool->arenas);
    infinirt__arena *a = pool->arenas ? infinirt__arena_new(pool, &pool->be, pool->gshift) : NULL;
    if (a == NULL) {
        free(pool->arenas);
        pthread_mutex_destroy(&pool->mu);
        free(pool);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    /* Arena 0: synchronous allocations (alloc.h, INFINIRT__POOL_SYNC), the
     * blocks of retired streams, and pass-through. */
    a->stream = INFINIRT__POOL_SYNC;
    a->in_use = true;
    pool->arenas[pool->narenas++] = a;
    *out = pool;
    return INFINI_STATUS_SUCCESS;
}

void infinirt__pool_destroy(infinirt__pool *pool)
{
    if (pool == NULL)
        return;
    /* No thread may find its own arena here any more, nor give it back
     * when it exits. */
    infinirt__tcache_pool_gone(pool);
    const infinirt__pool_backend *be = &pool->be;
    infinirt__wait_all(pool); /* every fence held is complete after this */
    for (unsigned i = 0; i < pool->narenas; i++) {
        infinirt__arena *a = pool->arenas[i];
        infinirt__spin_lock(&a->lock);
        for (unsigned q = 0; q < a->npq; q++)
            for (infinirt__blk *b = a->pq[q].head; b != NULL; b = b->next)
                be->fence_release(be->ctx, b->fence);
        a->npq = 0;
        infinirt__seg *s;
        while ((s = a->segs) != NULL) {
            a->segs = s->next;
            atomic_store(&s->arena, NULL);
            infinirt__spin_unlock(&a->lock);
            infinirt__seg_destroy(pool, s);
            infinirt__spin_lock(&a->lock);
        }
        infinirt__spin_unlock(&a->lock);
    }
    /* Only now the arenas' own memory: a block's descriptor comes from the
     * slab of the arena that cut it, which a merge (a stream retired, a
     * thread exited) may have left behind in a later arena of the table. */
    for (unsigned i = 0; i < pool->narenas; i++)
        infinirt__arena_free(pool->arenas[i]);
    free(pool->arenas);
    pthread_mutex_destroy(&pool->mu);
    atomic_fetch_add(&infinirt__alloc_gen, 1);
    free(pool);
}

/* ---------------------------------------------------------- raw memory */

/* A raw allocation, accounted and in the directory, attached to nothing. */
static infinirt__seg *seg_create(infinirt__pool *pool, void *p, size_t size, bool large)
{
    infinirt__seg *s = infinirt__seg_struct_new();
    if (s == NULL)
        return NULL;
    /* Not memset: a stale thread-local pointer may be reading `arena`
     * (NULL since the struct was detached) with an atomic load. */
    memset(&s->head, 0, sizeof s->head);
    s->fence = NULL;
    s->eidx = 0;
    s->large = large;
    s->base = (uintptr_t)p;
    s->size = size;
    s->pool = pool;
    s->prev = s->next = NULL;
    s->bits = NULL;
    s->nw0 = 0;
    infinirt__dir_insert(s);
    size_t r = atomic_fetch_add(&pool->reserved, size) + size;
    size_t pk = atomic_load_explicit(&pool->peak_reserved, memory_order_relaxed);
    while (r > pk && !atomic_compare_exchange_weak(&pool->peak_reserved, &pk, r))
        ;
    atomic_fetch_add(&pool->segments, 1);
    atomic_fetch_add(&pool->raw_allocs, 1);
    return s;
}

void infinirt__seg_destroy(infinirt__pool *pool, infinirt__seg *s)
{
    void *p = (void *)s->base;
    size_t size = s->size;
    if (s->fence != NULL)
        pool->be.fence_release(pool->be.ctx, s->fence);
    s->fence = NULL;
    free(s->bits);
    s->bits = NULL;
    s->nw0 = 0;
    /* Out of the directory before the backend may hand the range out again. */
    infinirt__dir_remove(s);
    /* Uncounted before the backend has the bytes back, as seg_create counts
     * them only once it holds them: `reserved` never includes a range
     * another thread's raw_alloc may already have been given again (which
     * it counts too), so it and its peak never exceed what the backend
     * holds for the pool. */
    atomic_fetch_sub(&pool->reserved, size);
    atomic_fetch_sub(&pool->segments, 1);
    INFINIRT__ALLOC_UNLOCKED("raw_free");
    infiniStatus_t st = pool->be.raw_free(pool->be.ctx, p);
    if (st != INFINI_STATUS_SUCCESS)
        INFINIRT__WARN("%s: giving %zu bytes at %p back to the backend failed (%d)", pool->be.label, size, p,
                       (int)st);
    atomic_fetch_add(&pool->raw_frees, 1);
    if (pool->be.note != NULL)
        pool->be.note(pool, INFINIRT__POOL_NOTE_RELEASE, size, p);
}

infiniStatus_t infinirt__raw_segment(infinirt__pool *pool, size_t size, bool large, infinirt__seg **out)
{
    void *p = NULL;
    INFINIRT__ALLOC_UNLOCKED("raw_alloc");
    infiniStatus_t st = pool->be.raw_alloc(pool->be.ctx, size, &p);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (p == NULL)
        return INFINI_STATUS_INTERNAL_ERROR;
    if ((*out = seg_create(pool, p, size, large)) == NULL) {
        pool->be.raw_free(pool->be.ctx, p);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    if (pool->be.note != NULL)
        pool->be.note(pool, INFINIRT__POOL_NOTE_RESERVE, size, p);
    return INFINI_STATUS_SUCCESS;
}

/* -------------------------------------------------------------- fences */

bool infinirt__wait_all(infinirt__pool *pool)
{
    /* A fence over every stream, taken now, covers every fence taken before. */
    const infinirt__pool_backend *be = &pool->be;
    infinirt__fence *f = NULL;
    INFINIRT__ALLOC_UNLOCKED("fence_take_all");
    if (be->fence_take == NULL || be->fence_take_all(be->ctx, &f) != INFINI_STATUS_SUCCESS || f == NULL)
        return false;
    infiniStatus_t st = be->fence_wait(be->ctx, f);
    be->fence_release(be->ctx, f);
    if (st != INFINI_STATUS_SUCCESS) {
        INFINIRT__WARN("%s: waiting for the work in flight failed (%s); freed memory stays held", be->label,
                       be->status_name(st));
        return false;
    }
    return true;
}

infiniStatus_t infinirt__no_fence(const infinirt__pool_backend *be, infiniStatus_t st)
{
    INFINIRT__WARN("%s: no fence for a free and the device could not be synchronized (%s); the free fails", be->label,
                   be->status_name(st));
    return st;
}

/* ------------------------------------------------ releasing the cache */

/* The empty segments of arena a (locked) whose fences have completed,
 * detached and listed through `next`: all of them, or (all false) only
 * while the arena would hold more than three times the most it ever had in
 * use after growing by `grow` bytes. */
static infinirt__seg *detach_empty(infinirt__arena *a, bool all, size_t grow)
{
    infinirt__seg *out = NULL;
    for (uint32_t k = 0; k < a->nes && (all || a->reserved + grow > 3 * a->peak_used);) {
        infinirt__seg *s = a->estack[k];
        if (!infinirt__seg_empty(s)) {
            infinirt__empty_drop(a, s); /* in use again: stale entry */
            continue;
        }
        if (!infinirt__seg_fence_done(a, s)) {
            k++;
            continue;
        }
        infinirt__seg_detach(a, s); /* drops it from the stack */
        s->next = out;
        out = s;
    }
    return out;
}

/* Give a list of detached segments back to the backend; returns bytes.
 * Backend calls may be slow (pinned memory: milliseconds): made with no
 * lock held. */
static size_t destroy_list(infinirt__pool *pool, infinirt__seg *out)
{
    size_t freed = 0;
    while (out != NULL) {
        infinirt__seg *s = out;
        out = s->next;
        freed += s->size;
        infinirt__seg_destroy(pool, s);
    }
    return freed;
}

size_t infinirt__release_cached(infinirt__pool *pool)
{
    infinirt__arena_walk w = {.pool = pool};
    size_t freed = 0;
    for (infinirt__arena *a; (a = infinirt__arena_next(&w)) != NULL;) {
        infinirt__spin_lock(&a->lock);
        infinirt__pending_poll(a);
        infinirt__quick_flush(a);
        infinirt__seg *out = detach_empty(a, true, 0);
        infinirt__spin_unlock(&a->lock);
        freed += destroy_list(pool, out);
    }
    if (freed != 0 && pool->be.note != NULL)
        pool->be.note(pool, INFINIRT__POOL_NOTE_TRIM, freed, NULL);
    return freed;
}

void infinirt__arena_shrink(infinirt__arena *a, size_t grow)
{
    infinirt__spin_lock(&a->lock);
    infinirt__seg *out = detach_empty(a, false, grow);
    infinirt__spin_unlock(&a->lock);
    destroy_list(a->pool, out);
}

infinirt__seg *infinirt__steal(infinirt__pool *pool, infinirt__arena *to, size_t n, bool large)
{
    infinirt__arena_walk w = {.pool = pool};
    size_t want = n << pool->gshift;
    size_t waste = large ? (n / INFINIRT__WASTE_DIV) << pool->gshift : SIZE_MAX;
    for (infinirt__arena *a; (a = infinirt__arena_next(&w)) != NULL;) {
        if (a == to || !infinirt__spin_free(&a->lock))
            continue; /* busy: not worth waiting for on this path */
        infinirt__spin_lock(&a->lock);
        /* Blocks queued behind fences that have completed since (a
         * retired stream's or graph's, which no one allocates from to
         * poll them) free their segments for stealing. */
        if (a->npq != 0)
            infinirt__pending_poll(a);
        unsigned looked = 0;
        /* A few candidates only: this runs on a miss, before a raw
         * allocation, and must stay cheap whatever the cache holds. */
        for (uint32_t k = a->nes; k > 0 && looked < 16;) {
            infinirt__seg *s = a->estack[--k];
            if (!infinirt__seg_empty(s)) {
                infinirt__empty_drop(a, s);
                continue;
            }
            looked++;
            if (s->large != large || s->size < want)
                continue;
            if (large && s->size - want > waste && s->size > pool->max_split)
                continue;
            if (!infinirt__seg_fence_done(a, s))
                continue;
            infinirt__seg_detach(a, s);
            infinirt__spin_unlock(&a->lock);
            return s;
        }
        infinirt__spin_unlock(&a->lock);
    }
    return NULL;
}

/* ----------------------------------------------------------- statistics */

void infinirt__pool_stats(infinirt__pool *pool, infinirtAllocatorStats_t *st)
{
    memset(st, 0, sizeof *st);
    infinirt__arena_walk w = {.pool = pool};
    size_t peak = 0;
    for (infinirt__arena *a; (a = infinirt__arena_next(&w)) != NULL;) {
        infinirt__spin_lock(&a->lock);
        st->allocated_bytes += a->req_bytes;
        st->active_blocks += a->active;
        st->alloc_requests += a->requests;
        if (a->peak_req > peak)
            peak = a->peak_req;
        infinirt__spin_unlock(&a->lock);
    }
    /* One arena: its peak is the pool's.  Several: the published total's
     * (see infinirt__publish in alloc_pool.h). */
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

const char *infinirt__pool_label(const infinirt__pool *pool)
{
    return pool->be.label;
}

void infinirt__pool_reset_peak(infinirt__pool *pool)
{
    infinirt__arena_walk w = {.pool = pool};
    size_t total = 0;
    for (infinirt__arena *a; (a = infinirt__arena_next(&w)) != NULL;) {
        infinirt__spin_lock(&a->lock);
        a->peak_req = a->req_bytes;
        total += a->req_bytes;
        infinirt__spin_unlock(&a->lock);
    }
    /* Several arenas: the published total, without the own arenas' slack,
     * is the exact current figure. */
    if (atomic_load(&pool->multi)) {
        pthread_mutex_lock(&pool->mu);
        INFINIRT__ALLOC_LOCKS(1);
        total = tighten_locked(pool);
        atomic_store(&pool->pub_peak, total);
        INFINIRT__ALLOC_LOCKS(-1);
        pthread_mutex_unlock(&pool->mu);
    } else {
        atomic_store(&pool->pub_peak, total);
    }
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
    if (pool == NULL || stream == NULL || !pool->cfg.enabled)
        return;
    pthread_mutex_lock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(1);
    for (unsigned i = 1; i < pool->narenas; i++) {
        infinirt__arena *a = pool->arenas[i];
        if (!a->in_use || a->stream != stream || a->owner != NULL)
            continue;
        /* Its slack out of the total first: what it holds is published
         * as it stands in the arena it joins. */
        infinirt__spin_lock_read(&a->lock);
        if (infinirt__keeps_slack(a))
            atomic_fetch_sub(&pool->pub_total, infinirt__slack_take(pool, a));
        infinirt__spin_unlock(&a->lock);
        if (infinirt__arena_merge_into(pool->arenas[0], a, false) == 0) {
            a->in_use = false;
            /* Thread caches naming this arena for `stream` are stale now. */
            atomic_fetch_add(&infinirt__alloc_gen, 1);
        }
        break;
    }
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&pool->mu);
}
