/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_block.h - the allocator's first layer: block descriptors and the
 * block table, the hash of live blocks by start address.
 *
 * Nothing here knows of bins, arenas or pools: a descriptor names its
 * segment only as an address in its low-flagged `segst`, and the table
 * holds whatever blocks it is given.  The layers above are listed in
 * alloc_pool.h; the design is described in docs/allocator.md.  Everything
 * here runs with the owning arena locked.
 */
#ifndef INFINIRT_LOADER_ALLOC_BLOCK_H_
#define INFINIRT_LOADER_ALLOC_BLOCK_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct infinirt__blk infinirt__blk;
typedef struct infinirt__seg infinirt__seg;     /* alloc_seg.h */
typedef struct infinirt__fence infinirt__fence; /* the backend's, opaque (alloc.h) */

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

/* An arena's unused descriptors.  They come in chunks so the hot path never
 * calls malloc; chunks live as long as the pool because descriptors move
 * between its arenas. */
typedef struct {
    infinirt__blk *spare; /* unused descriptors */
    void *chunks;         /* descriptor chunks, freed with the pool */
} infinirt__descs;

infinirt__blk *infinirt__blk_new(infinirt__descs *d);
static inline void infinirt__blk_put(infinirt__descs *d, infinirt__blk *b)
{
    if ((uintptr_t)b == (b->segst & ~INFINIRT__BLK_FLAGS))
        return; /* a segment's head: lives in the segment struct (offset 0) */
    b->next = d->spare;
    d->spare = b;
}
void infinirt__descs_free(infinirt__descs *d);

/* ----------------------------------------------------------- block table */

/* A bucket of the block hash: four entries (key 0 = empty) on two cache
 * lines, keys and blocks on the first, what a free needs on the second.
 * `val` is the block's descriptor with two flags in its low bits
 * (descriptors are 64-byte aligned). */
#define INFINIRT__HB_SLOTS 4u
typedef struct {
    uintptr_t key[INFINIRT__HB_SLOTS];
    uintptr_t val[INFINIRT__HB_SLOTS]; /* descriptor | HW_* */
    size_t req[INFINIRT__HB_SLOTS];    /* bytes requested */
    size_t size[INFINIRT__HB_SLOTS];   /* bytes of the block */
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

/* Hash of live (USED) blocks by start address.  Buckets of four entries,
 * one cache line each, at most half full; an entry goes in the first bucket
 * from its home with a free slot, and lookups visit buckets home ..
 * home + reach.  At this load nearly every entry is in its home bucket,
 * so a lookup is one line and four compares made without branches: the
 * mispredicted branches of a linear-probing loop cost more than the probes
 * once thousands of blocks are live.  A deletion just empties its slot. */
typedef struct {
    infinirt__hbkt *ht;
    size_t mask, count; /* buckets - 1; entries */
    unsigned shift;
    size_t reach; /* furthest any entry lies past its home bucket */
} infinirt__blktab;

int infinirt__ht_init(infinirt__blktab *t);
int infinirt__ht_grow(infinirt__blktab *t);
static inline size_t infinirt__ht_slot(const infinirt__blktab *t, uintptr_t key)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> t->shift);
}
/* Bit i set: slot i of bucket b holds key (key 0: is empty). */
static inline unsigned infinirt__hb_match(const infinirt__hbkt *b, uintptr_t key)
{
    return (unsigned)(b->key[0] == key) | (unsigned)(b->key[1] == key) << 1 | (unsigned)(b->key[2] == key) << 2 |
           (unsigned)(b->key[3] == key) << 3;
}
/* Would `more` entries beyond the current ones exceed the load? */
static inline bool infinirt__ht_full(const infinirt__blktab *t, size_t more)
{
    /* (count + more) * 2 > buckets * HB_SLOTS, one multiplication less */
    return t->count + more > (t->mask + 1) * (INFINIRT__HB_SLOTS / 2);
}
/* Fill free slot i of bucket k with an entry. */
static inline void infinirt__ht_fill(infinirt__blktab *t, infinirt__hbkt *k, unsigned i, uintptr_t key, uintptr_t val,
                                     size_t req, size_t size)
{
    k->key[i] = key;
    k->val[i] = val;
    k->req[i] = req;
    k->size[i] = size;
    t->count++;
}
/* Place the entry (key, val, req, size) in the first bucket from its home
 * with room; false if that is more than `limit` buckets away. */
static inline bool infinirt__ht_place(infinirt__blktab *t, uintptr_t key, uintptr_t val, size_t req, size_t size,
                                      size_t limit)
{
    size_t h = infinirt__ht_slot(t, key);
    for (size_t d = 0; d <= limit; d++) {
        infinirt__hbkt *k = &t->ht[(h + d) & t->mask];
        unsigned m = infinirt__hb_match(k, 0);
        if (__builtin_expect(m != 0, 1)) {
            infinirt__ht_fill(t, k, (unsigned)__builtin_ctz(m), key, val, req, size);
            if (d > t->reach)
                t->reach = d;
            return true;
        }
    }
    return false;
}
/* The hash value of live block b: its descriptor and flags. */
static inline uintptr_t infinirt__ht_val(const infinirt__blk *b)
{
    uintptr_t v = (uintptr_t)b;
    /* The flags first: a small block's neighbours are not read. */
    if ((b->segst & (INFINIRT__BLK_LARGE | INFINIRT__BLK_BITS)) == INFINIRT__BLK_LARGE && b->pphys == NULL &&
        b->nphys == NULL)
        v |= INFINIRT__HW_WHOLE | ((b->segst & INFINIRT__BLK_STACKED) ? INFINIRT__HW_STACKED : 0);
    return v;
}
static inline infinirt__blk *infinirt__ht_blk(uintptr_t val)
{
    return (infinirt__blk *)(val & ~(uintptr_t)INFINIRT__HW_FLAGS);
}
/* The slow part of ht_put: a full table or a full home bucket. */
int infinirt__ht_put_slow(infinirt__blktab *t, uintptr_t key, uintptr_t val, size_t req, size_t size);
/* Insert live block b (its req set).  Fails (-1) only when the load calls
 * for a bigger table and there is no memory for it: with room made by the
 * caller it cannot fail. */
static inline int infinirt__ht_put(infinirt__blktab *t, infinirt__blk *b)
{
    uintptr_t key = b->addr, val = infinirt__ht_val(b);
    infinirt__hbkt *k = &t->ht[infinirt__ht_slot(t, key)];
    unsigned m = infinirt__hb_match(k, 0);
    if (__builtin_expect(m == 0 || infinirt__ht_full(t, 1), 0))
        return infinirt__ht_put_slow(t, key, val, b->req, b->size);
    infinirt__ht_fill(t, k, (unsigned)__builtin_ctz(m), key, val, b->req, b->size);
    return 0;
}
/* Where ht_put needs no call: a free slot of key's home bucket (bucket
 * *kp, slot *ip) with room under the load; the entry goes in with
 * infinirt__ht_fill.  False, with nothing done, otherwise (then ht_put). */
static inline __attribute__((always_inline)) bool infinirt__ht_home_slot(infinirt__blktab *t, uintptr_t key,
                                                                         infinirt__hbkt **kp, unsigned *ip)
{
    infinirt__hbkt *k = &t->ht[infinirt__ht_slot(t, key)];
    unsigned m = infinirt__hb_match(k, 0);
    if (__builtin_expect(m == 0 || infinirt__ht_full(t, 1), 0))
        return false;
    *kp = k;
    *ip = (unsigned)__builtin_ctz(m);
    return true;
}
/* Bucket and slot of key, or NULL. */
static inline infinirt__hbkt *infinirt__ht_find(const infinirt__blktab *t, uintptr_t key, unsigned *slot)
{
    size_t h = infinirt__ht_slot(t, key);
    infinirt__hbkt *k = &t->ht[h];
    unsigned m = infinirt__hb_match(k, key);
    if (__builtin_expect(m != 0, 1)) {
        *slot = (unsigned)__builtin_ctz(m);
        return k;
    }
    for (size_t d = 1; d <= t->reach; d++) {
        k = &t->ht[(h + d) & t->mask];
        if ((m = infinirt__hb_match(k, key)) != 0) {
            *slot = (unsigned)__builtin_ctz(m);
            return k;
        }
    }
    return NULL;
}
static inline infinirt__blk *infinirt__ht_get(const infinirt__blktab *t, uintptr_t key)
{
    unsigned i;
    infinirt__hbkt *k = infinirt__ht_find(t, key, &i);
    return k != NULL ? infinirt__ht_blk(k->val[i]) : NULL;
}
/* Take the entry in slot i of bucket k out: its req. */
static inline size_t infinirt__ht_remove(infinirt__blktab *t, infinirt__hbkt *k, unsigned i)
{
    k->key[i] = 0; /* the rest of the entry is never read again */
    t->count--;
    return k->req[i];
}
/* Take key's entry out: its block (NULL if absent), with its req, size and
 * HW_* flags. */
static inline infinirt__blk *infinirt__ht_take(infinirt__blktab *t, uintptr_t key, size_t *req, size_t *size,
                                               unsigned *flags)
{
    unsigned i;
    infinirt__hbkt *k = infinirt__ht_find(t, key, &i);
    if (k == NULL) {
        *req = *size = 0;
        *flags = 0;
        return NULL;
    }
    *req = k->req[i];
    *size = k->size[i];
    *flags = (unsigned)(k->val[i] & INFINIRT__HW_FLAGS);
    infinirt__ht_remove(t, k, i);
    return infinirt__ht_blk(k->val[i]);
}
static inline infinirt__blk *infinirt__ht_del(infinirt__blktab *t, uintptr_t key)
{
    size_t req, size;
    unsigned flags;
    return infinirt__ht_take(t, key, &req, &size, &flags);
}
/* Start fetching what a free of key reads in the hash.  Called before the
 * arena's lock is taken, so the table and its shift are read atomically
 * (ht_alloc stores them so) and may belong to two tables during a grow:
 * the address is then only a useless hint - a prefetch never faults - and
 * is computed as an integer, so no out-of-bounds pointer is formed. */
static inline void infinirt__ht_prefetch(const infinirt__blktab *t, uintptr_t key)
{
    uintptr_t b = (uintptr_t)__atomic_load_n(&t->ht, __ATOMIC_RELAXED);
    unsigned shift = __atomic_load_n(&t->shift, __ATOMIC_RELAXED);
    uintptr_t k = b + (uintptr_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> shift) * sizeof(infinirt__hbkt);
    __builtin_prefetch((const void *)k);
    __builtin_prefetch((const void *)(k + 64));
}

#endif /* INFINIRT_LOADER_ALLOC_BLOCK_H_ */
