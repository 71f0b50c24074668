/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_block.c - block descriptors, allocated in chunks, and the block
 * table (alloc_block.h).
 *
 * Everything here runs with the owning arena locked.
 */
#define _GNU_SOURCE
#include "alloc_block.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- descriptors */

typedef struct blk_chunk {
    infinirt__blk b[127]; /* first: each descriptor on a cache line of its own */
    struct blk_chunk *next;
} blk_chunk;

infinirt__blk *infinirt__blk_new(infinirt__descs *d)
{
    infinirt__blk *b = d->spare;
    if (__builtin_expect(b != NULL, 1)) {
        d->spare = b->next;
        return b;
    }
    blk_chunk *c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63);
    if (c == NULL)
        return NULL;
    c->next = d->chunks;
    d->chunks = c;
    size_t n = sizeof c->b / sizeof c->b[0];
    for (size_t i = 1; i < n; i++) {
        c->b[i].next = d->spare;
        d->spare = &c->b[i];
    }
    return &c->b[0];
}

void infinirt__descs_free(infinirt__descs *d)
{
    blk_chunk *c = d->chunks;
    while (c != NULL) {
        blk_chunk *n = c->next;
        free(c);
        c = n;
    }
    d->chunks = NULL;
    d->spare = NULL;
}

/* --------------------------------------------------------- block table */

static int ht_alloc(infinirt__blktab *t, size_t nb)
{
    infinirt__hbkt *b = infinirt__line_calloc(nb * sizeof *b);
    if (b == NULL)
        return -1;
    /* Atomic stores: infinirt__ht_prefetch reads these without the lock. */
    __atomic_store_n(&t->ht, b, __ATOMIC_RELAXED);
    t->mask = nb - 1;
    __atomic_store_n(&t->shift, 64u - (unsigned)__builtin_ctzll((unsigned long long)nb), __ATOMIC_RELAXED);
    t->reach = 0;
    return 0;
}

int infinirt__ht_init(infinirt__blktab *t)
{
    t->count = 0;
    return ht_alloc(t, 64);
}

int infinirt__ht_put_slow(infinirt__blktab *t, uintptr_t key, uintptr_t val, size_t req, size_t size)
{
    if (infinirt__ht_full(t, 1) && infinirt__ht_grow(t) != 0)
        return -1;
    if (infinirt__ht_place(t, key, val, req, size, INFINIRT__HB_REACH_MAX))
        return 0;
    /* A crowded neighbourhood: a bigger table spreads it, unless the table
     * is already sparse (keys that collide at every size would grow it
     * without end); otherwise, or without memory, the first free slot
     * further on (the load leaves some) and longer lookups. */
    if ((t->count + 1) * 8 > (t->mask + 1) * INFINIRT__HB_SLOTS && infinirt__ht_grow(t) == 0 &&
        infinirt__ht_place(t, key, val, req, size, INFINIRT__HB_REACH_MAX))
        return 0;
    infinirt__ht_place(t, key, val, req, size, t->mask);
    return 0;
}

/* Twice the buckets; -1 (nothing changed) without memory. */
int infinirt__ht_grow(infinirt__blktab *t)
{
    infinirt__hbkt *old = t->ht;
    size_t oldnb = t->mask + 1;
    if (oldnb > (SIZE_MAX / sizeof *old) / 2 || ht_alloc(t, oldnb * 2) != 0)
        return -1; /* ht_alloc changed nothing */
    t->count = 0;
    for (size_t i = 0; i < oldnb; i++)
        for (unsigned j = 0; j < INFINIRT__HB_SLOTS; j++)
            if (old[i].key[j] != 0) /* never fails: the new table is at most a quarter full */
                infinirt__ht_place(t, old[i].key[j], old[i].val[j], old[i].req[j], old[i].size[j], t->mask);
    free(old);
    return 0;
}
