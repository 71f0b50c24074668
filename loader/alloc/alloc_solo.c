/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_solo.c - the participants (alloc_solo.h): joining, leaving at
 * thread exit, and looking at every participant's cells.
 */
#define _GNU_SOURCE
#include "alloc_solo.h"
#include "../log.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOT_ALONE (UINT64_C(1) << 30) /* added to the count for good: nobody is alone */
#define ONE_LEFT (UINT64_C(1) << 32)  /* a leave, in the high half of the word */

_Thread_local __attribute__((tls_model("initial-exec"))) infinirt__solo_thread infinirt__tl_solo;
_Atomic uint64_t infinirt__solo_word;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the list, joins and leaves */
static infinirt__solo_thread *g_threads;                   /* counted threads, under g_lock */
static atomic_bool g_off;                                  /* membarrier unusable: decided before anyone was alone */
static bool g_checked;                                     /* whether membarrier is usable was asked; under g_lock */
static bool g_registered;      /* PRIVATE_EXPEDITED registered (at the first 1 -> 2 join); under g_lock */
static pthread_key_t g_key;    /* its destructor counts an exiting thread out */
static atomic_bool g_key_made; /* written under g_lock */

/* A counted thread exits (the key's destructor): it holds nothing (its
 * park, if any, is idle, which keeps nothing). */
static void leave(void *arg)
{
    infinirt__solo_thread *p = arg;
    pthread_mutex_lock(&g_lock);
    for (infinirt__solo_thread **pp = &g_threads; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    atomic_fetch_add_explicit(&infinirt__solo_word, ONE_LEFT - 1, memory_order_release);
    pthread_mutex_unlock(&g_lock);
    p->joined = false;
    p->exiting = true; /* a later destructor's call must not count it in again */
    p->id = 0;         /* nothing of its own is borrowed any more (handles.h) */
}

/* The key's destructor lives in this library: drop the key if the library
 * is unloaded while counted threads still run. */
__attribute__((destructor)) static void key_unload(void)
{
    if (atomic_load(&g_key_made))
        pthread_key_delete(g_key);
}

static long membarrier_cmd(int cmd)
{
    return syscall(__NR_membarrier, cmd, 0, 0);
}

/* Whether membarrier can publish a lone thread's stores, asked once
 * before anyone may be alone (caller holds g_lock): if not, nobody ever is. */
static void check_locked(void)
{
    if (g_checked)
        return;
    g_checked = true;
    long mask = membarrier_cmd(MEMBARRIER_CMD_QUERY);
    if (mask < 0 || !(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED) || !(mask & MEMBARRIER_CMD_GLOBAL)) {
        atomic_store(&g_off, true);
        atomic_fetch_add(&infinirt__solo_word, NOT_ALONE);
    }
}

/* The barrier that ends a thread's being alone (caller holds g_lock): the
 * expedited one, registered the first time (its registration waits for
 * the kernel, so a process that stays single-threaded never pays it);
 * the global one, slower, if that fails. */
static void barrier_locked(void)
{
    if (atomic_load_explicit(&g_off, memory_order_relaxed))
        return; /* nobody was ever alone */
    if (!g_registered && membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        g_registered = true;
    if (g_registered && membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    if (membarrier_cmd(MEMBARRIER_CMD_GLOBAL) == 0)
        return;
    /* The query said both work; neither did.  Nothing is left that
     * reaches the lone thread's store buffer. */
    INFINIRT__ERROR("membarrier failed although the kernel reported it: a thread that was alone may "
                    "race with this one");
}

/* This thread cannot be counted (caller holds g_lock): nobody is alone
 * from now on, and a thread alone until now is made to see it. */
static void stranger_locked(infinirt__solo_thread *p)
{
    static bool done;
    p->stranger = true;
    if (done)
        return;
    done = true;
    atomic_fetch_add(&infinirt__solo_word, NOT_ALONE);
    barrier_locked();
}

__attribute__((noinline)) bool infinirt__solo_join(void)
{
    infinirt__solo_thread *p = &infinirt__tl_solo;
    if (p->stranger)
        return false;
    pthread_mutex_lock(&g_lock);
    check_locked();
    if (p->exiting) {
        /* Called from a thread-specific destructor that runs after ours:
         * a second setspecific could outlive the destructor rounds. */
        stranger_locked(p);
        pthread_mutex_unlock(&g_lock);
        return false;
    }
    if (!atomic_load_explicit(&g_key_made, memory_order_relaxed)) {
        if (pthread_key_create(&g_key, leave) != 0) {
            stranger_locked(p);
            pthread_mutex_unlock(&g_lock);
            return false;
        }
        atomic_store(&g_key_made, true);
    }
    if (pthread_setspecific(g_key, p) != 0) {
        stranger_locked(p);
        pthread_mutex_unlock(&g_lock);
        return false;
    }
    uint64_t w = atomic_fetch_add(&infinirt__solo_word, 1) + 1;
    /* Only the join that ends a thread's being alone needs the barrier:
     * with two or more counted before it, nobody went solo since the last
     * one. */
    if ((uint32_t)w == 2)
        barrier_locked();
    static uint64_t ids;
    p->id = atomic_load_explicit(&g_off, memory_order_relaxed) ? 0 : ++ids;
    p->next = g_threads;
    g_threads = p;
    p->joined = true;
    pthread_mutex_unlock(&g_lock);
    return true;
}

bool infinirt__solo_cell_held(const void *v, uint64_t owner)
{
    if (atomic_load_explicit(&g_off, memory_order_relaxed))
        return false; /* decided before anything could be kept in a cell */
    infinirt__solo_thread *me = &infinirt__tl_solo;
    if (infinirt__solo_joined() && ((me->id != 0 && me->id == owner) || infinirt__solo_one())) {
        /* Nobody else keeps v: the owner does only in its own calls (this
         * one's further out, from a callback), and a thread alone only
         * while no owner of anything it uses is counted. */
        for (int i = 0; i < me->depth; i++) {
            if (atomic_load_explicit(&me->cell[i], memory_order_relaxed) == v)
                return true;
        }
        /* Its park: held while a call of this thread (further out) uses
         * it, else let go. */
        uintptr_t pk = atomic_load_explicit(&me->park, memory_order_relaxed);
        if ((pk & ~(uintptr_t)1) == (uintptr_t)v) {
            if (pk & 1)
                return true;
            atomic_store_explicit(&me->park, 0, memory_order_relaxed);
        }
        return false;
    }
    /* The owner may be inside a call on v right now, its cell in its store
     * buffer: the barrier makes it visible, or makes the owner's check see
     * the caller's change. */
    pthread_mutex_lock(&g_lock);
    barrier_locked();
    bool found = false;
    for (infinirt__solo_thread *q = g_threads; q != NULL && !found; q = q->next) {
        for (int i = 0; i < INFINIRT__SOLO_CELLS && !found; i++)
            found = atomic_load_explicit(&q->cell[i], memory_order_acquire) == v;
        /* A park that holds v with no call using it is emptied; if its
         * owner began a call meanwhile (the exchange fails), the call
         * holds v, or has seen the handle dead and lets go of it. */
        uintptr_t pk = atomic_load_explicit(&q->park, memory_order_acquire);
        if (!found && (pk & ~(uintptr_t)1) == (uintptr_t)v) {
            found = (pk & 1) != 0 ||
                    (!atomic_compare_exchange_strong(&q->park, &pk, 0) && (pk & ~(uintptr_t)1) == (uintptr_t)v);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return found;
}
