/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_quick.h - the quick parts of the pool's alloc and free paths
 * (alloc_pool_path.c), inline, so that the loader's MallocAsync and
 * FreeAsync finish their usual call with no call at all: a function call
 * there costs two prologues and epilogues and the arguments shuffled
 * twice, more than the quick path's own work.  Whatever a quick path does
 * not finish it leaves to an out-of-line function, with nothing done or
 * with the arena locked (infinirt__quick_res).
 *
 * The thread's caches these read are defined in alloc_pool_path.c.
 */
#ifndef INFINIRT_LOADER_ALLOC_QUICK_H_
#define INFINIRT_LOADER_ALLOC_QUICK_H_

#include "alloc_pool.h"

/* initial-exec: read on every call.  Applications link the loader; one
 * dlopened later gets the loader's thread-local data (some 700 bytes in
 * all; docs/architecture.md has the figure) from glibc's static TLS
 * surplus.  Hidden: only the loader's own code reads them. */
#define INFINIRT__QUICK_TLS _Thread_local __attribute__((tls_model("initial-exec"), visibility("hidden")))

/* (pool, stream) -> arena, a few entries per thread. */
typedef struct {
    infinirt__pool *pool;
    void *stream;
    infinirt__arena *arena;
    uint_fast64_t gen;
} infinirt__tl_map_ent;
extern INFINIRT__QUICK_TLS infinirt__tl_map_ent infinirt__tl_map[4];
/* The arena of this thread's last alloc or free: where its next free most
 * likely finds its block, without touching the directory. */
extern INFINIRT__QUICK_TLS infinirt__arena *infinirt__tl_last;
extern INFINIRT__QUICK_TLS uint_fast64_t infinirt__tl_last_gen;
/* The arena of this thread's last free, as a number: only compared. */
extern INFINIRT__QUICK_TLS uintptr_t infinirt__tl_last_free;

/* (pool) -> the thread's own arena for small allocations on the NULL
 * stream (alloc_tcache.c), a few entries per thread, validated by
 * infinirt__tc_gen (bumped by a pool's destroy only: a stream retired
 * leaves them be). */
typedef struct {
    infinirt__pool *pool;
    infinirt__arena *arena;
    uint_fast64_t gen;
} infinirt__tl_own_ent;
extern INFINIRT__QUICK_TLS infinirt__tl_own_ent infinirt__tl_own[2];

/* gen: infinirt__alloc_gen, read by the caller.  With `cached`, only the
 * thread's entries answer (NULL when none does): no call is made. */
static inline __attribute__((always_inline)) infinirt__arena *infinirt__arena_for(infinirt__pool *pool, void *stream,
                                                                                  uint_fast64_t gen, bool cached)
{
    infinirt__tl_map_ent *e = &infinirt__tl_map[((uintptr_t)stream >> 4) & 3];
    if (__builtin_expect(e->pool == pool && e->stream == stream && e->gen == gen, 1))
        return e->arena;
    if (cached)
        return NULL;
    infinirt__arena *a = infinirt__pool_arena(pool, stream);
    if (a != NULL)
        *e = (infinirt__tl_map_ent){pool, stream, a, gen};
    return a;
}

static inline __attribute__((always_inline)) infinirt__arena *infinirt__own_arena_for(infinirt__pool *pool,
                                                                                      bool cached)
{
    uint_fast64_t gen = atomic_load_explicit(&infinirt__tc_gen, memory_order_relaxed);
    infinirt__tl_own_ent *e = &infinirt__tl_own[((uintptr_t)pool >> 6) & 1];
    if (__builtin_expect(e->pool == pool && e->gen == gen, 1))
        return e->arena;
    if (cached)
        return NULL;
    infinirt__arena *a = infinirt__pool_own_arena(pool);
    if (a != NULL)
        *e = (infinirt__tl_own_ent){pool, a, gen};
    return a;
}

/* The arena of an allocation of n granules on `stream` (gen: the
 * generation read first).  With `cached`, from the thread's entries alone
 * (NULL when they do not answer). */
static inline __attribute__((always_inline)) infinirt__arena *
infinirt__arena_of(infinirt__pool *pool, void *stream, size_t n, uint_fast64_t gen, bool cached)
{
    /* Small blocks on the NULL stream: from the thread's own arena. */
    return stream == NULL && n <= pool->own_max ? infinirt__own_arena_for(pool, cached)
                                                : infinirt__arena_for(pool, stream, gen, cached);
}

/* What a quick path did. */
typedef enum {
    INFINIRT__QUICK_DONE,   /* all of it: SUCCESS */
    INFINIRT__QUICK_PEAK,   /* all of it, a peak event due (infinirt__alloc_peak_due, arena unlocked) */
    INFINIRT__QUICK_NONE,   /* nothing: the out-of-line call does all of it */
    INFINIRT__QUICK_ARENA,  /* nothing but find the arena: the out-of-line _arena call goes on */
    INFINIRT__QUICK_LOCKED, /* nothing but lock the arena: the out-of-line _locked call goes on */
} infinirt__quick_res;

/* --------------------------------------------------------------- alloc */

/* The end of an allocation: block b (out of the free lists, its req set,
 * USED) entered in a's table (a locked), counted, remembered, and handed
 * out; a unlocked.  Returns whether a peak event is due: the caller runs
 * it (infinirt__alloc_peak_due), out of the quick paths. */
static inline __attribute__((always_inline)) bool infinirt__alloc_done(infinirt__pool *pool, infinirt__arena *a,
                                                                       infinirt__blk *b, size_t size, void *stream,
                                                                       uint_fast64_t gen, void **out)
{
    a->used += b->size;
    if (a->used > a->peak_used)
        a->peak_used = a->used;
    a->active++;
    a->requests++;
    a->req_bytes += size;
    if (a->req_bytes > a->peak_req)
        a->peak_req = a->req_bytes;
    /* An operator's temporary - MallocAsync, a copy in, a kernel, a copy
     * out, FreeAsync - is copied into at once: its first copy finds it
     * remembered instead of looking it up under the lock.  Synchronous
     * blocks (Malloc, MallocHost: weights, staging buffers) live long and
     * are looked up once; Malloc+Free, the hottest small call, does not
     * pay the entry's stores for them.  The generation was read before a
     * was locked, as a lookup reads it. */
    if (stream != INFINIRT__POOL_SYNC)
        infinirt__lookup_remember(a, infinirt__blk_seg(b), b->addr, size, gen);
    /* The thread's last arena, valid while the generation read before it
     * was found stays (a later one only makes the next free look again). */
    infinirt__tl_last = a;
    infinirt__tl_last_gen = gen;
    *out = (void *)b->addr;
    if (atomic_load_explicit(&pool->multi, memory_order_relaxed)) {
        bool event = infinirt__publish(pool, a);
        infinirt__spin_unlock(&a->lock);
        return event;
    }
    infinirt__spin_unlock(&a->lock);
    return false;
}

/* After an allocation that infinirt__alloc_done answered `event` for (no
 * lock held): the peak event, when due. */
static inline void infinirt__alloc_peak_due(infinirt__pool *pool, bool event)
{
    if (__builtin_expect(event, 0))
        infinirt__peak_event(pool);
}

/* infinirt__pool_alloc's fast part, which makes no call: a block of the
 * quick list, in an arena the thread's entries name, locked by a thread
 * alone, entered in its table's home bucket.  DONE or PEAK with *out set;
 * NONE (infinirt__pool_alloc_any does it all); or LOCKED: arena *ap
 * locked, nothing else done, generation *genp read
 * (infinirt__pool_alloc_locked goes on). */
static inline __attribute__((always_inline)) infinirt__quick_res
infinirt__pool_alloc_quick(infinirt__pool *pool, size_t size, void *stream, void **out, infinirt__arena **ap,
                           uint_fast64_t *genp)
{
    size_t n = (size + pool->g - 1) >> pool->gshift;
    if (__builtin_expect(size - 1 >= pool->max_req || !pool->cfg.enabled || n > pool->quick_max, 0))
        return INFINIRT__QUICK_NONE;
    uint_fast64_t gen = atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire);
    infinirt__arena *a = infinirt__arena_of(pool, stream, n, gen, true);
    if (__builtin_expect(a == NULL || !infinirt__spin_lock_alone(&a->lock), 0))
        return INFINIRT__QUICK_NONE;
    *ap = a;
    *genp = gen;
    infinirt__blk *b = a->quick.list[n];
    /* The table's slot is found before b leaves the list (b's entry does
     * not depend on its state), so that with none free nothing is undone:
     * the locked path takes b again. */
    infinirt__hbkt *k;
    unsigned i;
    if (__builtin_expect(b == NULL || !infinirt__ht_home_slot(&a->blocks, b->addr, &k, &i), 0))
        return INFINIRT__QUICK_LOCKED;
    infinirt__quick_unlink(&a->quick, b, n);
    infinirt__blk_set_state(b, INFINIRT__BLK_USED);
    b->req = size;
    infinirt__ht_fill(&a->blocks, k, i, b->addr, infinirt__ht_val(b), size, b->size);
    return infinirt__alloc_done(pool, a, b, size, stream, gen, out) ? INFINIRT__QUICK_PEAK : INFINIRT__QUICK_DONE;
}

/* Where infinirt__pool_alloc_quick answered NONE: all of
 * infinirt__pool_alloc but its fast part. */
infiniStatus_t infinirt__pool_alloc_any(infinirt__pool *pool, size_t size, void *stream, void **out);
/* Where infinirt__pool_alloc_quick answered LOCKED (arena a locked, gen the
 * generation it read): the rest of the allocation, a unlocked. */
infiniStatus_t infinirt__pool_alloc_locked(infinirt__arena *a, size_t size, void *stream, uint_fast64_t gen,
                                           void **out);

/* --------------------------------------------------------------- free */

static inline bool infinirt__pool_wanted(infinirt__pool_want want, const infinirt__pool *pool)
{
    switch (want.kind) {
    case INFINIRT__WANT_ANY:
        return true;
    case INFINIRT__WANT_POOL:
        return want.pool == pool;
    case INFINIRT__WANT_DEVICE:
        return pool->be.device_id >= 0;
    case INFINIRT__WANT_HOST:
        return pool->be.device_id < 0;
    }
    return false;
}

/* The counters a free changes first, before its block is handled (arena
 * locked).  A shared arena in which this thread's last call and its last
 * free were made too (an operator's MallocAsync and FreeAsync on one
 * stream, over and over) starts keeping its falls as slack
 * (infinirt__slack_start, alloc_pool.h). */
static inline __attribute__((always_inline)) void infinirt__account_free(infinirt__arena *a, size_t req)
{
    a->active--;
    a->req_bytes -= req;
    /* An arena keeping slack publishes no fall (infinirt__publish_fall);
     * one that starts to keep it now publishes none either. */
    if (atomic_load_explicit(&a->pool->multi, memory_order_relaxed) && !infinirt__keeps_slack(a)) {
        if (__builtin_expect(infinirt__tl_last_free == (uintptr_t)a && infinirt__tl_last == a, 0))
            infinirt__slack_start(a->pool, a);
        else
            (void)infinirt__publish(a->pool, a);
    }
    infinirt__tl_last_free = (uintptr_t)a;
}

/* Whether freed block b (USED, in no table or queue) of arena a (locked)
 * goes to a quick list: the end of most small frees. */
static inline __attribute__((always_inline)) bool infinirt__free_quick_takes(const infinirt__arena *a,
                                                                             const infinirt__blk *b)
{
    const infinirt__pool *pool = a->pool;
    return (b->size >> pool->gshift) <= pool->quick_max && !(b->segst & INFINIRT__BLK_LARGE) &&
           a->quick.bytes + b->size <= INFINIRT__QUICK_BYTES;
}

/* Block b, which infinirt__free_quick_takes, to its quick list. */
static inline __attribute__((always_inline)) void infinirt__free_quick_push(infinirt__arena *a, infinirt__blk *b)
{
    a->used -= b->size;
    infinirt__quick_push(&a->quick, b, b->size >> a->pool->gshift);
}

/* infinirt__pool_free's fast part for a free ordered on a stream (which
 * one does not matter here: no fence is taken), which makes no call: in the arena of the thread's last call, a pool `want`
 * accepts, with no fence to take (none asked of the backend: quiet), locked
 * by a thread alone, a block with no fence in its arena that goes to a
 * quick list.  DONE; NONE (infinirt__pool_free does it all); ARENA: arena
 * *ap found, the thread's last, of a pool `want` accepts, nothing else
 * done (infinirt__pool_free_arena goes on, for a fence, or a lock others
 * may hold); or LOCKED: that, and *ap locked
 * (infinirt__pool_free_locked goes on).  ptr is not NULL. */
static inline __attribute__((always_inline)) infinirt__quick_res
infinirt__pool_free_quick(void *ptr, infinirt__pool_want want, infinirt__arena **ap)
{
    uintptr_t key = (uintptr_t)ptr;
    infinirt__arena *a = infinirt__tl_last;
    if (a == NULL || infinirt__tl_last_gen != atomic_load_explicit(&infinirt__alloc_gen, memory_order_relaxed))
        return INFINIRT__QUICK_NONE;
    infinirt__pool *pool = a->pool;
    if (!infinirt__pool_wanted(want, pool) || !pool->cfg.enabled)
        return INFINIRT__QUICK_NONE;
    *ap = a;
    /* (No prefetch of the hash bucket here, unlike pool_free: nothing
     * before the look-up below would overlap it.) */
    /* infinirt__take_fence, where it makes no call. */
    if (infinirt__fence_wanted(&pool->be, "fence_take"))
        return INFINIRT__QUICK_ARENA;
    if (__builtin_expect(!infinirt__spin_lock_alone(&a->lock), 0))
        return INFINIRT__QUICK_ARENA;
    /* What infinirt__pool_free_locked would do, decided before anything
     * changes: a block found, not the whole of a large segment, with no
     * fence held in the arena (so none to keep), going to a quick list. */
    unsigned i;
    infinirt__hbkt *k = infinirt__ht_find(&a->blocks, key, &i);
    if (__builtin_expect(k == NULL || (k->val[i] & INFINIRT__HW_WHOLE) || a->nfenced != 0, 0))
        return INFINIRT__QUICK_LOCKED;
    infinirt__blk *b = infinirt__ht_blk(k->val[i]);
    if (__builtin_expect(!infinirt__free_quick_takes(a, b), 0))
        return INFINIRT__QUICK_LOCKED;
    size_t req = infinirt__ht_remove(&a->blocks, k, i);
    infinirt__account_free(a, req);
    infinirt__free_quick_push(a, b);
    infinirt__spin_unlock(&a->lock);
    return INFINIRT__QUICK_DONE;
}

/* Where infinirt__pool_free_quick answered ARENA (arena a) or LOCKED (a
 * locked): the rest of the free of ptr ordered on `stream`, a unlocked,
 * with the statuses of infinirt__pool_free. */
infiniStatus_t infinirt__pool_free_arena(infinirt__arena *a, void *ptr, void *stream, infinirt__pool_want want);
infiniStatus_t infinirt__pool_free_locked(infinirt__arena *a, void *ptr, void *stream, infinirt__pool_want want);

#endif /* INFINIRT_LOADER_ALLOC_QUICK_H_ */
