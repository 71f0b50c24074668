/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handles.h - the handle registry's borrow and its return, inline in the
 * calls that use them (the rest of the registry is handles.c, whose
 * "borrows" comment gives the protocol).
 *
 * The inline borrow serves the usual case, a thread borrowing a handle it
 * made and used last: its per-kind hint names the handle's slot, and the
 * slot's owner is the thread.  It writes the slot into a free cell, then
 * checks the slot is still that handle (live, the hint's generation, the
 * same value), as the full borrow does; anything else (another owner, a
 * thread alone, a value the hint does not name, a handle since destroyed)
 * goes to the full borrow.  Included by internal.h only.
 */
#ifndef INFINIRT_LOADER_HANDLES_H_
#define INFINIRT_LOADER_HANDLES_H_

#include "alloc_solo.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A registry slot (handles.c): one 64-bit word (generation:31 | live:1 |
 * refs:32) beside the object and the handle value. */
typedef struct infinirt__hslot {
    _Alignas(64) _Atomic uint64_t word;
    void *obj;
    _Atomic uintptr_t key;  /* the handle value, set before the slot goes live */
    uint32_t next_free;     /* free list link (index + 1), under the table lock */
    _Atomic uint64_t owner; /* the id of the thread that made it (borrows), set before it goes live */
} infinirt__hslot;

/* The word's live bit and generation, as they sit in its high 32 bits. */
#define INFINIRT__HSLOT_HI(gen) (((uint32_t)(gen) << 1) | 1u)

/* Handle kinds of the registry. */
#define INFINIRT__KIND_STREAM 1u
#define INFINIRT__KIND_EVENT 2u
#define INFINIRT__KIND_GRAPH 3u
#define INFINIRT__KIND_EXEC 4u
#define INFINIRT__KINDS 5u

/* A look-up this thread made: the handle value, its slot and the slot's
 * index, and the live word's high half (INFINIRT__HSLOT_HI of the
 * generation).  Only a hint: whatever starts from it checks the slot
 * again.  24 bytes: the loader's thread-local data is initial-exec, which a
 * program that dlopens the loader takes from glibc's small static reserve. */
typedef struct {
    uintptr_t key;
    infinirt__hslot *sl;
    uint32_t idx;
    uint32_t hi;
} infinirt__handle_hint;

/* This thread's hints: four for streams (a program that takes turns on a
 * few streams finds each of them here), one for each other kind; and
 * which stream hint a new stream's look-up replaces next. */
#define INFINIRT__HINT_STREAM_WAYS 4u
#define INFINIRT__HINTS (INFINIRT__HINT_STREAM_WAYS + INFINIRT__KINDS - 2u)
extern _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__handle_hint infinirt__tl_hint[];
extern _Thread_local __attribute__((tls_model("initial-exec"))) unsigned infinirt__tl_hint_next;

/* The hints a key of this kind may be in: the first, and how many. */
static inline __attribute__((always_inline)) infinirt__handle_hint *infinirt__hints(uint32_t kind, unsigned *n)
{
    if (kind == INFINIRT__KIND_STREAM) {
        *n = INFINIRT__HINT_STREAM_WAYS;
        return &infinirt__tl_hint[0];
    }
    *n = 1;
    return &infinirt__tl_hint[INFINIRT__HINT_STREAM_WAYS + kind - 2u];
}

/* The hint for key (not 0) of this kind, or NULL.  The stream ways are
 * compared one after the other, not in a loop: a look-up that misses them
 * all (a thread taking turns over more streams than there are ways) tries
 * them twice or three times on its way to the map, and the loop cost more
 * than the map. */
_Static_assert(INFINIRT__HINT_STREAM_WAYS == 4, "infinirt__hint_find compares four stream ways");
static inline __attribute__((always_inline)) infinirt__handle_hint *infinirt__hint_find(uint32_t kind, uintptr_t key)
{
    infinirt__handle_hint *h = infinirt__tl_hint;
    if (kind != INFINIRT__KIND_STREAM) {
        h += INFINIRT__HINT_STREAM_WAYS + kind - 2u;
        return h->key == key ? h : NULL;
    }
    return h[0].key == key   ? &h[0]
           : h[1].key == key ? &h[1]
           : h[2].key == key ? &h[2]
           : h[3].key == key ? &h[3]
                             : NULL;
}

/* The map's value for a hint (generation << 32 | slot index). */
static inline uint64_t infinirt__hint_val(const infinirt__handle_hint *hn)
{
    return (uint64_t)(hn->hi >> 1) << 32 | hn->idx;
}

/* Remember that key, which no hint names (`absent`) or may name, maps to
 * val (generation << 32 | slot index), whose slot is sl: its own hint
 * again, else the next stream way in turn (the one hint of another kind). */
static inline __attribute__((always_inline)) void infinirt__hint_put(uint32_t kind, uintptr_t key, uint64_t val,
                                                                     infinirt__hslot *sl, bool absent)
{
    infinirt__handle_hint *hn = absent ? NULL : infinirt__hint_find(kind, key);
    if (hn == NULL) {
        unsigned n;
        hn = infinirt__hints(kind, &n);
        hn += n > 1 ? infinirt__tl_hint_next++ % n : 0;
    }
    *hn = (infinirt__handle_hint){.key = key, .sl = sl, .idx = (uint32_t)val, .hi = INFINIRT__HSLOT_HI(val >> 32)};
}

/* What a look-up with no lock reads of a kind's registry (handles.c, "the
 * registry"): the map from handle value to (generation << 32 | slot
 * index), open addressing with linear probing, and the chunks of slots.
 * The rest of the registry (its lock, free list, retired slots) is
 * handles.c's own. */
typedef struct {
    _Atomic uintptr_t key; /* 0 = empty */
    _Atomic uint64_t val;  /* generation << 32 | slot index */
} infinirt__hmap_entry;

typedef struct infinirt__hmap {
    size_t mask;
    struct infinirt__hmap *retired; /* the next of the arrays the map left (handles.c), kept */
    infinirt__hmap_entry e[];
} infinirt__hmap;

#define INFINIRT__HCHUNK_SLOTS 1024u
#define INFINIRT__HMAX_CHUNKS 4096u /* 4M live handles of each kind */

typedef struct {
    _Atomic(infinirt__hmap *) map;
    _Atomic(infinirt__hslot *) chunks[INFINIRT__HMAX_CHUNKS]; /* never freed */
} infinirt__hindex;

extern __attribute__((visibility("hidden"))) infinirt__hindex infinirt__handle_index[INFINIRT__KINDS];

static inline size_t infinirt__hmap_hash(uintptr_t key, size_t mask)
{
    /* Fibonacci hashing: handle values are aligned addresses, whose low
     * bits say nothing. */
    uint64_t h = (uint64_t)key * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 20) & mask;
}

/* The map's value for key (not 0), read with no lock: true with *val and
 * its slot in *sl, or false (not found, or found in a chunk this thread
 * does not see yet).  Only a hint, as a hint is: whatever starts from it
 * checks the slot (live, that generation, that value). */
static inline __attribute__((always_inline)) bool infinirt__hmap_peek(uint32_t kind, uintptr_t key, uint64_t *val,
                                                                      infinirt__hslot **sl)
{
    infinirt__hindex *ix = &infinirt__handle_index[kind];
    infinirt__hmap *a = atomic_load_explicit(&ix->map, memory_order_acquire);
    if (__builtin_expect(a == NULL, 0))
        return false;
    size_t mask = a->mask;
    for (size_t i = infinirt__hmap_hash(key, mask), n = 0; n <= mask; i = (i + 1) & mask, n++) {
        uintptr_t k = atomic_load_explicit(&a->e[i].key, memory_order_acquire);
        if (k == key) {
            uint64_t v = atomic_load_explicit(&a->e[i].val, memory_order_acquire);
            uint32_t idx = (uint32_t)v;
            infinirt__hslot *chunk =
                atomic_load_explicit(&ix->chunks[idx / INFINIRT__HCHUNK_SLOTS], memory_order_acquire);
            if (__builtin_expect(chunk == NULL, 0))
                return false;
            *val = v;
            *sl = &chunk[idx % INFINIRT__HCHUNK_SLOTS];
            return true;
        }
        if (k == 0)
            return false;
    }
    return false;
}

/* How many objects are retired (handles.c, retire_locked) and not yet
 * freed: a borrower that gives its cell back and then reads 0 knows
 * nothing waits for it. */
extern __attribute__((visibility("hidden"))) atomic_size_t infinirt__handle_nretired;
/* Free the object retired with slot sl if no cell names sl any more. */
void infinirt__handle_reclaim(const void *sl);

/* The `use` of a borrow from the thread's park (infinirt__handle_borrow_mine):
 * past the cells. */
#define INFINIRT__PARK_USE INFINIRT__SOLO_CELLS

/* Give back borrow cell `use` of this thread, or its park, all but its
 * rare call: true when the caller must still call
 * infinirt__handle_reclaim(*sl) (a hot path that ends here makes it a tail
 * call, and so saves no register). */
static inline __attribute__((always_inline)) bool infinirt__handle_return_but_reclaim(int use, const void **sl)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    if (use == INFINIRT__PARK_USE) {
        /* Parked again, idle.  A releaser that saw the park in use retired
         * the object: then freeing it is this thread's, as for a cell. */
        uintptr_t pk = atomic_load_explicit(&p->park, memory_order_relaxed) & ~(uintptr_t)1;
        atomic_store_explicit(&p->park, pk, memory_order_release);
        *sl = (const void *)pk;
        return __builtin_expect(atomic_load_explicit(&infinirt__handle_nretired, memory_order_relaxed) != 0, 0);
    }
    /* (unsigned: use is never negative here, and a caller keeps it in one
     * register across its calls rather than a sign-extended copy too.) */
    _Atomic(void *) *c = &p->cell[(unsigned)use];
    *sl = atomic_load_explicit(c, memory_order_relaxed);
    atomic_store_explicit(c, NULL, memory_order_release);
    /* The innermost cell given back: the cells in use end below it (and
     * below any given back earlier out of order). */
    if (__builtin_expect(use == p->depth - 1, 1)) {
        int d = use;
        while (__builtin_expect(d > 0, 0) && atomic_load_explicit(&p->cell[d - 1], memory_order_relaxed) == NULL)
            d--;
        p->depth = d;
    }
    /* Another thread may have retired the object meanwhile and looked at
     * the cells before this store: then it is this thread's to free.  No
     * fence: that thread looks again after a second barrier (reclaim), which
     * either sees the cell empty or makes this load see the retire. */
    return __builtin_expect(atomic_load_explicit(&infinirt__handle_nretired, memory_order_relaxed) != 0, 0);
}

/* Give back borrow cell `use` of this thread, or its park. */
static inline __attribute__((always_inline)) void infinirt__handle_return(int use)
{
    const void *sl;
    if (infinirt__handle_return_but_reclaim(use, &sl))
        infinirt__handle_reclaim(sl);
}

/* The inline borrow of a handle no hint names (a thread taking turns over
 * more streams than there are ways): the map, with no lock, as the full
 * borrow reads it, then the same checks as from a hint.  The map has a
 * generation before its slot has that incarnation's owner, so the owner
 * is read again once the slot is found live of that generation (whose
 * owner was written before it went live).  reclaim: as in
 * infinirt__handle_borrow_mine_but_reclaim. */
static inline __attribute__((always_inline)) void *infinirt__handle_borrow_mapped(uint32_t kind, uintptr_t key,
                                                                                  int *use, const void **reclaim)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    uint64_t val;
    infinirt__hslot *sl;
    if (__builtin_expect(p->depth >= INFINIRT__SOLO_CELLS, 0) || !infinirt__hmap_peek(kind, key, &val, &sl))
        return NULL;
    uint64_t id = p->id;
    if (atomic_load_explicit(&sl->owner, memory_order_relaxed) != id || id == 0)
        return NULL; /* not this thread's (the full borrow decides): no cell written */
    int i = p->depth;
    atomic_store_explicit(&p->cell[i], sl, memory_order_relaxed);
    p->depth = i + 1;
    atomic_signal_fence(memory_order_seq_cst); /* as in infinirt__handle_borrow_mine */
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_acquire);
    if (__builtin_expect((uint32_t)(w >> 32) == INFINIRT__HSLOT_HI(val >> 32) && (uint32_t)w != 0 &&
                             atomic_load_explicit(&sl->key, memory_order_relaxed) == key &&
                             atomic_load_explicit(&sl->owner, memory_order_relaxed) == id,
                         1)) {
        infinirt__hint_put(kind, key, val, sl, true); /* no hint names key */
        *use = i;
        return sl->obj;
    }
    const void *r;
    if (infinirt__handle_return_but_reclaim(i, &r))
        *reclaim = r;
    return NULL;
}

/* Whether slot sl, just written to a cell or the park, is still the
 * handle hint hn names: live, of the hint's generation (the incarnation
 * the hint saw), with its own reference, under the same value key. */
static inline __attribute__((always_inline)) bool infinirt__hint_still(const infinirt__hslot *sl,
                                                                       const infinirt__handle_hint *hn, uintptr_t key)
{
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_acquire);
    return (uint32_t)(w >> 32) == hn->hi && (uint32_t)w != 0 &&
           atomic_load_explicit(&sl->key, memory_order_relaxed) == key;
}

/* infinirt__handle_borrow_mine but for its rare call: where it returns
 * NULL having given back a cell (or the park) whose slot must be
 * reclaimed, *reclaim (NULL on entry) is set to that slot, for the caller
 * to give infinirt__handle_reclaim (a hot path makes it on its way out, by
 * a tail call, and so saves no register).  A stream's borrow by its owner,
 * outside another call's use of the park, goes through the thread's park
 * (alloc_solo.h) rather than a cell: the slot stays there after the call,
 * so the next call on the same stream writes the park once, with its
 * in-use bit, and its return clears the bit; the slot is checked as a
 * cell's borrow checks it (the park written before the check, as a cell
 * is). */
static inline __attribute__((always_inline)) void *
infinirt__handle_borrow_mine_but_reclaim(uint32_t kind, const void *h, int *use, const void **reclaim)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    uintptr_t key = (uintptr_t)h;
    if (__builtin_expect(key == 0, 0))
        return NULL; /* (an empty hint has key 0) */
    const infinirt__handle_hint *hn = infinirt__hint_find(kind, key);
    if (__builtin_expect(hn == NULL, 0))
        return infinirt__handle_borrow_mapped(kind, key, use, reclaim);
    infinirt__hslot *sl = hn->sl;
    /* Only the handle's owner, counted (a thread counted out, or never
     * counted, has id 0, as has the owner of a handle made by one).  The
     * owner is written before its incarnation goes live and a slot's
     * generations only grow, so once the check below finds the hint's
     * generation live, this was that incarnation's owner (this thread saw
     * that generation live when it made the hint). */
    uint64_t id = p->id;
    if (__builtin_expect(atomic_load_explicit(&sl->owner, memory_order_relaxed) != id || id == 0, 0))
        return NULL;
    if (kind == INFINIRT__KIND_STREAM) {
        uintptr_t pk = atomic_load_explicit(&p->park, memory_order_relaxed);
        if (__builtin_expect(!(pk & 1), 1)) {
            atomic_store_explicit(&p->park, (uintptr_t)sl | 1, memory_order_relaxed);
            atomic_signal_fence(memory_order_seq_cst); /* as for a cell, below */
            if (__builtin_expect(infinirt__hint_still(sl, hn, key), 1)) {
                *use = INFINIRT__PARK_USE;
                return sl->obj;
            }
            /* Not that handle any more: the park is let go of, as a cell
             * is given back (a releaser that saw it in use retired sl).
             * The slot it held before needs nothing: an idle park never
             * keeps an object retired (infinirt__solo_cell_held). */
            atomic_store_explicit(&p->park, 0, memory_order_release);
            if (__builtin_expect(atomic_load_explicit(&infinirt__handle_nretired, memory_order_relaxed) != 0, 0))
                *reclaim = sl;
            return NULL;
        }
    }
    int i = p->depth; /* read once: only this thread writes it */
    if (__builtin_expect(i >= INFINIRT__SOLO_CELLS, 0))
        return NULL;
    atomic_store_explicit(&p->cell[(unsigned)i], sl, memory_order_relaxed);
    p->depth = i + 1;
    /* No fence: see "borrows" in handles.c.  Only the compiler is kept
     * from moving the check before the cell's store. */
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(infinirt__hint_still(sl, hn, key), 1)) {
        *use = i;
        return sl->obj;
    }
    const void *r;
    if (infinirt__handle_return_but_reclaim(i, &r))
        *reclaim = r;
    return NULL;
}

/* The inline borrow: the object, with *use set, or NULL when the full
 * borrow must decide (nothing is held then). */
static inline __attribute__((always_inline)) void *infinirt__handle_borrow_mine(uint32_t kind, const void *h,
                                                                                int *use)
{
    const void *reclaim = NULL;
    void *obj = infinirt__handle_borrow_mine_but_reclaim(kind, h, use, &reclaim);
    if (__builtin_expect(reclaim != NULL, 0))
        infinirt__handle_reclaim(reclaim);
    return obj;
}

#endif
