/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_solo.h - one thread alone.  Whether the process has a single
 * *participant* - a thread that takes an allocator lock, borrows a handle
 * or releases one (handles.c) - and what that thread may skip while it is
 * alone: the locked instruction of a lock, the reference of a call.
 *
 * A thread that is alone still writes a word where the others would look
 * (the lock's `solo` flag, a borrow cell) and then reads the participants'
 * word again; the others, joining, make that store visible without the
 * lone thread paying for a fence: the thread whose join makes the count 2
 * issues membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full
 * barrier on every thread of the process.  So for the lone thread's store
 * S and its reload L, either S comes before its barrier (and the joiner,
 * and everyone after it, sees S), or L comes after (and reads the new
 * word, and the lone thread backs out).  The word counts leaves too: a
 * thread that joins and leaves between the lone thread's first read and
 * its reload changes it, so the reload never takes "1 again" for "still
 * 1".  Without membarrier (an old kernel, a sandbox) no thread is ever
 * alone.
 *
 * In the lowest layer because the allocator's spinlocks use it; the handle
 * registry uses it too (its borrow cells are the participants' cells).
 */
#ifndef INFINIRT_LOADER_ALLOC_SOLO_H_
#define INFINIRT_LOADER_ALLOC_SOLO_H_

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum { INFINIRT__SOLO_CELLS = 4 }; /* nested borrows per thread (a call holds at most 2) */

/* A participant: its borrow cells (what handles.c keeps without a
 * reference; NULL = free) and how many it uses, its parked borrow, its
 * place in the list.  The park (handles.h) is the slot of the stream
 * the thread, its owner, borrowed last, kept between its calls so the
 * next call on it writes no cell: bit 0 set while a call uses it; 0 =
 * none.  Whoever looks at the cells looks at the park too; a releaser
 * may take an idle one out (infinirt__solo_cell_held). */
typedef struct infinirt__solo_thread {
    _Atomic(void *) cell[INFINIRT__SOLO_CELLS];
    _Atomic uintptr_t park;
    int depth;     /* cells in use, from 0 (the owner's only) */
    bool joined;   /* counted (the owner's only) */
    bool stranger; /* could not be counted: never tries again (the owner's only) */
    bool exiting;  /* counted out at thread exit: never counted again (the owner's only) */
    uint64_t id;   /* unique in the process, from 1; 0 where nothing may be kept in a cell: never counted, or out */
    struct infinirt__solo_thread *next;
} infinirt__solo_thread;

extern _Thread_local __attribute__((tls_model("initial-exec"))) infinirt__solo_thread infinirt__tl_solo;
/* The participants' word: their number in the low 32 bits (1 << 30 added
 * for good where nobody may be alone), how many have left in the high 32. */
extern _Atomic uint64_t infinirt__solo_word;

/* Count this thread in.  False when it cannot be (no thread-specific key
 * for its exit, or it is exiting): then nobody in the process is ever
 * alone again, since a lone thread would not see this one. */
bool infinirt__solo_join(void);

/* Whether the calling thread is counted, joining it first. */
static inline bool infinirt__solo_joined(void)
{
    return __builtin_expect(infinirt__tl_solo.joined, 1) || infinirt__solo_join();
}

/* The participants' word, and whether it says one participant (the
 * caller, when it is counted). */
static inline uint64_t infinirt__solo_read(void)
{
    return atomic_load_explicit(&infinirt__solo_word, memory_order_acquire);
}
static inline bool infinirt__solo_is_one(uint64_t w)
{
    return (uint32_t)w == 1;
}
static inline bool infinirt__solo_one(void)
{
    return infinirt__solo_is_one(infinirt__solo_read());
}

/* Raise *flag (a word the others read before they touch what it guards),
 * when the calling thread is alone, and report whether it still is: true,
 * the caller proceeds with the flag raised and lowers it with a release
 * store; false, the flag is down again and the caller takes the ordinary
 * path. */
static inline __attribute__((always_inline)) bool infinirt__solo_enter_as(atomic_int *flag, bool joined)
{
    uint64_t w;
    if (!joined || !infinirt__solo_is_one(w = infinirt__solo_read()))
        return false;
    atomic_store_explicit(flag, 1, memory_order_relaxed);
    /* No fence: the joiner's membarrier stands for it.  Only the compiler
     * is kept from moving the reload above the store. */
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(infinirt__solo_read() == w, 1))
        return true;
    atomic_store_explicit(flag, 0, memory_order_release);
    return false;
}
static inline __attribute__((always_inline)) bool infinirt__solo_enter(atomic_int *flag)
{
    return infinirt__solo_enter_as(flag, infinirt__solo_joined());
}
/* The same for a thread counted already; false, with no call made, for
 * one not counted yet (its caller takes the ordinary path, which joins). */
static inline __attribute__((always_inline)) bool infinirt__solo_enter_counted(atomic_int *flag)
{
    return infinirt__solo_enter_as(flag, __builtin_expect(infinirt__tl_solo.joined, 1));
}

/* This thread's id (joining it first), or 0: what the handle registry
 * records as the owner of a handle this thread makes. */
static inline uint64_t infinirt__solo_id(void)
{
    return infinirt__solo_joined() ? infinirt__tl_solo.id : 0;
}

/* A spinlock that a thread alone takes with no locked instruction: it
 * raises `solo` (infinirt__solo_enter).  Everyone else takes `held` with
 * an exchange and then waits for `solo` to be down; a lone thread that
 * finds itself no longer alone after raising `solo` lowers it and takes
 * `held` too.  So at most one thread holds the lock either way, and since
 * only a lone thread ever raises `solo`, a holder of `held` finds it down
 * once it has waited.  Zero-initialised: free. */
typedef struct {
    atomic_int held;
    atomic_int solo;
} infinirt__solo_lock;

/* The ordinary acquisition: `held` (spinning, then yielding), then `solo`
 * down (a thread that was alone until this one joined may still be
 * inside). */
static __attribute__((noinline)) void infinirt__solo_lock_take_slow(infinirt__solo_lock *l)
{
    for (unsigned n = 0;; n++) {
        if (atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
            !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
            break;
        if (n < 128) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
    while (atomic_load_explicit(&l->solo, memory_order_acquire) != 0) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static inline __attribute__((always_inline)) void infinirt__solo_lock_take(infinirt__solo_lock *l)
{
    if (__builtin_expect(!infinirt__solo_enter(&l->solo), 0))
        infinirt__solo_lock_take_slow(l);
}

static inline __attribute__((always_inline)) void infinirt__solo_lock_give(infinirt__solo_lock *l)
{
    /* `solo` up while this thread holds the lock: it is this thread's. */
    if (atomic_load_explicit(&l->solo, memory_order_relaxed) != 0)
        atomic_store_explicit(&l->solo, 0, memory_order_release);
    else
        atomic_store_explicit(&l->held, 0, memory_order_release);
}

/* Whether l is not held (a hint). */
static inline bool infinirt__solo_lock_free(infinirt__solo_lock *l)
{
    return atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&l->solo, memory_order_relaxed) == 0;
}

/* Whether some participant's cell, or a call's park, holds p.  The caller
 * has made the change that stops new cells from keeping p (a handle
 * killed, its last reference dropped).  Only a thread alone, or the one
 * thread `owner` (an id, 0 for none), keeps p in a cell or its park: when
 * the caller is either, its own cells and park answer; otherwise a barrier
 * (membarrier) first makes every cell and park written so far visible,
 * and all are looked at.  A park that holds p with no call using it is
 * emptied (the owner's next borrow writes it again and then finds p's
 * handle dead), and does not count. */
bool infinirt__solo_cell_held(const void *p, uint64_t owner);

#endif
