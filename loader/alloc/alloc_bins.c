/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_bins.c - the segregated bins (alloc_bins.h): size classes of two
 * levels, each list's head size kept beside it, O(1) search with two
 * bitmaps.
 *
 * Everything here runs with the owning arena locked.
 */
#define _GNU_SOURCE
#include "alloc_bins.h"

/* ---------------------------------------------------------------- bins */

/* Class of a block of n granules: exact below SL_COUNT, then SL_COUNT
 * classes per power of two, so a class spans at most 1/64 of its sizes. */
static inline void bin_map(size_t n, unsigned *fl, unsigned *sl)
{
    if (n < INFINIRT__SL_COUNT) {
        *fl = 0;
        *sl = (unsigned)n;
    } else {
        unsigned f = 63u - (unsigned)__builtin_clzll((unsigned long long)n);
        *fl = f - INFINIRT__SL_LOG2 + 1;
        *sl = (unsigned)(n >> (f - INFINIRT__SL_LOG2)) - INFINIRT__SL_COUNT;
    }
}

static inline uint32_t granules32(size_t n)
{
    return n < UINT32_MAX ? (uint32_t)n : UINT32_MAX;
}

/* A list's head is the block its bins->head slot names; its `prev` is left
 * stale, so that taking the head (the common case) writes nothing into the
 * next block, whose line is most likely not in the cache.  Each block in a
 * list keeps its successor's size (nsz), so that the new head's size is
 * known without reading the new head. */
void infinirt__bins_insert_n(infinirt__bins *bins, infinirt__blk *b, size_t n)
{
    unsigned fl, sl;
    bin_map(n, &fl, &sl);
    infinirt__blk *h = bins->head[fl][sl];
    b->next = h;
    b->nsz = bins->hsz[fl][sl];
    if (h != NULL)
        h->prev = b;
    bins->head[fl][sl] = b;
    bins->hsz[fl][sl] = granules32(n);
    bins->sl_map[fl] |= 1ull << sl;
    bins->fl_map |= 1ull << fl;
}

void infinirt__bins_insert(infinirt__bins *bins, infinirt__blk *b, unsigned gshift)
{
    infinirt__bins_insert_n(bins, b, b->size >> gshift);
}

void infinirt__bins_remove(infinirt__bins *bins, infinirt__blk *b, unsigned gshift)
{
    unsigned fl, sl;
    bin_map(b->size >> gshift, &fl, &sl);
    if (bins->head[fl][sl] == b) {
        bins->head[fl][sl] = b->next;
        bins->hsz[fl][sl] = b->nsz;
    } else {
        b->prev->next = b->next;
        b->prev->nsz = b->nsz;
        if (b->next != NULL)
            b->next->prev = b->prev;
    }
    if (bins->head[fl][sl] == NULL) {
        bins->sl_map[fl] &= ~(1ull << sl);
        if (bins->sl_map[fl] == 0)
            bins->fl_map &= ~(1ull << fl);
    }
}

infinirt__blk *infinirt__bins_find(const infinirt__bins *bins, size_t n, unsigned gshift)
{
    unsigned fl, sl;
    bin_map(n, &fl, &sl);
    if (fl >= INFINIRT__FL_COUNT)
        return NULL;
    /* The request's own class may hold blocks smaller than n: its head is
     * checked (O(1), from hsz) before moving to classes that surely fit. */
    infinirt__blk *h = bins->head[fl][sl];
    uint32_t hs = bins->hsz[fl][sl];
    if (hs >= n || (hs == UINT32_MAX && (h->size >> gshift) >= n))
        return h;
    uint64_t m = sl + 1 < INFINIRT__SL_COUNT ? bins->sl_map[fl] & (~0ull << (sl + 1)) : 0;
    if (m == 0) {
        uint64_t f = fl + 1 < 64 ? bins->fl_map & (~0ull << (fl + 1)) : 0;
        if (f == 0)
            return NULL;
        fl = (unsigned)__builtin_ctzll(f);
        m = bins->sl_map[fl];
    }
    sl = (unsigned)__builtin_ctzll(m);
    return bins->head[fl][sl];
}

size_t infinirt__bins_largest(const infinirt__bins *bins)
{
    if (bins->fl_map == 0)
        return 0;
    unsigned fl = 63u - (unsigned)__builtin_clzll(bins->fl_map);
    unsigned sl = 63u - (unsigned)__builtin_clzll(bins->sl_map[fl]);
    size_t best = 0;
    for (const infinirt__blk *b = bins->head[fl][sl]; b != NULL; b = b->next)
        if (b->size > best)
            best = b->size;
    return best;
}
