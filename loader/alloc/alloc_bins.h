/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_bins.h - the allocator's second layer: where free blocks wait.
 *
 * Two-level segregated bins (TLSF-style, O(1) search with two bitmaps) hold
 * coalesced free blocks by size class; quick lists hold small freed blocks
 * by exact size, not yet coalesced (deferred coalescing).  Both only link
 * descriptors (alloc_block.h): which bins a block belongs in, and merging
 * it with its neighbours, are the arena's (alloc_arena.h).
 */
#ifndef INFINIRT_LOADER_ALLOC_BINS_H_
#define INFINIRT_LOADER_ALLOC_BINS_H_

#include "alloc_block.h"

/* Two-level segregated bins: SL_COUNT second-level lists per power of two. */
#define INFINIRT__SL_LOG2 6
#define INFINIRT__SL_COUNT (1u << INFINIRT__SL_LOG2)
#define INFINIRT__FL_COUNT 48u

typedef struct {
    uint64_t fl_map;
    uint64_t sl_map[INFINIRT__FL_COUNT];
    infinirt__blk *head[INFINIRT__FL_COUNT][INFINIRT__SL_COUNT];
    /* Granules of each head (0: empty list; UINT32_MAX: that many or
     * more), so that the search decides whether the request's own class
     * serves it without reading a descriptor that may be out of the cache. */
    uint32_t hsz[INFINIRT__FL_COUNT][INFINIRT__SL_COUNT];
} infinirt__bins;

void infinirt__bins_insert(infinirt__bins *bins, infinirt__blk *b, unsigned gshift);
/* The same for a block of n granules, without reading its size. */
void infinirt__bins_insert_n(infinirt__bins *bins, infinirt__blk *b, size_t n);
void infinirt__bins_remove(infinirt__bins *bins, infinirt__blk *b, unsigned gshift);
/* A free block of at least n granules from the smallest class holding one
 * (its head checked first in the request's own class), or NULL. */
infinirt__blk *infinirt__bins_find(const infinirt__bins *bins, size_t n, unsigned gshift);
size_t infinirt__bins_largest(const infinirt__bins *bins);

/* Exact-size free lists (deferred coalescing) for small blocks of up to
 * QUICK_MAX granules, holding at most QUICK_BYTES per arena: enough for a
 * loop that frees and allocates the same sizes, too little to starve the
 * bins when sizes vary. */
#define INFINIRT__QUICK_MAX 256u
#define INFINIRT__QUICK_BYTES ((size_t)256 << 10)

typedef struct {
    infinirt__blk *list[INFINIRT__QUICK_MAX + 1]; /* list[n]: blocks of n granules */
    size_t bytes;
    uint64_t map[INFINIRT__QUICK_MAX / 64]; /* bit n-1: list[n] not empty */
} infinirt__quick;

static inline __attribute__((always_inline)) void infinirt__quick_push(infinirt__quick *q, infinirt__blk *b, size_t n)
{
    infinirt__blk_set_state(b, INFINIRT__BLK_QUICK);
    b->prev = NULL;
    b->next = q->list[n];
    if (b->next != NULL)
        b->next->prev = b;
    else
        q->map[(n - 1) / 64] |= 1ull << ((n - 1) % 64);
    q->list[n] = b;
    q->bytes += b->size;
}
/* Take b (in quick list n) out of it. */
static inline void infinirt__quick_unlink(infinirt__quick *q, infinirt__blk *b, size_t n)
{
    if (b->prev != NULL)
        b->prev->next = b->next;
    else if ((q->list[n] = b->next) == NULL)
        q->map[(n - 1) / 64] &= ~(1ull << ((n - 1) % 64));
    if (b->next != NULL)
        b->next->prev = b->prev;
    q->bytes -= b->size;
}

#endif /* INFINIRT_LOADER_ALLOC_BINS_H_ */
