/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_arena.h - the allocator's fourth layer: arenas.  A pool keeps one
 * arena per stream key; an arena owns segments (alloc_seg.h), their free
 * blocks in its bins and quick lists (alloc_bins.h) and its live blocks in
 * its block table (alloc_block.h).
 *
 * Its spinlock protects everything in it: bins, quick lists, the block
 * table, pending queues, its segment list and empty stack, counters, and
 * every block and segment it owns.  Under that lock, here: blocks are cut
 * from free blocks and merged back, segments attached and detached, frees
 * queued behind their fences, and a retired stream's arena merged into
 * another.  Choosing an arena, and getting or giving back raw memory, are
 * the pool's (alloc_pool.h).
 */
#ifndef INFINIRT_LOADER_ALLOC_ARENA_H_
#define INFINIRT_LOADER_ALLOC_ARENA_H_

#include "alloc_bins.h"
#include "alloc_seg.h"
#include "alloc_solo.h"

#include <stdatomic.h>

/* The backend's callbacks (alloc.h): an arena asks its fences whether they
 * have completed and releases them. */
typedef struct infinirt__pool_backend infinirt__pool_backend;

/* ----------------------------------------------------------- lock checks */

/* Backend calls that may block (raw memory, taking and waiting for fences)
 * run with no allocator lock held; only fence_query and fence_release may
 * run under an arena lock (docs/architecture.md, "Backend calls under
 * allocator locks").  Builds with INFINIRT_LOCK_CHECKS (the default where
 * the tests are built) count the allocator locks - arena spinlocks and
 * pool->mu - each thread holds, and abort, naming the call, when a
 * blocking one is made with any held. */
#ifdef INFINIRT_LOCK_CHECKS
extern _Thread_local __attribute__((tls_model("initial-exec"))) unsigned infinirt__alloc_locks_held;
__attribute__((noreturn)) void infinirt__alloc_locked_call(const char *call);
#define INFINIRT__ALLOC_LOCKS(delta) ((void)(infinirt__alloc_locks_held += (unsigned)(delta)))
#define INFINIRT__ALLOC_UNLOCKED(call) \
    ((void)(__builtin_expect(infinirt__alloc_locks_held == 0, 1) || (infinirt__alloc_locked_call(call), 0)))
#else
#define INFINIRT__ALLOC_LOCKS(delta) ((void)0)
#define INFINIRT__ALLOC_UNLOCKED(call) ((void)0)
#endif

/* -------------------------------------------------------------- spinlock */

/* A spinlock with an epoch: every holder bumps the epoch when it takes the
 * lock, so a reader that copied something while holding it can later tell,
 * with one load and no lock, that nobody has held it since (and so that
 * nothing it protects has changed).  The lock itself is a solo lock
 * (alloc_solo.h): a thread that is the process's only participant takes
 * it with no locked instruction. */
typedef struct {
    infinirt__solo_lock sl;
    atomic_uint_fast64_t epoch;
} infinirt__spinlock;

/* What every holder does once it has the lock. */
static inline __attribute__((always_inline)) void infinirt__spin_taken(infinirt__spinlock *l)
{
    INFINIRT__ALLOC_LOCKS(1);
    /* Only the holder writes the epoch: a load and a store, no locked
     * instruction.  The store comes before every change the holder makes,
     * so whoever learns of a change (a free, by the thread that made it or
     * through the application's own synchronisation with it) also sees the
     * new epoch. */
    atomic_store_explicit(&l->epoch, atomic_load_explicit(&l->epoch, memory_order_relaxed) + 1, memory_order_release);
}

static inline __attribute__((always_inline)) void infinirt__spin_lock(infinirt__spinlock *l)
{
    infinirt__solo_lock_take(&l->sl);
    infinirt__spin_taken(l);
}

/* Take the lock as infinirt__spin_lock does when the calling thread is
 * alone (and counted), with no call; false, with nothing taken, otherwise:
 * the caller then takes it with infinirt__spin_lock.  For hot paths whose
 * fast part makes no call (so saves no registers). */
static inline __attribute__((always_inline)) bool infinirt__spin_lock_alone(infinirt__spinlock *l)
{
    if (!infinirt__solo_enter_counted(&l->sl.solo))
        return false;
    infinirt__spin_taken(l);
    return true;
}

/* Take the lock to read only: the epoch stays, so what other threads
 * remember of the protected data stays valid. */
static inline __attribute__((always_inline)) void infinirt__spin_lock_read(infinirt__spinlock *l)
{
    infinirt__solo_lock_take(&l->sl);
    INFINIRT__ALLOC_LOCKS(1);
}

static inline __attribute__((always_inline)) void infinirt__spin_unlock(infinirt__spinlock *l)
{
    INFINIRT__ALLOC_LOCKS(-1);
    infinirt__solo_lock_give(&l->sl);
}

/* Whether l is not held (a hint for callers that skip busy locks). */
static inline bool infinirt__spin_free(infinirt__spinlock *l)
{
    return infinirt__solo_lock_free(&l->sl);
}

/* ----------------------------------------------------------------- arena */

/* The blocks freed on one stream key - or synchronously - waiting for
 * their fences in the order the fences were taken. */
typedef struct {
    void *stream; /* the stream of the frees queued here (NULL when sync) */
    bool sync;    /* synchronous frees, each fence over every stream */
    infinirt__blk *head, *tail;
} infinirt__pq;

struct infinirt__arena {
    infinirt__spinlock lock;
    infinirt__pool *pool;
    void *stream;
    bool in_use;
    unsigned gshift; /* the pool's: log2 of its granularity */
    /* hot */
    infinirt__quick quick;
    infinirt__blktab blocks; /* live blocks */
    infinirt__descs descs;   /* unused descriptors */
    /* counters: this arena's share of the pool's */
    size_t req_bytes, peak_req, active, requests, published;
    size_t reserved, used; /* bytes of its segments; of USED + PENDING blocks */
    size_t peak_used;      /* most `used` ever: what the cache needs to hold */
    size_t nfenced;        /* segments holding a fence */
    /* cold */
    infinirt__seg *segs;
    /* Segments that emptied, kept lazily: one in use again stays until the
     * next scan drops it, so the hot paths never edit this stack. */
    infinirt__seg **estack;
    uint32_t nes, capes;
    infinirt__pq *pq;
    unsigned npq, cappq;
    infinirt__bins small, large;
    const infinirt__pool_backend *be; /* the pool's, for fences */
    /* The thread whose own arena this is (alloc_tcache.c), or NULL for an
     * arena any thread allocating on `stream` uses.  Under pool->mu. */
    void *owner;
    /* A shared arena that keeps its falls as slack, as an own arena does
     * (infinirt__slack_start, alloc_pool.h; counted in pool->nslack).
     * Written under the arena's lock; a peak event reads it unlocked as a
     * hint. */
    atomic_bool slack;
    bool tight; /* locked by a peak event (under pool->mu) */
};

/* A new, empty arena of pool (NULL without memory). */
infinirt__arena *infinirt__arena_new(infinirt__pool *pool, const infinirt__pool_backend *be, unsigned gshift);
/* Free the arena's own memory (its segments are the caller's). */
void infinirt__arena_free(infinirt__arena *a);

/* ---------------------------------------------------- blocks in the arena */

static inline infinirt__bins *infinirt__blk_bins(infinirt__arena *a, const infinirt__blk *b)
{
    return (b->segst & INFINIRT__BLK_LARGE) ? &a->large : &a->small;
}
/* Take free block b out of the bins, cut to n granules when `split` (the
 * rest back in the bins).  Without host memory for a descriptor the whole
 * block is handed out. */
infinirt__blk *infinirt__blk_take(infinirt__arena *a, infinirt__blk *b, size_t n, bool split);
/* Make b FREE: coalesce with free neighbours, into the bins; a segment that
 * becomes empty goes on the empty stack. */
void infinirt__blk_release(infinirt__arena *a, infinirt__blk *b);
/* Every block of the quick lists into the bins, coalesced. */
void infinirt__quick_flush(infinirt__arena *a);

/* -------------------------------------------------- segments of the arena */

void infinirt__empty_push(infinirt__arena *a, infinirt__seg *s);
void infinirt__empty_drop(infinirt__arena *a, infinirt__seg *s);
/* Attach a detached segment to arena a (locked) as one free block. */
infinirt__blk *infinirt__seg_attach(infinirt__arena *a, infinirt__seg *s);
/* Detach a segment none of whose blocks is USED or PENDING. */
void infinirt__seg_detach(infinirt__arena *a, infinirt__seg *s);
/* Is the segment's latest same-stream free complete?  Releases the fence. */
bool infinirt__seg_fence_done(infinirt__arena *a, infinirt__seg *s);

/* ----------------------------------------------------------- pending frees */

/* Queue b, freed on `stream` (sync: synchronously, stream NULL) with fence
 * f; -1 when there is no memory for a new queue. */
int infinirt__pending_add(infinirt__arena *a, infinirt__blk *b, void *stream, bool sync, infinirt__fence *f);
/* Blocks whose fences completed become free; returns how many. */
size_t infinirt__pending_poll(infinirt__arena *a);

/* Move everything `from` holds into `to` (caller holds pool->mu, no arena
 * lock).  Segments keep their latest same-stream fences when
 * `keep_fences` (both arenas serve one stream, whose work may still run:
 * a thread's own arena joining the shared one), else the fences are
 * released (a retired stream, whose work has completed).  Returns 0, or -1
 * (nothing moved) when out of host memory. */
int infinirt__arena_merge_into(infinirt__arena *to, infinirt__arena *from, bool keep_fences);

#endif /* INFINIRT_LOADER_ALLOC_ARENA_H_ */
