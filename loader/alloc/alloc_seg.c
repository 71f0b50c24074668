/*
 * alloc_seg.c - segments and fences: creating and giving back raw
 * allocations, attaching them to arenas, pending frees, releasing the cache,
 * moving empty segments between arenas, merging a retired stream's arena.
 */
#define _GNU_SOURCE
#include "alloc_int.h"
#include "../log.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ segments */

infinirt__seg *infinirt__seg_create(infinirt__pool *pool, void *p, size_t size, bool large)
{
    infinirt__seg *s = infinirt__seg_struct_new();
    if (s == NULL)
        return NULL;
    /* Not memset: a stale thread-local pointer may be reading `arena`
     * (NULL since the struct was detached) with an atomic load. */
    memset(&s->head, 0, sizeof s->head);
    s->fence = NULL;
    s->eidx = 0;
    s->large = large;
    s->base = (uintptr_t)p;
    s->size = size;
    s->pool = pool;
    s->prev = s->next = NULL;
    s->bits = NULL;
    s->nw0 = 0;
    infinirt__dir_insert(s);
    size_t r = atomic_fetch_add(&pool->reserved, size) + size;
    size_t pk = atomic_load_explicit(&pool->peak_reserved, memory_order_relaxed);
    while (r > pk && !atomic_compare_exchange_weak(&pool->peak_reserved, &pk, r))
        ;
    atomic_fetch_add(&pool->segments, 1);
    atomic_fetch_add(&pool->raw_allocs, 1);
    return s;
}

void infinirt__seg_destroy(infinirt__pool *pool, infinirt__seg *s)
{
    void *p = (void *)s->base;
    size_t size = s->size;
    if (s->fence != NULL)
        pool->be.fence_release(pool->be.ctx, s->fence);
    s->fence = NULL;
    free(s->bits);
    s->bits = NULL;
    s->nw0 = 0;
    /* Out of the directory before the backend may hand the range out again. */
    infinirt__dir_remove(s);
    infiniStatus_t st = pool->be.raw_free(pool->be.ctx, p);
    if (st != INFINI_STATUS_SUCCESS)
        INFINIRT__WARN("%s: giving %zu bytes at %p back to the backend failed (%d)", pool->be.label, size, p,
                       (int)st);
    atomic_fetch_sub(&pool->reserved, size);
    atomic_fetch_sub(&pool->segments, 1);
    atomic_fetch_add(&pool->raw_frees, 1);
}

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
    infinirt__bins_insert(infinirt__blk_bins(a, b), b, a->pool->gshift);
    infinirt__empty_push(a, s);
    return b;
}

void infinirt__seg_detach(infinirt__arena *a, infinirt__seg *s)
{
    unsigned gshift = a->pool->gshift;
    for (infinirt__blk *b = &s->head, *n; b != NULL; b = n) {
        n = b->nphys;
        if (infinirt__blk_state(b) == INFINIRT__BLK_FREE) {
            infinirt__bins_remove(infinirt__blk_bins(a, b), b, gshift);
        } else if (infinirt__blk_state(b) == INFINIRT__BLK_QUICK) {
            infinirt__quick_unlink(a, b, b->size >> gshift);
        }
        infinirt__blk_put(a, b);
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
    const infinirt__pool_backend *be = &a->pool->be;
    int done = 0;
    if (be->fence_query(be->ctx, s->fence, &done) != INFINI_STATUS_SUCCESS || !done)
        return false;
    be->fence_release(be->ctx, s->fence);
    s->fence = NULL;
    a->nfenced--;
    return true;
}

/* -------------------------------------------------------- pending frees */

int infinirt__pending_add(infinirt__arena *a, infinirt__blk *b, void *key, infinirt__fence *f)
{
    infinirt__pq *q = NULL;
    for (unsigned i = 0; i < a->npq && q == NULL; i++)
        if (a->pq[i].key == key)
            q = &a->pq[i];
    if (q == NULL) {
        if (a->npq == a->cappq) {
            unsigned cap = a->cappq ? a->cappq * 2 : 4;
            infinirt__pq *n = realloc(a->pq, cap * sizeof *n);
            if (n == NULL)
                return -1;
            a->pq = n;
            a->cappq = cap;
        }
        q = &a->pq[a->npq++];
        q->key = key;
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
    const infinirt__pool_backend *be = &a->pool->be;
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

/* ------------------------------------------------------ across arenas */

unsigned infinirt__arenas_snapshot(infinirt__pool *pool, infinirt__arena **out, unsigned max, unsigned start)
{
    pthread_mutex_lock(&pool->mu);
    unsigned n = start < pool->narenas ? pool->narenas - start : 0;
    n = n < max ? n : max;
    memcpy(out, pool->arenas + start, n * sizeof *out);
    pthread_mutex_unlock(&pool->mu);
    return n;
}

size_t infinirt__release_cached(infinirt__pool *pool)
{
    infinirt__arena *arenas[INFINIRT__SNAP_MAX];
    size_t freed = 0;
    for (unsigned start = 0, n; (n = infinirt__arenas_snapshot(pool, arenas, INFINIRT__SNAP_MAX, start)) != 0;
         start += n) {
        for (unsigned i = 0; i < n; i++) {
            infinirt__arena *a = arenas[i];
            infinirt__seg *out = NULL;
            infinirt__spin_lock(&a->lock);
            infinirt__pending_poll(a);
            infinirt__quick_flush(a);
            for (uint32_t k = 0; k < a->nes;) {
                infinirt__seg *s = a->estack[k];
                if (!infinirt__seg_empty(s)) {
                    infinirt__empty_drop(a, s); /* in use again: stale entry */
                    continue;
                }
                if (!infinirt__seg_fence_done(a, s)) {
                    k++;
                    continue;
                }
                infinirt__seg_detach(a, s); /* drops it from the stack */
                s->next = out;
                out = s;
            }
            infinirt__spin_unlock(&a->lock);
            /* Backend calls may be slow (pinned memory: milliseconds): made with
             * no lock held. */
            while (out != NULL) {
                infinirt__seg *s = out;
                out = s->next;
                freed += s->size;
                infinirt__seg_destroy(pool, s);
            }
        }
    }
    return freed;
}

void infinirt__arena_shrink(infinirt__arena *a, size_t grow)
{
    infinirt__seg *out = NULL;
    infinirt__spin_lock(&a->lock);
    for (uint32_t k = 0; k < a->nes && a->reserved + grow > 3 * a->peak_used;) {
        infinirt__seg *s = a->estack[k];
        if (!infinirt__seg_empty(s)) {
            infinirt__empty_drop(a, s);
            continue;
        }
        if (!infinirt__seg_fence_done(a, s)) {
            k++;
            continue;
        }
        infinirt__seg_detach(a, s);
        s->next = out;
        out = s;
    }
    infinirt__spin_unlock(&a->lock);
    while (out != NULL) {
        infinirt__seg *s = out;
        out = s->next;
        infinirt__seg_destroy(a->pool, s);
    }
}

infinirt__seg *infinirt__steal(infinirt__pool *pool, infinirt__arena *to, size_t n, bool large)
{
    infinirt__arena *arenas[INFINIRT__SNAP_MAX];
    size_t want = n << pool->gshift;
    size_t waste = large ? (n / INFINIRT__WASTE_DIV) << pool->gshift : SIZE_MAX;
    for (unsigned start = 0, na; (na = infinirt__arenas_snapshot(pool, arenas, INFINIRT__SNAP_MAX, start)) != 0;
         start += na) {
        for (unsigned i = 0; i < na; i++) {
            infinirt__arena *a = arenas[i];
            if (a == to || !infinirt__spin_free(&a->lock))
                continue; /* busy: not worth waiting for on this path */
            infinirt__spin_lock(&a->lock);
            /* Blocks queued behind fences that have completed since (a
             * retired stream's or graph's, which no one allocates from to
             * poll them) free their segments for stealing. */
            if (a->npq != 0)
                infinirt__pending_poll(a);
            unsigned looked = 0;
            /* A few candidates only: this runs on a miss, before a raw
             * allocation, and must stay cheap whatever the cache holds. */
            for (uint32_t k = a->nes; k > 0 && looked < 16;) {
                infinirt__seg *s = a->estack[--k];
                if (!infinirt__seg_empty(s)) {
                    infinirt__empty_drop(a, s);
                    continue;
                }
                looked++;
                if (s->large != large || s->size < want)
                    continue;
                if (large && s->size - want > waste && s->size > pool->max_split)
                    continue;
                if (!infinirt__seg_fence_done(a, s))
                    continue;
                infinirt__seg_detach(a, s);
                infinirt__spin_unlock(&a->lock);
                return s;
            }
            infinirt__spin_unlock(&a->lock);
        }
    }
    return NULL;
}

/* Move the blocks of segment s from `from` to `to` (both locked). */
static void move_segment(infinirt__arena *to, infinirt__arena *from, infinirt__seg *s)
{
    const infinirt__pool_backend *be = &to->pool->be;
    unsigned gshift = to->pool->gshift;
    /* Off from's empty stack first, so that the hash entries moved below
     * carry the flag as it will be (see INFINIRT__HW_STACKED). */
    infinirt__empty_drop(from, s);
    /* The retired stream's work has completed: so has its fence. */
    if (s->fence != NULL) {
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
            infinirt__ht_put(to, infinirt__ht_del(from, b->addr)); /* room made by the caller */
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
            infinirt__blk_put(to, nb);
        }
        infinirt__bins_insert(infinirt__blk_bins(to, b), b, gshift);
    }
    if (infinirt__seg_empty(s))
        infinirt__empty_push(to, s);
}

int infinirt__arena_merge_into(infinirt__arena *to, infinirt__arena *from)
{
    int rc = -1;
    infinirt__spin_lock(&to->lock);
    infinirt__spin_lock(&from->lock);
    infinirt__quick_flush(from);
    /* Room for every live block and every pending queue first, so nothing
     * below can fail (and nothing waits under these locks). */
    while (infinirt__ht_full(to, from->ht_count + 1))
        if (infinirt__ht_grow(to) != 0)
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
            (void)infinirt__pending_add(to, b, q->key, b->fence); /* room made above */
        }
        from->npq--;
    }
    while (from->segs != NULL)
        move_segment(to, from, from->segs);
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
