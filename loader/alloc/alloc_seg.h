/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_seg.h - the allocator's third layer: segments.  A segment is one
 * raw allocation of the backend, tiled by blocks in address order (its
 * head block lives in the segment struct itself); a block-start bitmap,
 * built on demand, finds the block holding an interior pointer.
 *
 * A segment names its pool and its arena only as pointers: the lists of
 * segments an arena keeps are the arena's (alloc_arena.h), the directory
 * that finds a segment from any pointer is alloc_dir.h, and obtaining and
 * giving back the raw memory is the pool's (alloc_pool.h).
 */
#ifndef INFINIRT_LOADER_ALLOC_SEG_H_
#define INFINIRT_LOADER_ALLOC_SEG_H_

#include "alloc_block.h"

#include <stdatomic.h>

typedef struct infinirt__arena infinirt__arena; /* alloc_arena.h */
typedef struct infinirt__pool infinirt__pool;   /* alloc_pool.h */

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
    infinirt__seg *prev, *next;  /* arena's segment list */
    infinirt__seg *left, *right; /* directory tree */
    int height;
    infinirt__seg *free_next; /* directory free list */
};

_Static_assert(offsetof(infinirt__seg, head) == 0, "a segment's head block is the segment's address");
_Static_assert(offsetof(infinirt__seg, large) < 128, "the fields of the second line fit it");

/* Every block of the segment is free and coalesced into its head. */
static inline bool infinirt__seg_empty(const infinirt__seg *s)
{
    return infinirt__blk_state(&s->head) == INFINIRT__BLK_FREE && s->head.nphys == NULL;
}

void infinirt__seg_bit_set(infinirt__seg *s, size_t unit);
void infinirt__seg_bit_clear(infinirt__seg *s, size_t unit);
/* Start of the block holding p (inside s); builds the bitmap when useful. */
uintptr_t infinirt__seg_block_start(infinirt__seg *s, uintptr_t p, unsigned gshift);

#endif /* INFINIRT_LOADER_ALLOC_SEG_H_ */
