/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_pool.h - the allocator's top layer: pools.  The interface the
 * loader calls is alloc.h; the design is described in docs/allocator.md.
 *
 * Layers, each header including only the ones below it:
 *   alloc_pool.h   pools: settings, the arena table, pool-wide counters
 *                  alloc_pool.c         create, destroy, arenas, raw memory,
 *                                       fences, releasing the cache,
 *                                       statistics, trim, stream retirement
 *                  alloc_pool_path.c    the alloc and free paths, with
 *                                       pass-through mode beside them
 *                  alloc_quick.h        their quick parts, inline, for
 *                                       the loader's hot entry points too
 *                  alloc_pool_lookup.c  pointer lookups
 *                  alloc_tcache.c       thread arenas: each thread's own
 *                                       arena for its small allocations on
 *                                       the NULL stream
 *   alloc_dir.h    the process-wide pointer directory (alloc_dir.c)
 *   alloc_arena.h  arenas: split, merge, pending frees (alloc_arena.c)
 *   alloc_seg.h    segments, block-start bitmaps (alloc_seg.c)
 *   alloc_bins.h   free blocks: bins and quick lists (alloc_bins.c)
 *   alloc_block.h  block descriptors, the block table (alloc_block.c)
 *
 * Objects and who protects what:
 *  - pool: one per device (or plugin host memory).  Immutable settings, a
 *    mutex `mu` for its arena table, and atomic pool-wide counters.
 *  - arena: one per stream key of a pool.  Its spinlock protects everything
 *    in it: bins, quick lists, the block table, pending queues, its segment
 *    lists, counters, and every block and segment it owns.
 *  - seg: one raw allocation, owned by one arena at a time (`arena`, atomic
 *    because lookups read it before they hold that arena's lock).  Segment
 *    structs are never returned to malloc (the directory recycles them), so
 *    a stale pointer to one may be dereferenced, then validated under the
 *    owning arena's lock.
 *  - blk: one block of a segment, address-ordered through pphys/nphys.
 *
 * Lock order: the thread arenas' records (alloc_tcache.c), then pool->mu,
 * then the directory lock, then one arena lock.  The directory is never
 * write-locked, and pool->mu never taken, while an arena lock is held; the
 * places holding several arena locks (an arena merged: a stream retired, a
 * thread exited; a peak event) hold pool->mu, which serialises them.
 */
#ifndef INFINIRT_LOADER_ALLOC_POOL_H_
#define INFINIRT_LOADER_ALLOC_POOL_H_

#include "alloc.h"
#include "alloc_dir.h"

#include <pthread.h>
#include <stdatomic.h>

/* Requests up to SMALL_MAX bytes share SMALL_SEG-byte segments; larger ones
 * get a segment of their own (docs/allocator.md says why). */
#define INFINIRT__SMALL_MAX ((size_t)64 << 10)
#define INFINIRT__SMALL_SEG ((size_t)2 << 20)
/* A large free block may serve a request whole when it wastes at most
 * 1/WASTE_DIV of the request, 1/WASTE_DIV_STRICT near capacity. */
#define INFINIRT__WASTE_DIV 16
#define INFINIRT__WASTE_DIV_STRICT 64
/* Arenas copied at a time by the slow paths that visit every arena. */
#define INFINIRT__SNAP_MAX 32u

struct infinirt__pool {
    infinirt__pool_backend be;
    infinirt__alloc_config cfg;
    size_t g; /* granularity */
    unsigned gshift;
    size_t max_req;   /* largest request: max_alloc_size floored to g, and total_memory */
    size_t small_max; /* 0 = no small segments */
    size_t small_seg;
    size_t max_split;   /* SIZE_MAX = no limit */
    unsigned quick_max; /* granules; 0 = no quick lists */
    size_t own_max;     /* granules: NULL-stream requests up to this come from the thread's own arena */
    bool keep_empty;    /* segments that empty stay cached (no release_on_free, no max_cached) */
    pthread_mutex_t mu; /* arena table */
    infinirt__arena **arenas;
    unsigned narenas, caparenas;
    atomic_int multi; /* more than one arena has been in use */
    /* pool-wide counters, on their own cache line */
    _Alignas(64) atomic_size_t reserved;
    atomic_size_t peak_reserved, segments, raw_allocs, raw_frees, retries, oom;
    atomic_size_t pub_total, pub_peak;
    atomic_uint nowned;     /* own arenas (alloc_tcache.c) in use; changed under mu */
    atomic_uint nslack;     /* shared arenas keeping slack (infinirt__slack_start) */
    atomic_size_t capacity; /* for strict mode; 0 = unknown */
};

/* The largest request the backend could take in one piece: requests round
 * up to a multiple of g without overflow and never beyond its largest
 * allocation. */
static inline size_t infinirt__max_single(const infinirt__pool *pool)
{
    size_t max = SIZE_MAX / 2;
    if (pool->be.max_alloc_size != 0 && pool->be.max_alloc_size < max)
        max = pool->be.max_alloc_size;
    return max & ~(pool->g - 1);
}

/* The peak of a multi-arena pool: the highest value of the pool's total
 * `pub_total`, the sum of every arena's `published` bytes.
 *  - A shared arena (of a stream, or the synchronous one) publishes every
 *    change of its allocated bytes as it makes it: one shared atomic add
 *    per call, paid only once a second arena is in use.
 *  - A thread's own arena (alloc_tcache.c) publishes only a rise above
 *    what it published: its falls stay published (its `published` is then
 *    above its allocated bytes: slack), so a thread that allocates and
 *    frees the same sizes writes nothing shared once warm, and the total
 *    is an upper bound of the true sum.  Its rises that stay under the
 *    slack publish nothing.
 *  - A shared arena that one thread uses for an allocation and its free
 *    over and over (MallocAsync and FreeAsync of an operator's temporary
 *    on one stream) keeps slack too once that thread frees in it twice in
 *    a row (infinirt__slack_start): then its alloc+free pair writes nothing
 *    shared either.  The next peak event takes its slack out and ends that
 *    until the pattern is seen again; so a thread taking turns over streams
 *    keeps publishing every change, and never makes slack that another
 *    stream's rise would find above the peak at every step.
 * While the pool has own arenas or shared arenas keeping slack, a total
 * above the peak so far may be slack, not a new peak: the call that finds it so runs a peak event once
 * its arena is unlocked (infinirt__peak_event): every own arena locked at
 * once, their slack taken out of the total, which is then the exact sum,
 * and the peak raised to it.  Exact wherever calls are ordered (one thread,
 * or threads ordered by the program); a sum that existed only while calls
 * of several threads overlapped may be missed, as no order of them is
 * kept.  Without own arenas the total is exact and raises the peak
 * directly.  A one-arena pool's own peak is the pool's. */
/* Whether arena a (locked) keeps its falls as slack: a thread's own
 * arena, or a shared one that started to (infinirt__slack_start). */
static inline bool infinirt__keeps_slack(const infinirt__arena *a)
{
    return a->owner != NULL || atomic_load_explicit(&a->slack, memory_order_relaxed);
}

static inline void infinirt__raise_peak(infinirt__pool *pool, size_t to)
{
    size_t pk = atomic_load_explicit(&pool->pub_peak, memory_order_relaxed);
    while (to > pk && !atomic_compare_exchange_weak(&pool->pub_peak, &pk, to))
        ;
}

/* Publish arena a's change (a locked, pool multi-arena).  Returns true
 * when the caller must run infinirt__peak_event once a is unlocked. */
static inline bool infinirt__publish(infinirt__pool *pool, infinirt__arena *a)
{
    size_t cur = a->req_bytes, pub = a->published;
    if (infinirt__keeps_slack(a)) {
        /* Own arena, or shared keeping slack: a rise above the published
         * bytes only; any rise may reach a new peak while the total is
         * above the peak so far. */
        size_t total;
        if (cur > pub) {
            total = atomic_fetch_add_explicit(&pool->pub_total, cur - pub, memory_order_relaxed) + (cur - pub);
            a->published = cur;
        } else {
            total = atomic_load_explicit(&pool->pub_total, memory_order_relaxed);
        }
        return total > atomic_load_explicit(&pool->pub_peak, memory_order_relaxed);
    }
    if (cur == pub)
        return false;
    size_t total = atomic_fetch_add_explicit(&pool->pub_total, cur - pub, memory_order_relaxed) + (cur - pub);
    a->published = cur;
    if (cur < pub)
        return false; /* a fall reaches no peak */
    if (atomic_load_explicit(&pool->nowned, memory_order_relaxed) == 0 &&
        atomic_load_explicit(&pool->nslack, memory_order_relaxed) == 0) {
        infinirt__raise_peak(pool, total);
        return false;
    }
    return total > atomic_load_explicit(&pool->pub_peak, memory_order_relaxed);
}

/* An arena's fall in allocated bytes (a locked, pool multi-arena): a
 * shared arena publishes it, an own arena or one keeping slack keeps it. */
static inline __attribute__((always_inline)) void infinirt__publish_fall(infinirt__pool *pool, infinirt__arena *a)
{
    if (!infinirt__keeps_slack(a))
        (void)infinirt__publish(pool, a);
}

/* Shared arena a (locked, pool multi-arena) keeps its falls as slack from
 * now on, until a peak event or its merge takes the slack out. */
static inline void infinirt__slack_start(infinirt__pool *pool, infinirt__arena *a)
{
    atomic_store_explicit(&a->slack, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->nslack, 1, memory_order_relaxed);
}

/* The slack of arena a (locked, keeping slack, pool multi-arena: pool->mu
 * held), taken out of its published bytes; a shared arena stops keeping
 * it.  Returns the bytes the caller takes out of the pool's total. */
static inline size_t infinirt__slack_take(infinirt__pool *pool, infinirt__arena *a)
{
    size_t slack = a->published - a->req_bytes;
    a->published = a->req_bytes;
    if (atomic_load_explicit(&a->slack, memory_order_relaxed)) {
        atomic_store_explicit(&a->slack, false, memory_order_relaxed);
        atomic_fetch_sub_explicit(&pool->nslack, 1, memory_order_relaxed);
    }
    return slack;
}

/* The pool's total may hold slack above the peak: take every own arena's
 * slack out and raise the peak to the exact sum (no lock held; takes
 * pool->mu, then the own arenas' locks together). */
void infinirt__peak_event(infinirt__pool *pool);

/* ----------------------------------------------------- alloc_pool_lookup.c */

/* Block `start` (req bytes requested) of segment s, owned by arena a
 * (locked, the block live in its table), remembered as this thread's
 * block used last (alloc.h), as its lookup would be: until anyone takes
 * a's lock again, moving its epoch, or s changes arena, or the
 * generation - read before a was locked - moves, the copies of this
 * thread find it with no lock.  The allocation path calls it too: the
 * first copy into a block just handed out needs no lookup. */
static inline void infinirt__lookup_remember(infinirt__arena *a, infinirt__seg *s, uintptr_t start, size_t req,
                                             uint_fast64_t gen)
{
    infinirt__pool *pool = a->pool;
    unsigned k = infinirt__tl_hit_last ^ 1u; /* the entry not used last */
    infinirt__lookup_hit *e = &infinirt__tl_hit[k];
    infinirt__tl_hit_last = k;
    e->start = start;
    e->req = req;
    e->seg_arena = &s->arena;
    e->arena = a;
    e->epoch = &a->lock.epoch;
    e->epoch_then = atomic_load_explicit(&a->lock.epoch, memory_order_relaxed);
    e->gen = gen;
    e->pool = pool;
    e->owner = pool->be.ctx;
    e->device_type = pool->be.device_type;
    e->device_id = pool->be.device_id;
}

/* ------------------------------------------------------------ alloc_pool.c */

/* The arena serving `stream`: found in the arena table, or a free one (or
 * a new one) given to it.  NULL without host memory.  Takes pool->mu. */
infinirt__arena *infinirt__pool_arena(infinirt__pool *pool, void *stream);
/* A new arena of `owner`'s own for `stream` (or one out of use taken
 * again).  NULL without host memory.  Takes pool->mu. */
infinirt__arena *infinirt__pool_arena_owned(infinirt__pool *pool, void *stream, void *owner);
/* The owner of arena a is gone (its thread exited): everything a holds
 * joins the shared arena of its stream, fences included, and a is out of
 * use.  False when that could not be done for lack of host memory: a then
 * stays, as a shared arena of its stream.  Takes pool->mu. */
bool infinirt__pool_arena_disown(infinirt__pool *pool, infinirt__arena *a);

/* A walk over every arena of a pool for the slow paths that visit them all,
 * copying SNAP_MAX at a time under pool->mu (arenas are only ever
 * appended, so nothing is missed) and holding no lock between steps:
 *     infinirt__arena_walk w = {.pool = pool};
 *     for (infinirt__arena *a; (a = infinirt__arena_next(&w)) != NULL;) ... */
typedef struct {
    infinirt__pool *pool;
    unsigned start, n, i; /* the chunk copied: arenas start .. start+n-1; next: i */
    infinirt__arena *chunk[INFINIRT__SNAP_MAX];
} infinirt__arena_walk;
infinirt__arena *infinirt__arena_next(infinirt__arena_walk *w);

/* A raw allocation of `size` bytes from the backend, accounted and in the
 * directory, attached to nothing. */
infiniStatus_t infinirt__raw_segment(infinirt__pool *pool, size_t size, bool large, infinirt__seg **out);
/* Give a detached segment back to the backend (releasing its fence). */
void infinirt__seg_destroy(infinirt__pool *pool, infinirt__seg *s);

/* Log that no fence could be had for a free and return st (alloc_pool.c). */
infiniStatus_t infinirt__no_fence(const infinirt__pool_backend *be, infiniStatus_t st);
/* Whether a free must ask the backend for a fence: it takes fences, and
 * its quiet_while_zero word (if any) is not 0.  `call` names the backend
 * call for the lock checks: none may be held from here on. */
static inline __attribute__((always_inline)) bool infinirt__fence_wanted(const infinirt__pool_backend *be,
                                                                         const char *call)
{
    (void)call; /* (only the lock checks name it) */
    if (be->fence_take == NULL)
        return false;
    INFINIRT__ALLOC_UNLOCKED(call);
    return be->quiet_while_zero == NULL || atomic_load_explicit(be->quiet_while_zero, memory_order_relaxed) != 0;
}

/* The fence a free on `stream` needs (*out NULL: nothing pending); with
 * _all, the fence a synchronous free needs, asked for only while the
 * backend's quiet_while_zero word (if any) is not 0.  Fail only when no
 * fence could be had and the device could not be synchronised instead:
 * the free must then fail and change nothing.  Inline: every free calls
 * one, and most learn at once that nothing is pending. */
static inline infiniStatus_t infinirt__take_fence(infinirt__pool *pool, void *stream, infinirt__fence **out)
{
    const infinirt__pool_backend *be = &pool->be;
    *out = NULL;
    if (!infinirt__fence_wanted(be, "fence_take"))
        return INFINI_STATUS_SUCCESS;
    /* Through a local: the caller's fence stays in a register. */
    infinirt__fence *got = NULL;
    infiniStatus_t st = be->fence_take(be->ctx, stream, &got);
    *out = got;
    return __builtin_expect(st != INFINI_STATUS_SUCCESS, 0) ? infinirt__no_fence(be, st) : st;
}

static inline infiniStatus_t infinirt__take_fence_all(infinirt__pool *pool, infinirt__fence **out)
{
    const infinirt__pool_backend *be = &pool->be;
    *out = NULL;
    if (!infinirt__fence_wanted(be, "fence_take_all"))
        return INFINI_STATUS_SUCCESS;
    /* Through a local: the caller's fence stays in a register. */
    infinirt__fence *got = NULL;
    infiniStatus_t st = be->fence_take_all(be->ctx, &got);
    *out = got;
    return __builtin_expect(st != INFINI_STATUS_SUCCESS, 0) ? infinirt__no_fence(be, st) : st;
}

/* Wait until every fence taken so far has completed; false if none was
 * pending or the wait failed (then nothing may be assumed complete). */
bool infinirt__wait_all(infinirt__pool *pool);

/* Give back every empty segment of every arena whose fences completed.
 * Takes and drops arena locks: call with none held.  Returns bytes. */
size_t infinirt__release_cached(infinirt__pool *pool);
/* Before growing by `grow` bytes: give back empty segments (oldest first,
 * fences complete) while the arena would hold more than three times the most
 * it ever had in use - the cache must not grow without bound when sizes keep
 * changing.  Arena unlocked on entry and exit. */
void infinirt__arena_shrink(infinirt__arena *a, size_t grow);
/* An empty, fence-complete segment of another arena fit for n granules,
 * detached for `to`; NULL if none.  No arena lock held. */
infinirt__seg *infinirt__steal(infinirt__pool *pool, infinirt__arena *to, size_t n, bool large);

/* ---------------------------------------------------------- alloc_tcache.c */

/* Thread arenas: each thread's own arena of a pool for its small
 * allocations on the NULL stream, so that threads allocating at once share
 * no lock and no cache line (docs/allocator.md, "Thread arenas").  The
 * calling thread's arena of `pool`, made on first use; the pool's shared
 * arena of the NULL stream when the thread can have none (no host memory,
 * no thread-specific key, the thread exiting).  Takes the thread arenas'
 * lock, then pool->mu. */
infinirt__arena *infinirt__pool_own_arena(infinirt__pool *pool);
/* The pool is being destroyed: no thread keeps an arena of it any more.
 * Bumps infinirt__tc_gen. */
void infinirt__tcache_pool_gone(infinirt__pool *pool);
/* Bumped when a thread's cached (pool -> own arena) entry may be stale: a
 * pool destroyed. */
extern atomic_uint_fast64_t infinirt__tc_gen;
/* Empty the calling thread's cached (pool -> own arena) entries
 * (alloc_pool_path.c): its arenas are being given back. */
void infinirt__tl_own_forget(void);

#endif /* INFINIRT_LOADER_ALLOC_POOL_H_ */
