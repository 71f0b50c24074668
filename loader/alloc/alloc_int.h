/*
 * alloc_int.h - internals of the caching allocator, shared by alloc*.c only.
 * The design is described in docs/allocator.md.
 *
 * Objects and who protects what:
 *  - pool: one per device (or plugin host memory).  Immutable settings, a
 *    mutex `mu` for its arena table, and atomic pool-wide counters.
 *  - arena: one per stream key of a pool.  Its spinlock protects everything
 *    in it: bins, quick lists, the block hash, pending queues, its segment
 *    lists, counters, and every block and segment it owns.
 *  - seg: one raw allocation, owned by one arena at a time (`arena`, atomic
 *    because lookups read it before they hold that arena's lock).  Segment
 *    structs are never returned to malloc (the directory recycles them), so
 *    a stale pointer to one may be dereferenced, then validated under the
 *    owning arena's lock.
 *  - blk: one block of a segment, address-ordered through pphys/nphys.
 *
 * Lock order: pool->mu, then the directory lock, then one arena lock.  The
 * directory is never write-locked, and pool->mu never taken, while an arena
 * lock is held; the only place holding two arena locks (stream retire)
 * holds pool->mu, which serialises it.
 */
#ifndef INFINIRT_LOADER_ALLOC_INT_H_
#define INFINIRT_LOADER_ALLOC_INT_H_

#include "alloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct infinirt__blk infinirt__blk;
typedef struct infinirt__seg infinirt__seg;
typedef struct infinirt__arena infinirt__arena;

/* Requests up to SMALL_MAX bytes share SMALL_SEG-byte segments; larger ones
 * get a segment of their own (docs/allocator.md says why). */
#define INFINIRT__SMALL_MAX ((size_t)64 << 10)
#define INFINIRT__SMALL_SEG ((size_t)2 << 20)
/* Exact-size free lists (deferred coalescing) for small blocks of up to
 * QUICK_MAX granules, holding at most QUICK_BYTES per arena: enough for a
 * loop that frees and allocates the same sizes, too little to starve the
 * bins when sizes vary. */
#define INFINIRT__QUICK_MAX 256u
#define INFINIRT__QUICK_BYTES ((size_t)256 << 10)
/* Two-level segregated bins: SL_COUNT second-level lists per power of two. */
#define INFINIRT__SL_LOG2 6
#define INFINIRT__SL_COUNT (1u << INFINIRT__SL_LOG2)
#define INFINIRT__FL_COUNT 48u
/* A large free block may serve a request whole when it wastes at most
 * 1/WASTE_DIV of the request, 1/WASTE_DIV_STRICT near capacity. */
#define INFINIRT__WASTE_DIV 16
#define INFINIRT__WASTE_DIV_STRICT 64
/* Arenas copied at a time by the slow paths that visit every arena. */
#define INFINIRT__SNAP_MAX 32u

/* ---------------------------------------------------------------- blocks */

enum {
    INFINIRT__BLK_USED = 1,    /* handed out; in the arena's hash */
    INFINIRT__BLK_FREE = 2,    /* in the bins, coalesced with its neighbours */
    INFINIRT__BLK_QUICK = 3,   /* free in a quick list, not yet coalesced */
    INFINIRT__BLK_PENDING = 4, /* freed, waiting for its fence */
    INFINIRT__BLK_LOOSE = 5,   /* free, in no list yet (while moving) */
};
/* Flags beside the state in blk.segst. */
#define INFINIRT__BLK_STATE_MASK ((uintptr_t)7)
#define INFINIRT__BLK_LARGE ((uintptr_t)8)    /* in a large segment: large bins */
#define INFINIRT__BLK_STACKED ((uintptr_t)16) /* head only: on the empty stack */
#define INFINIRT__BLK_BITS ((uintptr_t)32)    /* its segment keeps a block-start bitmap */
#define INFINIRT__BLK_FLAGS ((uintptr_t)63)

/* A descriptor is one cache line: state and flags live in the low bits of
 * the segment pointer (segment structs are 64-byte aligned) and the bin is
 * recomputed from the size. */
struct infinirt__blk {
    size_t size; /* bytes, a multiple of the granularity */
    union {
        size_t req;             /* USED: bytes requested */
        infinirt__fence *fence; /* PENDING: completes before reuse */
        uint32_t nsz;           /* FREE, in the bins: the next block's bins->hsz */
    };
    uintptr_t segst;              /* owning segment | flags | state */
    infinirt__blk *pphys, *nphys; /* neighbours in the segment */
    infinirt__blk *prev, *next;   /* bin, quick list or pending queue */
    uintptr_t addr;
};
_Static_assert(sizeof(infinirt__blk) == 64, "a block descriptor is one cache line");

static inline infinirt__seg *infinirt__blk_seg(const infinirt__blk *b)
{
    return (infinirt__seg *)(b->segst & ~INFINIRT__BLK_FLAGS);
}
static inline unsigned infinirt__blk_state(const infinirt__blk *b)
{
    return (unsigned)(b->segst & INFINIRT__BLK_STATE_MASK);
}
static inline void infinirt__blk_set_state(infinirt__blk *b, unsigned state)
{
    b->segst = (b->segst & ~INFINIRT__BLK_STATE_MASK) | state;
}

struct infinirt__seg {
    /* The block at the base never merges into another, so its descriptor
     * lives here, on the struct's first cache line: for a segment of one
     * block (most large ones) the hot paths touch this line only. */
    _Alignas(64) infinirt__blk head;
    /* second line: what splits, merges and the free path may touch */
    uintptr_t base;
    size_t size;
    uint64_t *bits;                   /* block-start bitmap: level 0, then 1 */
    size_t nw0;                       /* level-0 words; 0 = no bitmap */
    infinirt__fence *fence;           /* latest fence of a same-stream free */
    _Atomic(infinirt__arena *) arena; /* NULL while detached */
    uint32_t eidx;                    /* index in the arena's empty stack */
    bool large;                       /* bins: large (true) or small */
    /* cold */
    infinirt__pool *pool;
    infinirt__seg *prev, *next;       /* arena's segment list */
    infinirt__seg *left, *right;      /* directory tree */
    int height;
    infinirt__seg *free_next;         /* directory free list */
};

_Static_assert(offsetof(infinirt__seg, head) == 0, "a segment's head block is the segment's address");
_Static_assert(offsetof(infinirt__seg, large) < 128, "the fields of the second line fit it");

/* Every block of the segment is free and coalesced into its head. */
static inline bool infinirt__seg_empty(const infinirt__seg *s)
{
    return infinirt__blk_state(&s->head) == INFINIRT__BLK_FREE && s->head.nphys == NULL;
}

/* ---------------------------------------------------------------- arenas */

typedef struct {
    uint64_t fl_map;
    uint64_t sl_map[INFINIRT__FL_COUNT];
    infinirt__blk *head[INFINIRT__FL_COUNT][INFINIRT__SL_COUNT];
    /* Granules of each head (0: empty list; UINT32_MAX: that many or
     * more), so that the search decides whether the request's own class
     * serves it without reading a descriptor that may be out of the cache. */
    uint32_t hsz[INFINIRT__FL_COUNT][INFINIRT__SL_COUNT];
} infinirt__bins;

/* A bucket of the block hash: four entries (key 0 = empty) on two cache
 * lines, keys and blocks on the first, what a free needs on the second.
 * `val` is the block's descriptor with two flags in its low bits
 * (descriptors are 64-byte aligned). */
#define INFINIRT__HB_SLOTS 4u
typedef struct {
    uintptr_t key[INFINIRT__HB_SLOTS];
    uintptr_t val[INFINIRT__HB_SLOTS];  /* descriptor | HW_* */
    size_t req[INFINIRT__HB_SLOTS];     /* bytes requested */
    size_t size[INFINIRT__HB_SLOTS];    /* bytes of the block */
} infinirt__hbkt;
_Static_assert(sizeof(infinirt__hbkt) == 128, "a hash bucket is two cache lines");
/* The block is the head of a large segment it spans, and that segment keeps
 * no block-start bitmap: freeing it touches no neighbour, and its
 * descriptor's segst is known without reading it (see pool_free). */
#define INFINIRT__HW_WHOLE ((uintptr_t)1)
/* ... and its segment is on the arena's empty stack (INFINIRT__BLK_STACKED);
 * every path that takes a segment with a live block off the stack clears
 * this bit (infinirt__empty_drop). */
#define INFINIRT__HW_STACKED ((uintptr_t)2)
#define INFINIRT__HW_FLAGS ((uintptr_t)3)
/* An insertion looks this many buckets past its home bucket for a free
 * slot before it grows the table (see infinirt__ht_put_slow). */
#define INFINIRT__HB_REACH_MAX 8u

typedef struct {
    void *key; /* the stream of the frees queued here (or INFINIRT__POOL_SYNC) */
    infinirt__blk *head, *tail;
} infinirt__pq;

/* A spinlock with an epoch: every holder bumps the epoch when it takes the
 * lock, so a reader that copied something while holding it can later tell,
 * with one load and no lock, that nobody has held it since (and so that
 * nothing it protects has changed). */
typedef struct {
    atomic_int held;
    atomic_uint_fast64_t epoch;
} infinirt__spinlock;

struct infinirt__arena {
    infinirt__spinlock lock;
    infinirt__pool *pool;
    void *stream;
    bool in_use;
    /* hot */
    infinirt__blk *quick[INFINIRT__QUICK_MAX + 1];
    size_t quick_bytes;
    uint64_t quick_map[INFINIRT__QUICK_MAX / 64]; /* bit n-1: quick[n] not empty */
    infinirt__hbkt *ht;
    size_t ht_mask, ht_count; /* buckets - 1; entries */
    unsigned ht_shift;
    size_t ht_reach; /* furthest any entry lies past its home bucket */
    infinirt__blk *spare; /* unused descriptors */
    void *chunks;         /* descriptor chunks, freed with the pool */
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
};

struct infinirt__pool {
    infinirt__pool_backend be;
    infinirt__alloc_config cfg;
    size_t g; /* granularity */
    unsigned gshift;
    size_t max_req;     /* largest request: max_alloc_size floored to g, and total_memory */
    size_t small_max;   /* 0 = no small segments */
    size_t small_seg;
    size_t max_split;   /* SIZE_MAX = no limit */
    unsigned quick_max; /* granules; 0 = no quick lists */
    bool keep_empty;    /* segments that empty stay cached (no release_on_free, no max_cached) */
    pthread_mutex_t mu; /* arena table */
    infinirt__arena **arenas;
    unsigned narenas, caparenas;
    atomic_int multi; /* more than one arena has been in use */
    /* pool-wide counters, on their own cache line */
    _Alignas(64) atomic_size_t reserved;
    atomic_size_t peak_reserved, segments, raw_allocs, raw_frees, retries, oom;
    atomic_size_t pub_total, pub_peak;
    atomic_size_t capacity; /* for strict mode; 0 = unknown */
};

/* Bumped whenever a thread-local cache entry may have become stale (a pool
 * destroyed, a stream retired). */
extern atomic_uint_fast64_t infinirt__alloc_gen;

/* Zeroed memory on cache lines of its own: what one arena's thread writes
 * must never share a line with another arena's (false sharing would serialise
 * threads working on different streams). */
static inline void *infinirt__line_calloc(size_t size)
{
    size = (size + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, size);
    if (p != NULL)
        memset(p, 0, size);
    return p;
}

/* -------------------------------------------------------------- spinlock */

static inline void infinirt__spin_lock_slow(atomic_int *l)
{
    for (unsigned n = 0;; n++) {
        if (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
            !atomic_exchange_explicit(l, 1, memory_order_acquire))
            return;
        if (n < 128) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
}

static inline void infinirt__spin_lock(infinirt__spinlock *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->held, 1, memory_order_acquire), 0))
        infinirt__spin_lock_slow(&l->held);
    /* Only the holder writes the epoch: a load and a store, no locked
     * instruction.  The store comes before every change the holder makes,
     * so whoever learns of a change (a free, by the thread that made it or
     * through the application's own synchronisation with it) also sees the
     * new epoch. */
    atomic_store_explicit(&l->epoch, atomic_load_explicit(&l->epoch, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* Take the lock to read only: the epoch stays, so what other threads
 * remember of the protected data stays valid. */
static inline void infinirt__spin_lock_read(infinirt__spinlock *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->held, 1, memory_order_acquire), 0))
        infinirt__spin_lock_slow(&l->held);
}

static inline void infinirt__spin_unlock(infinirt__spinlock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

/* Whether l is not held (a hint for callers that skip busy locks). */
static inline bool infinirt__spin_free(infinirt__spinlock *l)
{
    return atomic_load_explicit(&l->held, memory_order_relaxed) == 0;
}

/* ---------------------------------------------------------- alloc_bins.c */

infinirt__blk *infinirt__blk_new(infinirt__arena *a);
static inline void infinirt__blk_put(infinirt__arena *a, infinirt__blk *b)
{
    if ((uintptr_t)b == (b->segst & ~INFINIRT__BLK_FLAGS))
        return; /* a segment's head: lives in the segment struct (offset 0) */
    b->next = a->spare;
    a->spare = b;
}
void infinirt__blk_chunks_free(infinirt__arena *a);

static inline infinirt__bins *infinirt__blk_bins(infinirt__arena *a, const infinirt__blk *b)
{
    return (b->segst & INFINIRT__BLK_LARGE) ? &a->large : &a->small;
}
void infinirt__bins_insert(infinirt__bins *bins, infinirt__blk *b, unsigned gshift);
/* The same for a block of n granules, without reading its size. */
void infinirt__bins_insert_n(infinirt__bins *bins, infinirt__blk *b, size_t n);
void infinirt__bins_remove(infinirt__bins *bins, infinirt__blk *b, unsigned gshift);
/* A free block of at least n granules from the smallest class holding one
 * (its head checked first in the request's own class), or NULL. */
infinirt__blk *infinirt__bins_find(const infinirt__bins *bins, size_t n, unsigned gshift);
size_t infinirt__bins_largest(const infinirt__bins *bins);

/* Take free block b out of the bins, cut to n granules when `split` (the
 * rest back in the bins).  Without host memory for a descriptor the whole
 * block is handed out. */
infinirt__blk *infinirt__blk_take(infinirt__arena *a, infinirt__blk *b, size_t n, bool split);
/* Make b FREE: coalesce with free neighbours, into the bins; a segment that
 * becomes empty goes on the empty stack. */
void infinirt__blk_release(infinirt__arena *a, infinirt__blk *b);
void infinirt__quick_flush(infinirt__arena *a);
static inline void infinirt__quick_push(infinirt__arena *a, infinirt__blk *b, size_t n)
{
    infinirt__blk_set_state(b, INFINIRT__BLK_QUICK);
    b->prev = NULL;
    b->next = a->quick[n];
    if (b->next != NULL)
        b->next->prev = b;
    else
        a->quick_map[(n - 1) / 64] |= 1ull << ((n - 1) % 64);
    a->quick[n] = b;
    a->quick_bytes += b->size;
}
/* Take b (in quick list n) out of it. */
static inline void infinirt__quick_unlink(infinirt__arena *a, infinirt__blk *b, size_t n)
{
    if (b->prev != NULL)
        b->prev->next = b->next;
    else if ((a->quick[n] = b->next) == NULL)
        a->quick_map[(n - 1) / 64] &= ~(1ull << ((n - 1) % 64));
    if (b->next != NULL)
        b->next->prev = b->prev;
    a->quick_bytes -= b->size;
}
void infinirt__empty_push(infinirt__arena *a, infinirt__seg *s);
void infinirt__empty_drop(infinirt__arena *a, infinirt__seg *s);

/* Hash of live (USED) blocks by start address.  Buckets of four entries,
 * one cache line each, at most half full; an entry goes in the first bucket
 * from its home with a free slot, and lookups visit buckets home ..
 * home + ht_reach.  At this load nearly every entry is in its home bucket,
 * so a lookup is one line and four compares made without branches: the
 * mispredicted branches of a linear-probing loop cost more than the probes
 * once thousands of blocks are live.  A deletion just empties its slot. */
int infinirt__ht_init(infinirt__arena *a);
int infinirt__ht_grow(infinirt__arena *a);
static inline size_t infinirt__ht_slot(const infinirt__arena *a, uintptr_t key)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> a->ht_shift);
}
/* Bit i set: slot i of bucket b holds key (key 0: is empty). */
static inline unsigned infinirt__hb_match(const infinirt__hbkt *b, uintptr_t key)
{
    return (unsigned)(b->key[0] == key) | (unsigned)(b->key[1] == key) << 1 |
           (unsigned)(b->key[2] == key) << 2 | (unsigned)(b->key[3] == key) << 3;
}
/* Would `more` entries beyond the current ones exceed the load? */
static inline bool infinirt__ht_full(const infinirt__arena *a, size_t more)
{
    return (a->ht_count + more) * 2 > (a->ht_mask + 1) * INFINIRT__HB_SLOTS;
}
/* Fill free slot i of bucket k with an entry. */
static inline void infinirt__ht_fill(infinirt__arena *a, infinirt__hbkt *k, unsigned i, uintptr_t key, uintptr_t val,
                                     size_t req, size_t size)
{
    k->key[i] = key;
    k->val[i] = val;
    k->req[i] = req;
    k->size[i] = size;
    a->ht_count++;
}
/* Place the entry (key, val, req, size) in the first bucket from its home
 * with room; false if that is more than `limit` buckets away. */
static inline bool infinirt__ht_place(infinirt__arena *a, uintptr_t key, uintptr_t val, size_t req, size_t size,
                                      size_t limit)
{
    size_t h = infinirt__ht_slot(a, key);
    for (size_t d = 0; d <= limit; d++) {
        infinirt__hbkt *k = &a->ht[(h + d) & a->ht_mask];
        unsigned m = infinirt__hb_match(k, 0);
        if (__builtin_expect(m != 0, 1)) {
            infinirt__ht_fill(a, k, (unsigned)__builtin_ctz(m), key, val, req, size);
            if (d > a->ht_reach)
                a->ht_reach = d;
            return true;
        }
    }
    return false;
}
/* The hash value of live block b: its descriptor and flags. */
static inline uintptr_t infinirt__ht_val(const infinirt__blk *b)
{
    uintptr_t v = (uintptr_t)b;
    if (b->pphys == NULL && b->nphys == NULL &&
        (b->segst & (INFINIRT__BLK_LARGE | INFINIRT__BLK_BITS)) == INFINIRT__BLK_LARGE)
        v |= INFINIRT__HW_WHOLE | ((b->segst & INFINIRT__BLK_STACKED) ? INFINIRT__HW_STACKED : 0);
    return v;
}
static inline infinirt__blk *infinirt__ht_blk(uintptr_t val)
{
    return (infinirt__blk *)(val & ~(uintptr_t)INFINIRT__HW_FLAGS);
}
/* The slow part of ht_put: a full table or a full home bucket. */
int infinirt__ht_put_slow(infinirt__arena *a, uintptr_t key, uintptr_t val, size_t req, size_t size);
/* Insert live block b (its req set).  Fails (-1) only when the load calls
 * for a bigger table and there is no memory for it: with room made by the
 * caller it cannot fail. */
static inline int infinirt__ht_put(infinirt__arena *a, infinirt__blk *b)
{
    uintptr_t key = b->addr, val = infinirt__ht_val(b);
    infinirt__hbkt *k = &a->ht[infinirt__ht_slot(a, key)];
    unsigned m = infinirt__hb_match(k, 0);
    if (__builtin_expect(m == 0 || infinirt__ht_full(a, 1), 0))
        return infinirt__ht_put_slow(a, key, val, b->req, b->size);
    infinirt__ht_fill(a, k, (unsigned)__builtin_ctz(m), key, val, b->req, b->size);
    return 0;
}
/* Bucket and slot of key, or NULL. */
static inline infinirt__hbkt *infinirt__ht_find(const infinirt__arena *a, uintptr_t key, unsigned *slot)
{
    size_t h = infinirt__ht_slot(a, key);
    infinirt__hbkt *k = &a->ht[h];
    unsigned m = infinirt__hb_match(k, key);
    if (__builtin_expect(m != 0, 1)) {
        *slot = (unsigned)__builtin_ctz(m);
        return k;
    }
    for (size_t d = 1; d <= a->ht_reach; d++) {
        k = &a->ht[(h + d) & a->ht_mask];
        if ((m = infinirt__hb_match(k, key)) != 0) {
            *slot = (unsigned)__builtin_ctz(m);
            return k;
        }
    }
    return NULL;
}
static inline infinirt__blk *infinirt__ht_get(const infinirt__arena *a, uintptr_t key)
{
    unsigned i;
    infinirt__hbkt *k = infinirt__ht_find(a, key, &i);
    return k != NULL ? infinirt__ht_blk(k->val[i]) : NULL;
}
/* Take key's entry out: its block (NULL if absent), with its req, size and
 * HW_* flags. */
static inline infinirt__blk *infinirt__ht_take(infinirt__arena *a, uintptr_t key, size_t *req, size_t *size,
                                               unsigned *flags)
{
    unsigned i;
    infinirt__hbkt *k = infinirt__ht_find(a, key, &i);
    if (k == NULL) {
        *req = *size = 0;
        *flags = 0;
        return NULL;
    }
    *req = k->req[i];
    *size = k->size[i];
    *flags = (unsigned)(k->val[i] & INFINIRT__HW_FLAGS);
    k->key[i] = 0; /* the rest of the entry is never read again */
    a->ht_count--;
    return infinirt__ht_blk(k->val[i]);
}
static inline infinirt__blk *infinirt__ht_del(infinirt__arena *a, uintptr_t key)
{
    size_t req, size;
    unsigned flags;
    return infinirt__ht_take(a, key, &req, &size, &flags);
}
/* Start fetching what a free of key reads in the hash.  Called before the
 * arena's lock is taken, so the table and its shift are read atomically
 * (ht_alloc stores them so) and may belong to two tables during a grow:
 * the address is then only a useless hint - a prefetch never faults - and
 * is computed as an integer, so no out-of-bounds pointer is formed. */
static inline void infinirt__ht_prefetch(const infinirt__arena *a, uintptr_t key)
{
    uintptr_t t = (uintptr_t)__atomic_load_n(&a->ht, __ATOMIC_RELAXED);
    unsigned shift = __atomic_load_n(&a->ht_shift, __ATOMIC_RELAXED);
    uintptr_t k = t + (uintptr_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> shift) * sizeof(infinirt__hbkt);
    __builtin_prefetch((const void *)k);
    __builtin_prefetch((const void *)(k + 64));
}

/* Block-start bitmap of a segment, for interior-pointer lookups.  Built by
 * the first lookup that would walk many blocks (every block then carries
 * INFINIRT__BLK_BITS), so segments never looked into cost nothing. */
int infinirt__seg_bits_build(infinirt__seg *s, unsigned gshift);
void infinirt__seg_bit_set(infinirt__seg *s, size_t unit);
void infinirt__seg_bit_clear(infinirt__seg *s, size_t unit);
/* Start of the block holding p (inside s); builds the bitmap when useful. */
uintptr_t infinirt__seg_block_start(infinirt__seg *s, uintptr_t p, unsigned gshift);

/* ----------------------------------------------------------- alloc_dir.c */

/* A 64-byte aligned segment struct with arena == NULL. */
infinirt__seg *infinirt__seg_struct_new(void);
void infinirt__dir_insert(infinirt__seg *s);
/* Remove s from the directory and recycle its struct. */
void infinirt__dir_remove(infinirt__seg *s);
/* Lock the arena owning the segment holding p and return it, with the
 * segment in *seg_out; NULL when no attached segment holds p. */
infinirt__arena *infinirt__dir_lock_owner(uintptr_t p, infinirt__seg **seg_out, bool read_only);
infinirt__pool *infinirt__dir_pool_of(uintptr_t p);

/* ----------------------------------------------------------- alloc_seg.c */

/* A raw allocation, accounted and in the directory, attached to nothing. */
infinirt__seg *infinirt__seg_create(infinirt__pool *pool, void *p, size_t size, bool large);
/* Give a detached segment back to the backend (releasing its fence). */
void infinirt__seg_destroy(infinirt__pool *pool, infinirt__seg *s);
/* Attach a detached segment to arena a (locked) as one free block. */
infinirt__blk *infinirt__seg_attach(infinirt__arena *a, infinirt__seg *s);
/* Detach a segment none of whose blocks is USED or PENDING. */
void infinirt__seg_detach(infinirt__arena *a, infinirt__seg *s);
/* Is the segment's latest same-stream free complete?  Releases the fence. */
bool infinirt__seg_fence_done(infinirt__arena *a, infinirt__seg *s);

int infinirt__pending_add(infinirt__arena *a, infinirt__blk *b, void *key, infinirt__fence *f);
/* Blocks whose fences completed become free; returns how many. */
size_t infinirt__pending_poll(infinirt__arena *a);

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
/* Move everything `from` holds into `to` (caller holds pool->mu, no arena
 * lock).  Returns 0, or -1 (nothing moved) when out of host memory. */
int infinirt__arena_merge_into(infinirt__arena *to, infinirt__arena *from);
/* Copy up to max arenas from index `start` (arenas are only ever appended,
 * so callers walk them all in chunks); returns how many. */
unsigned infinirt__arenas_snapshot(infinirt__pool *pool, infinirt__arena **out, unsigned max, unsigned start);

/* --------------------------------------------------------------- alloc.c */

infiniStatus_t infinirt__raw_segment(infinirt__pool *pool, size_t size, bool large, infinirt__seg **out);
/* The fence a free on `stream` needs (*out NULL: nothing pending).  Fails
 * only when no fence could be had and the device could not be
 * synchronised instead: the free must then fail and change nothing. */
infiniStatus_t infinirt__take_fence(infinirt__pool *pool, void *stream, infinirt__fence **out);
/* Wait until every fence taken so far has completed; false if none was
 * pending or the wait failed (then nothing may be assumed complete). */
bool infinirt__wait_all(infinirt__pool *pool);
void infinirt__log_oom(infinirt__pool *pool, size_t size);

/* --------------------------------------------------------- alloc_query.c */

infiniStatus_t infinirt__passthrough_alloc(infinirt__pool *pool, size_t size, void **out);
infiniStatus_t infinirt__passthrough_free(infinirt__pool *pool, uintptr_t key, void *stream);

#endif /* INFINIRT_LOADER_ALLOC_INT_H_ */
