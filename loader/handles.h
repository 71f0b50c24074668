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

/* This thread's last look-up of each kind: the handle value, the map's
 * value for it (generation << 32 | slot index), its slot, the live word's
 * high half, and the slot's owner (UINT64_MAX for none: no thread has that
 * id).  Only a hint: whatever starts from it checks the slot again. */
typedef struct {
    uintptr_t key;
    uint64_t val;
    infinirt__hslot *sl;
    uint64_t own;
    uint32_t hi;
} infinirt__handle_hint;

extern _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__handle_hint infinirt__tl_hint[];
/* How many objects are retired (handles.c, retire_locked) and not yet
 * freed: a borrower that gives its cell back and then reads 0 knows
 * nothing waits for it. */
extern atomic_size_t infinirt__handle_nretired;
/* Free the object retired with slot sl if no cell names sl any more. */
void infinirt__handle_reclaim(const void *sl);

/* Give back borrow cell `use` of this thread. */
static inline __attribute__((always_inline)) void infinirt__handle_return(int use)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    const void *sl = atomic_load_explicit(&p->cell[use], memory_order_relaxed);
    atomic_store_explicit(&p->cell[use], NULL, memory_order_release);
    /* The innermost cell given back: the cells in use end below it (and
     * below any given back earlier out of order). */
    if (use == p->depth - 1) {
        int d = use;
        while (d > 0 && atomic_load_explicit(&p->cell[d - 1], memory_order_relaxed) == NULL)
            d--;
        p->depth = d;
    }
    /* Another thread may have retired the object meanwhile and looked at
     * the cells before this store: then it is this thread's to free.  No
     * fence: that thread looks again after a second barrier (reclaim), which
     * either sees the cell empty or makes this load see the retire. */
    if (__builtin_expect(atomic_load_explicit(&infinirt__handle_nretired, memory_order_relaxed) != 0, 0))
        infinirt__handle_reclaim(sl);
}

/* The inline borrow: the object, with *use set, or NULL when the full
 * borrow must decide (nothing is held then). */
static inline __attribute__((always_inline)) void *infinirt__handle_borrow_mine(uint32_t kind, const void *h,
                                                                                int *use)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    const infinirt__handle_hint *hn = &infinirt__tl_hint[kind];
    uintptr_t key = (uintptr_t)h;
    /* The owner's id is never 0 in a hint that was set, and a thread
     * counted out (or never counted) has id 0: only a counted owner gets
     * past this. */
    if (__builtin_expect(hn->key != key || hn->own != p->id || key == 0 || p->depth >= INFINIRT__SOLO_CELLS, 0))
        return NULL;
    int i = p->depth;
    infinirt__hslot *sl = hn->sl;
    atomic_store_explicit(&p->cell[i], sl, memory_order_relaxed);
    p->depth = i + 1;
    /* No fence: see "borrows" in handles.c.  Only the compiler is kept
     * from moving the check before the cell's store. */
    atomic_signal_fence(memory_order_seq_cst);
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_acquire);
    /* Still that handle: live, of the hint's generation (so the same
     * incarnation of the slot, whose owner is the hint's), with its own
     * reference, under the same value. */
    if (__builtin_expect((uint32_t)(w >> 32) == hn->hi && (uint32_t)w != 0 &&
                             atomic_load_explicit(&sl->key, memory_order_relaxed) == key,
                         1)) {
        *use = i;
        return sl->obj;
    }
    infinirt__handle_return(i);
    return NULL;
}

#endif
