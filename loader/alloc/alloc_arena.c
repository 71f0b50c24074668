/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_arena.c - arenas (alloc_arena.h): blocks cut and merged, the empty
 * stack, segments attached and detached, pending frees, and a retired
 * stream's arena merged into another.
 *
 * Everything here runs with the arena locked, except
 * infinirt__arena_merge_into, which takes the two locks itself.
 */
#define _GNU_SOURCE
#include "alloc_arena.h"
#include "alloc.h"
#include "alloc_faults.h"
#include "../log.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- arenas */

#ifdef INFINIRT_LOCK_CHECKS
_Thread_local __attribute__((tls_model("initial-exec"))) unsigned infinirt__alloc_locks_held;

void infinirt__alloc_locked_call(const char *call)
{
    INFINIRT__ERROR("allocator: backend call %s made with %u allocator lock(s) held", call,
                    infinirt__alloc_locks_held);
    abort();
}
#endif

infinirt__arena *infinirt__arena_new(infinirt__pool *pool, const infinirt__pool_backend *be, unsigned gshift)
{
    infinirt__arena *a = infinirt__line_calloc(sizeof *a);
    if (a == NULL)
        return NULL;
    atomic_init(&a->lock.sl.held, 0);
    atomic_init(&a->lock.sl.solo, 0);
    atomic_init(&a->lock.epoch, 0);
    a->pool = pool;
    a->be = be;
    a->gshift = gshift;
    if (infinirt__ht_init(&a->blocks) != 0) {
        free(a);
        return NULL;
    }
    return a;
}

void infinirt__arena_free(infinirt__arena *a)
{
    free(a->blocks.ht);
    free(a->pq);
    free(a->estack);
    infinirt__descs_free(&a->descs);
    free(a);
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
    if (infinirt__blk_state(&s->head) == INFINIRT__BLK_USED &&
        (k = infinirt__ht_find(&a->blocks, s->head.addr, &i)) != NULL)
        k->val[i] &= ~INFINIRT__HW_STACKED;
}

/* -------------------------------------------------------- split, merge */

infinirt__blk *infinirt__blk_take(infinirt__arena *a, infinirt__blk *b, size_t n, bool split)
{
    unsigned gshift = a->gshift;
    infinirt__bins *bins = infinirt__blk_bins(a, b);
    size_t want = n << gshift;
    infinirt__bins_remove(bins, b, gshift);
    if (split && b->size > want) {
        infinirt__blk *r = infinirt__blk_new(&a->descs);
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
    infinirt__blk_put(&a->descs, n);
}

void infinirt__blk_release(infinirt__arena *a, infinirt__blk *b)
{
    unsigned gshift = a->gshift;
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
        while (a->quick.map[w] != 0) {
            size_t n = (size_t)w * 64 + (size_t)__builtin_ctzll(a->quick.map[w]) + 1;
            infinirt__blk *b;
            while ((b = a->quick.list[n]) != NULL) {
                a->quick.list[n] = b->next;
                infinirt__blk_release(a, b);
            }
            a->quick.map[w] &= a->quick.map[w] - 1;
        }
    }
    a->quick.bytes = 0;
}

/* ------------------------------------------------- segments of the arena */

static void seg_link(infinirt__arena *a, infinirt__seg *s)
{
    s->prev = NULL;
    s->next = a->segs;
    if (a->segs != NULL)
        a->segs->prev = s;
    a->segs = s;
    a->reserved += s->size;
    if (s->fence != NULL)
        a->nfenced++;
    atomic_store_explicit(&s->arena, a, memory_order_release);
}

/* Out of arena a's lists.  `arena` keeps naming a until the caller detaches
 * the segment or links it to another arena, so a concurrent lookup never
 * sees a segment that is only moving as detached. */
static void seg_unlink(infinirt__arena *a, infinirt__seg *s)
{
    infinirt__empty_drop(a, s);
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        a->segs = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    a->reserved -= s->size;
    if (s->fence != NULL)
        a->nfenced--;
}

infinirt__blk *infinirt__seg_attach(infinirt__arena *a, infinirt__seg *s)
{
    infinirt__blk *b = &s->head;
    memset(b, 0, sizeof *b);
    b->addr = s->base;
    b->size = s->size;
    b->segst = (uintptr_t)s | (s->large ? INFINIRT__BLK_LARGE : 0) | INFINIRT__BLK_FREE;
    seg_link(a, s);
    infinirt__bins_insert(infinirt__blk_bins(a, b), b, a->gshift);
    infinirt__empty_push(a, s);
    return b;
}

void infinirt__seg_detach(infinirt__arena *a, infinirt__seg *s)
{
    unsigned gshift = a->gshift;
    for (infinirt__blk *b = &s->head, *n; b != NULL; b = n) {
        n = b->nphys;
        if (infinirt__blk_state(b) == INFINIRT__BLK_FREE) {
            infinirt__bins_remove(infinirt__blk_bins(a, b), b, gshift);
        } else if (infinirt__blk_state(b) == INFINIRT__BLK_QUICK) {
            infinirt__quick_unlink(&a->quick, b, b->size >> gshift);
        }
        infinirt__blk_put(&a->descs, b);
    }
    s->head.nphys = NULL;
    free(s->bits);
    s->bits = NULL;
    s->nw0 = 0;
    seg_unlink(a, s);
    atomic_store_explicit(&s->arena, NULL, memory_order_release);
}

bool infinirt__seg_fence_done(infinirt__arena *a, infinirt__seg *s)
{
    if (s->fence == NULL)
        return true;
    const infinirt__pool_backend *be = a->be;
    int done = 0;
    if (be->fence_query(be->ctx, s->fence, &done) != INFINI_STATUS_SUCCESS || !done)
        return false;
    be->fence_release(be->ctx, s->fence);
    s->fence = NULL;
    a->nfenced--;
    return true;
}

/* -------------------------------------------------------- pending frees */

int infinirt__pending_add(infinirt__arena *a, infinirt__blk *b, void *stream, bool sync, infinirt__fence *f)
{
    infinirt__pq *q = NULL;
    for (unsigned i = 0; i < a->npq && q == NULL; i++)
        if (a->pq[i].stream == stream && a->pq[i].sync == sync)
            q = &a->pq[i];
    if (q == NULL) {
        if (a->npq == a->cappq) {
            unsigned cap = a->cappq ? a->cappq * 2 : 4;
            infinirt__pq *n = INFINIRT__HOST_REALLOC(a->pq, cap * sizeof *n);
            if (n == NULL)
                return -1;
            a->pq = n;
            a->cappq = cap;
        }
        q = &a->pq[a->npq++];
        q->stream = stream;
        q->sync = sync;
        q->head = q->tail = NULL;
    }
    infinirt__blk_set_state(b, INFINIRT__BLK_PENDING);
    b->fence = f;
    b->next = NULL;
    b->prev = q->tail;
    if (q->tail != NULL)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    return 0;
}

/* The fences of one queue were taken in stream order, so its first
 * incomplete fence ends the scan: only heads are ever queried. */
size_t infinirt__pending_poll(infinirt__arena *a)
{
    const infinirt__pool_backend *be = a->be;
    size_t moved = 0;
    for (unsigned i = 0; i < a->npq;) {
        infinirt__pq *q = &a->pq[i];
        infinirt__blk *b;
        while ((b = q->head) != NULL) {
            int done = 0;
            if (be->fence_query(be->ctx, b->fence, &done) != INFINI_STATUS_SUCCESS || !done)
                break;
            be->fence_release(be->ctx, b->fence);
            b->fence = NULL;
            q->head = b->next;
            if (q->head == NULL)
                q->tail = NULL;
            a->used -= b->size;
            infinirt__blk_release(a, b);
            moved++;
        }
        if (q->head == NULL)
            a->pq[i] = a->pq[--a->npq];
        else
            i++;
    }
    return moved;
}

/* ------------------------------------------------------ merging arenas */

/* Move the blocks of segment s from `from` to `to` (both locked). */
static void move_segment(infinirt__arena *to, infinirt__arena *from, infinirt__seg *s, bool keep_fences)
{
    const infinirt__pool_backend *be = to->be;
    unsigned gshift = to->gshift;
    /* Off from's empty stack first, so that the hash entries moved below
     * carry the flag as it will be (see INFINIRT__HW_STACKED). */
    infinirt__empty_drop(from, s);
    /* With keep_fences (same stream, work maybe still queued) the fence
     * goes along, and other arenas still wait for it (steal, release);
     * seg_unlink and seg_link move its count.  Otherwise the retired
     * stream's work has completed: so has its fence. */
    if (s->fence != NULL && !keep_fences) {
        be->fence_release(be->ctx, s->fence);
        s->fence = NULL;
        from->nfenced--;
    }
    for (infinirt__blk *b = &s->head; b != NULL; b = b->nphys) {
        unsigned st = infinirt__blk_state(b);
        if (st == INFINIRT__BLK_FREE)
            infinirt__bins_remove(infinirt__blk_bins(from, b), b, gshift);
        else if (st == INFINIRT__BLK_LOOSE)
            infinirt__blk_set_state(b, INFINIRT__BLK_FREE);
        else if (st == INFINIRT__BLK_USED)
            infinirt__ht_put(&to->blocks, infinirt__ht_del(&from->blocks, b->addr)); /* room made by the caller */
    }
    seg_unlink(from, s);
    seg_link(to, s);
    /* Into the new bins, coalescing blocks a failed queue left apart. */
    for (infinirt__blk *b = &s->head; b != NULL; b = b->nphys) {
        if (infinirt__blk_state(b) != INFINIRT__BLK_FREE)
            continue;
        while (b->nphys != NULL && infinirt__blk_state(b->nphys) == INFINIRT__BLK_FREE) {
            infinirt__blk *nb = b->nphys;
            b->size += nb->size;
            b->nphys = nb->nphys;
            if (nb->nphys != NULL)
                nb->nphys->pphys = b;
            if (nb->segst & INFINIRT__BLK_BITS)
                infinirt__seg_bit_clear(s, (nb->addr - s->base) >> gshift);
            infinirt__blk_put(&to->descs, nb);
        }
        infinirt__bins_insert(infinirt__blk_bins(to, b), b, gshift);
    }
    if (infinirt__seg_empty(s))
        infinirt__empty_push(to, s);
}

int infinirt__arena_merge_into(infinirt__arena *to, infinirt__arena *from, bool keep_fences)
{
    int rc = -1;
    infinirt__spin_lock(&to->lock);
    infinirt__spin_lock(&from->lock);
    infinirt__quick_flush(from);
    /* Room for every live block and every pending queue first, so nothing
     * below can fail (and nothing waits under these locks). */
    while (infinirt__ht_full(&to->blocks, from->blocks.count + 1))
        if (infinirt__ht_grow(&to->blocks) != 0)
            goto out;
    if (to->npq + from->npq > to->cappq) {
        unsigned cap = to->npq + from->npq;
        infinirt__pq *n = realloc(to->pq, cap * sizeof *n);
        if (n == NULL)
            goto out;
        to->pq = n;
        to->cappq = cap;
    }
    /* Pending frees keep their fences and queue keys. */
    while (from->npq > 0) {
        infinirt__pq *q = &from->pq[from->npq - 1];
        infinirt__blk *b;
        while ((b = q->head) != NULL) {
            q->head = b->next;
            (void)infinirt__pending_add(to, b, q->stream, q->sync, b->fence); /* room made above */
        }
        from->npq--;
    }
    while (from->segs != NULL)
        move_segment(to, from, from->segs, keep_fences);
    to->used += from->used;
    if (to->used > to->peak_used)
        to->peak_used = to->used;
    to->req_bytes += from->req_bytes;
    to->active += from->active;
    to->published += from->published;
    if (to->req_bytes > to->peak_req)
        to->peak_req = to->req_bytes;
    from->used = from->req_bytes = from->active = from->published = 0;
    from->stream = NULL;
    rc = 0;
out:
    infinirt__spin_unlock(&from->lock);
    infinirt__spin_unlock(&to->lock);
    return rc;
}
