/*
 * alloc_bins.c - the caching allocator's block machinery: descriptors,
 * two-level segregated bins (TLSF-style, O(1) search with two bitmaps), the
 * hash of live blocks, block-start bitmaps, split and merge.
 *
 * Everything here runs with the owning arena locked.
 */
#define _GNU_SOURCE
#include "alloc_int.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- descriptors */

typedef struct blk_chunk {
    infinirt__blk b[127]; /* first: each descriptor on a cache line of its own */
    struct blk_chunk *next;
} blk_chunk;

/* Descriptors come in chunks so the hot path never calls malloc; chunks
 * live as long as the pool because descriptors move between its arenas. */
infinirt__blk *infinirt__blk_new(infinirt__arena *a)
{
    infinirt__blk *b = a->spare;
    if (__builtin_expect(b != NULL, 1)) {
        a->spare = b->next;
        return b;
    }
    blk_chunk *c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63);
    if (c == NULL)
        return NULL;
    c->next = a->chunks;
    a->chunks = c;
    size_t n = sizeof c->b / sizeof c->b[0];
    for (size_t i = 1; i < n; i++) {
        c->b[i].next = a->spare;
        a->spare = &c->b[i];
    }
    return &c->b[0];
}

void infinirt__blk_chunks_free(infinirt__arena *a)
{
    blk_chunk *c = a->chunks;
    while (c != NULL) {
        blk_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->chunks = NULL;
    a->spare = NULL;
}

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

/* ---------------------------------------------------------------- hash */

static int ht_alloc(infinirt__arena *a, size_t nb)
{
    infinirt__hbkt *t = infinirt__line_calloc(nb * sizeof *t);
    if (t == NULL)
        return -1;
    /* Atomic stores: infinirt__ht_prefetch reads these without the lock. */
    __atomic_store_n(&a->ht, t, __ATOMIC_RELAXED);
    a->ht_mask = nb - 1;
    __atomic_store_n(&a->ht_shift, 64u - (unsigned)__builtin_ctzll((unsigned long long)nb), __ATOMIC_RELAXED);
    a->ht_reach = 0;
    return 0;
}

int infinirt__ht_init(infinirt__arena *a)
{
    a->ht_count = 0;
    return ht_alloc(a, 64);
}

int infinirt__ht_put_slow(infinirt__arena *a, uintptr_t key, uintptr_t val, size_t req, size_t size)
{
    if (infinirt__ht_full(a, 1) && infinirt__ht_grow(a) != 0)
        return -1;
    if (infinirt__ht_place(a, key, val, req, size, INFINIRT__HB_REACH_MAX))
        return 0;
    /* A crowded neighbourhood: a bigger table spreads it, unless the table
     * is already sparse (keys that collide at every size would grow it
     * without end); otherwise, or without memory, the first free slot
     * further on (the load leaves some) and longer lookups. */
    if ((a->ht_count + 1) * 8 > (a->ht_mask + 1) * INFINIRT__HB_SLOTS && infinirt__ht_grow(a) == 0 &&
        infinirt__ht_place(a, key, val, req, size, INFINIRT__HB_REACH_MAX))
        return 0;
    infinirt__ht_place(a, key, val, req, size, a->ht_mask);
    return 0;
}

/* Twice the buckets; -1 (nothing changed) without memory. */
int infinirt__ht_grow(infinirt__arena *a)
{
    infinirt__hbkt *old = a->ht;
    size_t oldnb = a->ht_mask + 1;
    if (oldnb > (SIZE_MAX / sizeof *old) / 2 || ht_alloc(a, oldnb * 2) != 0)
        return -1; /* ht_alloc changed nothing */
    a->ht_count = 0;
    for (size_t i = 0; i < oldnb; i++)
        for (unsigned j = 0; j < INFINIRT__HB_SLOTS; j++)
            if (old[i].key[j] != 0) /* never fails: the new table is at most a quarter full */
                infinirt__ht_place(a, old[i].key[j], old[i].val[j], old[i].req[j], old[i].size[j], a->ht_mask);
    free(old);
    return 0;
}

/* -------------------------------------------------- block-start bitmap */

/* Level 0 has a bit per granule, set where a block starts; level 1 has a bit
 * per non-zero level-0 word, so finding the start of the block that holds an
 * interior pointer costs O(size / 2^12 granules) words at worst. */
int infinirt__seg_bits_build(infinirt__seg *s, unsigned gshift)
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

/* ---------------------------------------------------------- empty stack */

void infinirt__empty_push(infinirt__arena *a, infinirt__seg *s)
{
    if (a->nes == a->capes) {
        uint32_t cap = a->capes ? a->capes * 2 : 64;
        infinirt__seg **n = realloc(a->estack, cap * sizeof *n);
        if (n == NULL)
            /* Untracked: no scan finds it (trim, shrink and steal walk the
             * stack); pool destroy still gives it back. */
            return;
        a->estack = n;
        a->capes = cap;
    }
    s->eidx = a->nes;
    a->estack[a->nes++] = s;
    s->head.segst |= INFINIRT__BLK_STACKED;
}

void infinirt__empty_drop(infinirt__arena *a, infinirt__seg *s)
{
    if (!(s->head.segst & INFINIRT__BLK_STACKED))
        return;
    infinirt__seg *last = a->estack[--a->nes];
    a->estack[s->eidx] = last;
    last->eidx = s->eidx;
    s->head.segst &= ~INFINIRT__BLK_STACKED;
    /* A live head keeps a copy of the flag in its hash entry. */
    unsigned i;
    infinirt__hbkt *k;
    if (infinirt__blk_state(&s->head) == INFINIRT__BLK_USED && (k = infinirt__ht_find(a, s->head.addr, &i)) != NULL)
        k->val[i] &= ~INFINIRT__HW_STACKED;
}

/* -------------------------------------------------------- split, merge */

infinirt__blk *infinirt__blk_take(infinirt__arena *a, infinirt__blk *b, size_t n, bool split)
{
    unsigned gshift = a->pool->gshift;
    infinirt__bins *bins = infinirt__blk_bins(a, b);
    size_t want = n << gshift;
    infinirt__bins_remove(bins, b, gshift);
    if (split && b->size > want) {
        infinirt__blk *r = infinirt__blk_new(a);
        if (r != NULL) {
            r->addr = b->addr + want;
            r->size = b->size - want;
            r->segst = (b->segst & ~(INFINIRT__BLK_STATE_MASK | INFINIRT__BLK_STACKED)) | INFINIRT__BLK_FREE;
            r->req = 0;
            r->pphys = b;
            r->nphys = b->nphys;
            if (b->nphys != NULL)
                b->nphys->pphys = r;
            b->nphys = r;
            b->size = want;
            if (r->segst & INFINIRT__BLK_BITS) {
                infinirt__seg *s = infinirt__blk_seg(b);
                infinirt__seg_bit_set(s, (r->addr - s->base) >> gshift);
            }
            infinirt__bins_insert(bins, r, gshift);
        }
        /* Without a descriptor the whole block is handed out: wasteful but
         * correct, and host memory is short anyway. */
    }
    return b;
}

/* n, the block after b, merges into b. */
static void absorb(infinirt__arena *a, infinirt__blk *b, infinirt__blk *n, unsigned gshift)
{
    b->size += n->size;
    b->nphys = n->nphys;
    if (n->nphys != NULL)
        n->nphys->pphys = b;
    if (n->segst & INFINIRT__BLK_BITS) {
        infinirt__seg *s = infinirt__blk_seg(n);
        infinirt__seg_bit_clear(s, (n->addr - s->base) >> gshift);
    }
    infinirt__blk_put(a, n);
}

void infinirt__blk_release(infinirt__arena *a, infinirt__blk *b)
{
    unsigned gshift = a->pool->gshift;
    infinirt__bins *bins = infinirt__blk_bins(a, b);
    infinirt__blk *n = b->nphys, *p = b->pphys;
    if (n != NULL && infinirt__blk_state(n) == INFINIRT__BLK_FREE) {
        infinirt__bins_remove(bins, n, gshift);
        absorb(a, b, n, gshift);
    }
    if (p != NULL && infinirt__blk_state(p) == INFINIRT__BLK_FREE) {
        infinirt__bins_remove(bins, p, gshift);
        absorb(a, p, b, gshift);
        b = p;
    }
    infinirt__blk_set_state(b, INFINIRT__BLK_FREE);
    infinirt__bins_insert(bins, b, gshift);
    /* The head spanning its segment: the segment is empty. */
    if (b->pphys == NULL && b->nphys == NULL && !(b->segst & INFINIRT__BLK_STACKED))
        infinirt__empty_push(a, infinirt__blk_seg(b));
}

void infinirt__quick_flush(infinirt__arena *a)
{
    for (unsigned w = 0; w < INFINIRT__QUICK_MAX / 64; w++) {
        while (a->quick_map[w] != 0) {
            size_t n = (size_t)w * 64 + (size_t)__builtin_ctzll(a->quick_map[w]) + 1;
            infinirt__blk *b;
            while ((b = a->quick[n]) != NULL) {
                a->quick[n] = b->next;
                infinirt__blk_release(a, b);
            }
            a->quick_map[w] &= a->quick_map[w] - 1;
        }
    }
    a->quick_bytes = 0;
}
