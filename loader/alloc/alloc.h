/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc.h - the loader's caching allocator (internal; not installed).
 *
 * One pool per device and one per plugin for host (MallocHost) memory.  A pool
 * obtains raw segments from its backend, rounds requests to a granularity,
 * splits and merges blocks inside segments, and keeps freed blocks cached so
 * that most allocations never reach the plugin.
 *
 * Stream order.  The pool never sees plugin streams or events.  It keys
 * per-stream state by an opaque `stream` pointer (NULL = the device's default
 * stream) and asks the loader, through the backend's fence callbacks, for a
 * fence: a marker that completes once the work queued so far on one stream
 * (or on every stream that may touch the pool) has completed.
 *  - infinirt__pool_free(p, stream): p is reusable at once by allocations on
 *    the same stream; by other streams once the fence taken at free time has
 *    completed.
 *  - infinirt__pool_free_sync(p): reusable by nobody until the fence over
 *    all streams has completed (what cudaFree guarantees).
 * A NULL fence from fence_take means "nothing pending": reusable at once.
 * A synchronous allocation (infinirtMalloc, MallocHost) is made on the key
 * INFINIRT__POOL_SYNC, which no free is ordered on: its memory may be used
 * at once by any stream, so it never gets a block that a free on some
 * stream - the NULL stream included - left behind queued work.
 *
 * Ownership.  A process-wide directory maps any pointer inside a live
 * segment to its pool, so free and lookup need no pool argument.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef INFINIRT_LOADER_ALLOC_H_
#define INFINIRT_LOADER_ALLOC_H_

#include "infinirt.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct infinirt__pool infinirt__pool;
typedef struct infinirt__arena infinirt__arena; /* alloc_arena.h */
typedef struct infinirt__fence infinirt__fence; /* opaque, loader-defined */

typedef struct infinirt__pool_backend {
    void *ctx; /* passed back to every callback */
    /* Raw memory.  raw_alloc returns INFINI_STATUS_OUT_OF_MEMORY when full. */
    infiniStatus_t (*raw_alloc)(void *ctx, size_t size, void **ptr);
    infiniStatus_t (*raw_free)(void *ctx, void *ptr);
    /* Fences.  fence_take: over the work queued so far on one stream (an
     * opaque stream key, NULL = the default stream); fence_take_all: on
     * every stream that may use the pool's memory.  Both set *out = NULL
     * when nothing is pending. */
    infiniStatus_t (*fence_take)(void *ctx, void *stream, infinirt__fence **out);
    infiniStatus_t (*fence_take_all)(void *ctx, infinirt__fence **out);
    /* *done = 1 once complete.  Never blocks. */
    infiniStatus_t (*fence_query)(void *ctx, infinirt__fence *fence, int *done);
    infiniStatus_t (*fence_wait)(void *ctx, infinirt__fence *fence);
    void (*fence_release)(void *ctx, infinirt__fence *fence);
    /* A status's name for the pool's log lines (the loader gives
     * infinirtGetErrorName; a program that links the allocator without the
     * loader's API gives its own). */
    const char *(*status_name)(infiniStatus_t status);
    /* Optional (NULL: none).  The backend promises that while the word it
     * points to reads 0, fence_take_all would give no fence, nor would
     * fence_take for any stream key the pool is given: a free then makes
     * no call.  (The loader points it at the `peers` word of a
     * DONE_AT_RETURN device, whose pool is only given its own device's
     * streams, fence.c.) */
    const atomic_uint_fast64_t *quiet_while_zero;
    size_t max_alloc_size; /* largest raw allocation; 0 = no limit */
    size_t total_memory;   /* device memory size, for segment sizing; 0 = unknown */
    char label[64];        /* "cpu:0", "cuda host" - for log lines */
    int device_type;       /* infiniDevice_t, reported by lookup */
    int device_id;         /* -1 for host pools */
    /* Optional (NULL: none): told what a trace shows (INFINIRT__POOL_NOTE_*,
     * the bytes and the segment where there is one), on the thread that
     * did it and with no allocator lock held. */
    void (*note)(infinirt__pool *pool, int what, size_t bytes, const void *ptr);
} infinirt__pool_backend;

/* What infinirt__pool_backend.note is told. */
enum {
    INFINIRT__POOL_NOTE_RESERVE,   /* a segment obtained from the backend */
    INFINIRT__POOL_NOTE_RELEASE,   /* a segment given back */
    INFINIRT__POOL_NOTE_TRIM,      /* the cache released, bytes in all */
    INFINIRT__POOL_NOTE_OOM_RETRY, /* the backend refused bytes: release the cache and retry */
};

typedef struct {
    int enabled;             /* 0: pass-through, every alloc is a raw alloc */
    size_t granularity;      /* request rounding, power of two (default 512) */
    size_t max_cached_bytes; /* free bytes kept cached beyond which free
                                 segments are released; 0 = no cap */
    size_t max_split_size;   /* free blocks larger than this are not split
                                 for smaller requests; 0 = no limit */
    int release_on_free;     /* 1: give fully free segments back at once */
} infinirt__alloc_config;

void infinirt__alloc_config_default(infinirt__alloc_config *cfg);

/* Create a pool.  *backend is copied.  Returns SUCCESS or OUT_OF_MEMORY. */
infiniStatus_t infinirt__pool_create(const infinirt__pool_backend *backend, const infinirt__alloc_config *cfg,
                                     infinirt__pool **out);
/* Release every segment (waiting for fences) and the pool.  Live blocks are
 * released too.  Only at shutdown or in tests. */
void infinirt__pool_destroy(infinirt__pool *pool);

/* The stream key of a synchronous allocation (infinirtMalloc, MallocHost),
 * whose memory any stream may use at once, non-blocking ones included.  It
 * is not the NULL stream's key: a block FreeAsync'd on the NULL stream is
 * reusable at once by later allocations on the NULL stream only (their
 * work is ordered after the free's), and an allocation on this key gets it
 * only once the free's fence has completed.  No free is ordered on this
 * key, and no stream key equals it (nothing lives at address 16); its
 * arena is arena 0, which a retired stream's blocks join. */
#define INFINIRT__POOL_SYNC ((void *)(uintptr_t)16)

/* Allocate `size` (> 0) bytes for use on `stream` (NULL = default stream,
 * INFINIRT__POOL_SYNC = by any stream at once).
 * Returns SUCCESS; OUT_OF_MEMORY after releasing cache and retrying, with one
 * log line giving requested, allocated, reserved and largest free bytes;
 * OUT_OF_MEMORY at once, releasing nothing, when size exceeds total_memory;
 * BAD_PARAM when size exceeds max_alloc_size. */
infiniStatus_t infinirt__pool_alloc(infinirt__pool *pool, size_t size, void *stream, void **out);

/* Which pools a free accepts the block from: the owner is checked in the
 * same lookup that finds the block (rejecting Free of MallocHost memory and
 * FreeHost of device memory without a second lookup). */
typedef enum {
    INFINIRT__WANT_ANY,    /* any pool */
    INFINIRT__WANT_POOL,   /* only `pool` */
    INFINIRT__WANT_DEVICE, /* any pool whose backend device_id is >= 0 */
    INFINIRT__WANT_HOST,   /* any pool whose backend device_id is < 0 */
} infinirt__want_kind;
typedef struct {
    infinirt__want_kind kind;
    const infinirt__pool *pool; /* INFINIRT__WANT_POOL only */
} infinirt__pool_want;

static inline infinirt__pool_want infinirt__want_any(void)
{
    return (infinirt__pool_want){INFINIRT__WANT_ANY, NULL};
}
static inline infinirt__pool_want infinirt__want_pool(const infinirt__pool *pool)
{
    return (infinirt__pool_want){INFINIRT__WANT_POOL, pool};
}
static inline infinirt__pool_want infinirt__want_device(void)
{
    return (infinirt__pool_want){INFINIRT__WANT_DEVICE, NULL};
}
static inline infinirt__pool_want infinirt__want_host(void)
{
    return (infinirt__pool_want){INFINIRT__WANT_HOST, NULL};
}

/* Free the block starting at ptr, in whichever pool owns it (one `want`
 * accepts), ordered on `stream`: the stream key of a FreeAsync.
 * Returns SUCCESS; BAD_PARAM for unknown, interior or already-freed pointers
 * and for a block of a pool `want` does not accept (nothing changes). */
infiniStatus_t infinirt__pool_free(void *ptr, void *stream, infinirt__pool_want want);
/* The same for a synchronous free (Free, FreeHost): ordered on every stream
 * that may use the pool's memory. */
infiniStatus_t infinirt__pool_free_sync(void *ptr, infinirt__pool_want want);

/* The stream `stream` is being destroyed (its work has completed): move its
 * private cached blocks to the shared bins. */
void infinirt__pool_stream_retired(infinirt__pool *pool, void *stream);

typedef struct {
    infinirt__pool *pool;
    void *owner;                /* the pool's backend ctx (the loader's device, or plugin for host pools) */
    int device_type, device_id; /* from the pool's backend */
    void *block_base;           /* start of the live block containing ptr */
    size_t block_size;          /* the size requested for that block */
    size_t offset;              /* ptr - block_base */
} infinirt__ptr_info;

/* Every segment ever given to a pool lies in [infinirt__dir_lo,
 * infinirt__dir_hi) (alloc_dir.c: only widened, under the directory's
 * lock, before any pointer into the segment is handed out). */
extern __attribute__((visibility("hidden"))) atomic_uintptr_t infinirt__dir_lo, infinirt__dir_hi;

/* The page directory (alloc_dir.c): for each 4 KiB page of the addresses
 * below 2^48, which of its bytes live segments may cover, as at most two
 * intervals of offsets - exact while no more than two segments share the
 * page, a superset otherwise, never less than the truth.  A radix tree of
 * four levels of 512 slots, as the MMU's page tables (a 4 KiB node; a
 * level-1 slot spans 2 MiB, so a 2 MiB-aligned segment needs no leaf):
 * the top level here; a slot of an upper level 0 (no live segment in its
 * range), INFINIRT__PD_FULL (every page of its range may be covered) or a
 * node; a leaf slot is one page's intervals, 0 when no segment touches
 * it.  Written under the directory's lock, read with no lock: nodes are
 * never freed, and a segment's pages are marked before any pointer into
 * it is handed out. */
#define INFINIRT__PD_BITS 9u
#define INFINIRT__PD_SLOTS (1u << INFINIRT__PD_BITS)
#define INFINIRT__PD_FULL ((uint64_t)1)
#define INFINIRT__PD_LIMIT ((uint64_t)1 << 48) /* addresses from here: the span check only */
typedef struct infinirt__pd_node {
    _Atomic(uint64_t) e[INFINIRT__PD_SLOTS];
} infinirt__pd_node;
extern __attribute__((visibility("hidden"))) infinirt__pd_node infinirt__pd_top;

/* A leaf slot: intervals [a0, b0) and [a1, b1) of offsets 0..4096 in the
 * page, 13 bits each from bit 0 (a0, b0, a1, b1), empty ones [0, 0). */
static inline uint64_t infinirt__pd_leaf(unsigned a0, unsigned b0, unsigned a1, unsigned b1)
{
    return (uint64_t)a0 | (uint64_t)b0 << 13 | (uint64_t)a1 << 26 | (uint64_t)b1 << 39;
}

/* Whether leaf slot e may cover offset off of its page. */
static inline bool infinirt__pd_leaf_holds(uint64_t e, unsigned off)
{
    unsigned a0 = (unsigned)e & 0x1fffu, b0 = (unsigned)(e >> 13) & 0x1fffu;
    unsigned a1 = (unsigned)(e >> 26) & 0x1fffu, b1 = (unsigned)(e >> 39) & 0x1fffu;
    return off - a0 < b0 - a0 || off - a1 < b1 - a1;
}

/* The slot for address q, shifted right by `shift`, in node v. */
static inline uint64_t infinirt__pd_slot(uint64_t v, uint64_t q, unsigned shift)
{
    const infinirt__pd_node *n = (const infinirt__pd_node *)(uintptr_t)v;
    return atomic_load_explicit(&n->e[(q >> shift) & (INFINIRT__PD_SLOTS - 1)], memory_order_acquire);
}

/* Whether p lies outside every live segment of every pool (no lock): a
 * host buffer on the stack, the heap or an mmap, the other side of most
 * copies, wherever it lies among the segments.  False only means that p
 * may be the allocator's: a lookup under the directory's lock decides. */
static inline bool infinirt__dir_outside(uintptr_t p)
{
    if (p < atomic_load_explicit(&infinirt__dir_lo, memory_order_acquire) ||
        p >= atomic_load_explicit(&infinirt__dir_hi, memory_order_acquire))
        return true;
    uint64_t q = (uint64_t)p;
    if (q >= INFINIRT__PD_LIMIT)
        return false;
    uint64_t v = atomic_load_explicit(&infinirt__pd_top.e[q >> 39], memory_order_acquire);
    if (v <= INFINIRT__PD_FULL)
        return v == 0;
    v = infinirt__pd_slot(v, q, 30);
    if (v <= INFINIRT__PD_FULL)
        return v == 0;
    v = infinirt__pd_slot(v, q, 21);
    if (v <= INFINIRT__PD_FULL)
        return v == 0;
    v = infinirt__pd_slot(v, q, 12);
    /* A page no segment touches, the usual answer, needs no decoding. */
    return v == 0 || !infinirt__pd_leaf_holds(v, (unsigned)q & 4095u);
}

/* Find the live block containing ptr (interior pointers too).
 * Returns 1 and fills *info when found, 0 otherwise. */
int infinirt__pool_lookup(const void *ptr, infinirt__ptr_info *info);
/* The same past this thread's remembered blocks: the look-up under the
 * owning arena's lock (which remembers what it finds). */
int infinirt__pool_lookup_slow(const void *ptr, infinirt__ptr_info *info);

/* This thread's last two blocks found by infinirt__pool_lookup, with what
 * tells whether each still holds (alloc_pool_lookup.c): the segment's
 * owning arena and that arena's lock epoch as they were, and the
 * allocator's generation.  A block changes only under its arena's lock,
 * which moves the epoch, so an entry whose three values are unchanged
 * names a block still live with the same size.  Here so that the copy
 * paths answer a hit inline, with no call. */
typedef struct {
    uintptr_t start;                             /* 0: empty */
    size_t req;                                  /* the block's requested size */
    _Atomic(infinirt__arena *) const *seg_arena; /* &segment->arena */
    infinirt__arena *arena;                      /* its value then */
    const atomic_uint_fast64_t *epoch;           /* &arena->lock.epoch */
    uint_fast64_t epoch_then;
    uint_fast64_t gen;
    infinirt__pool *pool;
    void *owner;
    int device_type, device_id;
} infinirt__lookup_hit;
extern _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__lookup_hit infinirt__tl_hit[2];
extern _Thread_local __attribute__((tls_model("initial-exec"))) unsigned infinirt__tl_hit_last;
/* Bumped whenever a thread-local cache entry may have become stale (a pool
 * destroyed, a stream retired). */
extern __attribute__((visibility("hidden"))) atomic_uint_fast64_t infinirt__alloc_gen;

/* Whether entry h still stands, with the allocator's generation `gen`
 * already read: compared first, since a changed generation may mean a pool
 * gone, whose segment the entry points into. */
static inline bool infinirt__lookup_hit_stands(const infinirt__lookup_hit *h, uint_fast64_t gen)
{
    return gen == h->gen && atomic_load_explicit(h->seg_arena, memory_order_acquire) == h->arena &&
           atomic_load_explicit(h->epoch, memory_order_acquire) == h->epoch_then;
}

/* Whether a device side of size bytes at offset off (< h->req) of entry
 * h's block fits in the block, and h is a device pool's. */
static inline bool infinirt__lookup_hit_fits_device(const infinirt__lookup_hit *h, size_t off, size_t size)
{
    return size <= h->req - off && h->device_id >= 0;
}

static inline void infinirt__lookup_hit_info(const infinirt__lookup_hit *h, uintptr_t p, infinirt__ptr_info *info)
{
    info->pool = h->pool;
    info->owner = h->owner;
    info->device_type = h->device_type;
    info->device_id = h->device_id;
    info->block_base = (void *)h->start;
    info->block_size = h->req;
    info->offset = p - h->start;
}

/* Whether entry h holds p (at offset *off) and still stands. */
static inline __attribute__((always_inline)) bool infinirt__lookup_hit_holds(const infinirt__lookup_hit *h,
                                                                             uintptr_t p, size_t *off)
{
    *off = p - h->start;
    return *off < h->req &&
           infinirt__lookup_hit_stands(h, atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire));
}

/* The one of this thread's two remembered blocks that holds p and still
 * stands, with p's offset in it in *off; NULL when neither does.  The one
 * used last is tried first, and only a hit on the other one stores which
 * was used last. */
static inline __attribute__((always_inline)) const infinirt__lookup_hit *infinirt__lookup_hit_at(uintptr_t p,
                                                                                                 size_t *off)
{
    unsigned k = infinirt__tl_hit_last;
    const infinirt__lookup_hit *h = &infinirt__tl_hit[k];
    /* Kept in a register: the compiler would otherwise work the address
     * out again from k after each check. */
    __asm__("" : "+r"(h));
    if (!infinirt__lookup_hit_holds(h, p, off)) {
        h = &infinirt__tl_hit[k ^ 1u];
        __asm__("" : "+r"(h));
        if (!infinirt__lookup_hit_holds(h, p, off))
            return NULL;
        infinirt__tl_hit_last = k ^ 1u;
    }
    return h;
}

/* infinirt__lookup_hit_at without the offset. */
static inline const infinirt__lookup_hit *infinirt__lookup_hit_find(uintptr_t p)
{
    size_t off;
    return infinirt__lookup_hit_at(p, &off);
}

/* infinirt__lookup_hit_at of a device side: the entry, if its block has
 * room for size bytes from p and is a device pool's
 * (infinirt__lookup_hit_fits_device); else NULL. */
static inline __attribute__((always_inline)) const infinirt__lookup_hit *infinirt__lookup_hit_device(uintptr_t p,
                                                                                                     size_t size)
{
    size_t off;
    const infinirt__lookup_hit *h = infinirt__lookup_hit_at(p, &off);
    return h != NULL && infinirt__lookup_hit_fits_device(h, off, size) ? h : NULL;
}

/* Both sides of a copy between two device blocks at once: the remembered
 * block that holds a (*ha) and the one that holds b (*hb), which may be
 * the same, each still standing; false when either side is in neither.
 * The same answers as two calls of infinirt__lookup_hit_find (each side
 * takes whichever entry holds it and still stands, as find does when the
 * other entry is a stale copy of the same block), with the thread-local
 * entries addressed and the generation read once, and an entry both
 * sides share checked once.  The block of b becomes the one used last, as
 * after find(a) then find(b). */
static inline __attribute__((always_inline)) bool
infinirt__lookup_hit_pair(uintptr_t a, uintptr_t b, const infinirt__lookup_hit **ha, const infinirt__lookup_hit **hb)
{
    const infinirt__lookup_hit *h = infinirt__tl_hit;
    uint_fast64_t gen = atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire);
    int st0 = -1, st1 = -1; /* each entry's check, once made */
    unsigned ia, ib;
    if (a - h[0].start < h[0].req && (st0 = infinirt__lookup_hit_stands(&h[0], gen)))
        ia = 0;
    else if (a - h[1].start < h[1].req && (st1 = infinirt__lookup_hit_stands(&h[1], gen)))
        ia = 1;
    else
        return false;
    if (b - h[0].start < h[0].req && (st0 >= 0 ? st0 : (st0 = infinirt__lookup_hit_stands(&h[0], gen))))
        ib = 0;
    else if (b - h[1].start < h[1].req && (st1 >= 0 ? st1 : infinirt__lookup_hit_stands(&h[1], gen)))
        ib = 1;
    else
        return false;
    infinirt__tl_hit_last = ib;
    *ha = &h[ia];
    *hb = &h[ib];
    return true;
}

/* infinirt__pool_lookup, with a hit on either of this thread's last two
 * blocks answered here, with no call. */
static inline __attribute__((always_inline)) int infinirt__pool_lookup_inline(const void *ptr,
                                                                              infinirt__ptr_info *info)
{
    const infinirt__lookup_hit *h = infinirt__lookup_hit_find((uintptr_t)ptr);
    if (__builtin_expect(h != NULL, 1)) {
        infinirt__lookup_hit_info(h, (uintptr_t)ptr, info);
        return 1;
    }
    return infinirt__pool_lookup_slow(ptr, info);
}
/* Whether ptr lies in a segment some pool holds, in a live block or not.
 * Where infinirt__pool_lookup found no live block, 1 means freed or cached
 * memory (or a block's rounding): the allocator's, never someone else's. */
int infinirt__pool_holds(const void *ptr);

void infinirt__pool_stats(infinirt__pool *pool, infinirtAllocatorStats_t *stats);
/* The backend's label ("cpu:0", "cuda host"). */
const char *infinirt__pool_label(const infinirt__pool *pool);
void infinirt__pool_reset_peak(infinirt__pool *pool);
/* Release every fully free segment, after waiting for its fences. */
infiniStatus_t infinirt__pool_trim(infinirt__pool *pool);

#endif /* INFINIRT_LOADER_ALLOC_H_ */
