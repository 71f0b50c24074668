/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_seg.c - a segment's block-start bitmap (alloc_seg.h): where the
 * block holding an interior pointer starts, found in a few words whatever
 * the segment holds.
 *
 * Everything here runs with the owning arena locked.
 */
#define _GNU_SOURCE
#include "alloc_seg.h"

/* Level 0 has a bit per granule, set where a block starts; level 1 has a bit
 * per non-zero level-0 word, so finding the start of the block that holds an
 * interior pointer costs O(size / 2^12 granules) words at worst. */
static int infinirt__seg_bits_build(infinirt__seg *s, unsigned gshift)
{
    size_t units = s->size >> gshift;
    size_t nw0 = (units + 63) / 64, nw1 = (nw0 + 63) / 64;
    uint64_t *bits = infinirt__line_calloc((nw0 + nw1) * sizeof *bits);
    if (bits == NULL)
        return -1;
    s->bits = bits;
    s->nw0 = nw0;
    for (infinirt__blk *b = &s->head; b != NULL; b = b->nphys) {
        infinirt__seg_bit_set(s, (b->addr - s->base) >> gshift);
        b->segst |= INFINIRT__BLK_BITS;
    }
    return 0;
}

void infinirt__seg_bit_set(infinirt__seg *s, size_t u)
{
    s->bits[u >> 6] |= 1ull << (u & 63);
    s->bits[s->nw0 + (u >> 12)] |= 1ull << ((u >> 6) & 63);
}

void infinirt__seg_bit_clear(infinirt__seg *s, size_t u)
{
    uint64_t w = s->bits[u >> 6] &= ~(1ull << (u & 63));
    if (w == 0)
        s->bits[s->nw0 + (u >> 12)] &= ~(1ull << ((u >> 6) & 63));
}

/* A walk from the head is cheap while a segment holds few blocks (most
 * large segments hold one); past this many the bitmap is built. */
#define WALK_MAX 32

uintptr_t infinirt__seg_block_start(infinirt__seg *s, uintptr_t p, unsigned gshift)
{
    if (s->nw0 == 0) {
        const infinirt__blk *b = &s->head;
        unsigned steps = 0;
        while (b->nphys != NULL && b->nphys->addr <= p && steps < WALK_MAX) {
            b = b->nphys;
            steps++;
        }
        if (steps < WALK_MAX || infinirt__seg_bits_build(s, gshift) != 0) {
            while (b->nphys != NULL && b->nphys->addr <= p) /* no memory for a bitmap: walk on */
                b = b->nphys;
            return b->addr;
        }
    }
    size_t u = (p - s->base) >> gshift;
    size_t i = u >> 6;
    uint64_t m = s->bits[i] & (~0ull >> (63 - (u & 63)));
    if (m == 0) {
        const uint64_t *l1 = s->bits + s->nw0;
        size_t j = i >> 6;
        uint64_t m1 = l1[j] & ((1ull << (i & 63)) - 1);
        while (m1 == 0) {
            if (j == 0)
                return s->base; /* unreachable: bit 0 is always set */
            m1 = l1[--j];
        }
        i = j * 64 + (63u - (unsigned)__builtin_clzll(m1));
        m = s->bits[i];
    }
    u = i * 64 + (63u - (unsigned)__builtin_clzll(m));
    return s->base + (u << gshift);
}
