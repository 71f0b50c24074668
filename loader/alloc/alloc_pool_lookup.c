/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_pool_lookup.c - pointer lookups: the live block holding any
 * pointer, through the directory and the owning arena's block table, with
 * this thread's last hits answered without a lock.
 */
#define _GNU_SOURCE
#include "alloc_pool.h"

/* The segment of this thread's last lookup (segment structs are never
 * freed, so it is validated, not trusted). */
static _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__seg *tl_seg;

/* The blocks of this thread's last two successful lookups, as found under
 * their arenas' locks (alloc.h).  One is answered again with no lock while
 * nobody has taken its arena's lock since (the epoch): a block changes only
 * under its arena's lock (freed, moved with its segment), so an untouched
 * arena means the block is still live with the same size.  Two, because a
 * D2D copy looks up its source and its destination on every call, and they
 * are usually different blocks in different segments: the loop of a
 * program that copies between two buffers then costs a few loads per
 * lookup.  A miss replaces the entry not used last. */
_Thread_local __attribute__((tls_model("initial-exec"))) infinirt__lookup_hit infinirt__tl_hit[2];
_Thread_local __attribute__((tls_model("initial-exec"))) unsigned infinirt__tl_hit_last; /* used last */

int infinirt__pool_lookup(const void *ptr, infinirt__ptr_info *info)
{
    const infinirt__lookup_hit *h = infinirt__lookup_hit_find((uintptr_t)ptr);
    if (h == NULL)
        return infinirt__pool_lookup_slow(ptr, info);
    if (info != NULL)
        infinirt__lookup_hit_info(h, (uintptr_t)ptr, info);
    return 1;
}

int infinirt__pool_lookup_slow(const void *ptr, infinirt__ptr_info *info)
{
    uintptr_t p = (uintptr_t)ptr;
    if (p == 0)
        return 0;
    /* Host memory on the stack or the heap, the other side of most
     * copies: no lock, and the thread's remembered block stays. */
    if (infinirt__dir_outside(p))
        return 0;
    uint_fast64_t gen = atomic_load_explicit(&infinirt__alloc_gen, memory_order_acquire);
    infinirt__seg *s = tl_seg;
    infinirt__arena *a = NULL;
    if (s != NULL && (a = atomic_load_explicit(&s->arena, memory_order_acquire)) != NULL) {
        infinirt__spin_lock_read(&a->lock); /* a look-up changes nothing */
        if (atomic_load_explicit(&s->arena, memory_order_relaxed) != a || p - s->base >= s->size) {
            infinirt__spin_unlock(&a->lock);
            a = NULL;
        }
    }
    if (a == NULL && (a = infinirt__dir_lock_owner(p, &s, true)) == NULL)
        return 0;
    infinirt__pool *pool = a->pool;
    uintptr_t start = infinirt__seg_block_start(s, p, pool->gshift);
    infinirt__blk *b = infinirt__ht_get(&a->blocks, start);
    int found = b != NULL && p - start < b->req;
    if (found) {
        infinirt__lookup_remember(a, s, start, b->req, gen);
        if (info != NULL)
            infinirt__lookup_hit_info(&infinirt__tl_hit[infinirt__tl_hit_last], p, info);
    }
    infinirt__spin_unlock(&a->lock);
    tl_seg = s;
    return found;
}

int infinirt__pool_holds(const void *ptr)
{
    return ptr != NULL && infinirt__dir_pool_of((uintptr_t)ptr) != NULL;
}
