/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_tcache.c - thread arenas (alloc_pool.h): each thread's own arena
 * of a pool for its small allocations on the NULL stream, found through a
 * record of the thread's, and given back to the pool's shared arena of the
 * NULL stream when the thread exits (a thread-specific key's destructor)
 * or dropped when the pool is destroyed.  Design: docs/allocator.md,
 * "Thread arenas".
 *
 * Lock order: g_mu (the records, their keys), then pool->mu, then arena
 * locks.  g_mu is taken on a thread's first allocation from a pool (and
 * after a pool was destroyed), at thread exit and at pool destroy: never
 * on the hot path, which keeps the thread's arena in a thread-local entry
 * (alloc_pool_path.c).
 */
#define _GNU_SOURCE
#include "alloc_pool.h"
#include "../log.h"

#include <pthread.h>
#include <stdlib.h>

/* Pools a thread can have an arena of at once; beyond, it allocates from
 * the pools' shared arenas (correct, only not contention-free). */
#define TC_POOLS 8

typedef struct {
    infinirt__pool *pool[TC_POOLS]; /* NULL: slot free */
    infinirt__arena *arena[TC_POOLS];
    bool registered; /* the key's value is set: its destructor will run */
} tc_thread;

/* tl_tc of a thread whose destructor ran: no arena of its own again. */
#define TC_EXITED ((tc_thread *)(uintptr_t)1)

atomic_uint_fast64_t infinirt__tc_gen = 1;

/* The thread's record, made on its first allocation that wants an arena
 * of its own (a pointer only: the loader's thread-local data comes from
 * glibc's static TLS reserve when it is dlopened, docs/architecture.md).
 * Global-dynamic is enough: only the slow path reads it. */
static _Thread_local tc_thread *tl_tc;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_key;
static bool g_key_made; /* under g_mu; read without it by key_unload only */

/* The thread exits: each of its arenas joins its pool's shared arena of
 * the stream (every block, live, pending or cached, with its fences), so
 * that nothing it cached is lost and the memory it freed keeps its
 * stream order. */
static void tc_exit(void *arg)
{
    tc_thread *t = arg;
    pthread_mutex_lock(&g_mu);
    INFINIRT__ALLOC_LOCKS(1);
    /* A later destructor's allocation must not find these arenas in the
     * thread's map any more: they may be another thread's, or another
     * stream's, once given back. */
    infinirt__tl_own_forget();
    for (int i = 0; i < TC_POOLS; i++) {
        if (t->pool[i] == NULL)
            continue;
        if (!infinirt__pool_arena_disown(t->pool[i], t->arena[i]))
            INFINIRT__WARN("%s: no host memory to merge an exiting thread's arena into the shared one; it stays "
                           "as a second shared arena of the NULL stream",
                           t->pool[i]->be.label);
        t->pool[i] = NULL;
        t->arena[i] = NULL;
    }
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&g_mu);
    free(t);
    /* A later destructor's allocation must not make a record (nor an
     * arena) again: the key's destructors may have run their last round. */
    tl_tc = TC_EXITED;
}

/* The key's destructor lives in this library: drop the key if the library
 * is unloaded while threads with arenas still run (their arenas then stay
 * theirs until the pool goes: the loader never destroys its pools, and
 * tears nothing down at exit, runtime.c). */
__attribute__((destructor)) static void tc_key_unload(void)
{
    pthread_mutex_lock(&g_mu);
    if (g_key_made)
        pthread_key_delete(g_key);
    g_key_made = false;
    pthread_mutex_unlock(&g_mu);
}

/* Make sure t's destructor will run (g_mu held). */
static bool tc_register(tc_thread *t)
{
    if (t->registered)
        return true;
    if (!g_key_made) {
        if (pthread_key_create(&g_key, tc_exit) != 0)
            return false;
        g_key_made = true;
    }
    if (pthread_setspecific(g_key, t) != 0)
        return false;
    t->registered = true;
    return true;
}

infinirt__arena *infinirt__pool_own_arena(infinirt__pool *pool)
{
    tc_thread *t = tl_tc;
    if (t == TC_EXITED || (t == NULL && (t = tl_tc = calloc(1, sizeof *t)) == NULL))
        return infinirt__pool_arena(pool, NULL);
    infinirt__arena *a = NULL;
    pthread_mutex_lock(&g_mu);
    INFINIRT__ALLOC_LOCKS(1);
    int slot = -1;
    for (int i = 0; i < TC_POOLS && a == NULL; i++) {
        if (t->pool[i] == pool)
            a = t->arena[i];
        else if (t->pool[i] == NULL && slot < 0)
            slot = i;
    }
    if (a == NULL && slot >= 0 && tc_register(t) && (a = infinirt__pool_arena_owned(pool, NULL, t)) != NULL) {
        t->pool[slot] = pool;
        t->arena[slot] = a;
    }
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&g_mu);
    return a != NULL ? a : infinirt__pool_arena(pool, NULL);
}

void infinirt__tcache_pool_gone(infinirt__pool *pool)
{
    pthread_mutex_lock(&g_mu);
    INFINIRT__ALLOC_LOCKS(1);
    pthread_mutex_lock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(1);
    for (unsigned i = 0; i < pool->narenas; i++) {
        infinirt__arena *a = pool->arenas[i];
        tc_thread *t = a->owner;
        if (t == NULL)
            continue;
        /* t is a live thread's: its destructor takes g_mu before it goes. */
        for (int k = 0; k < TC_POOLS; k++) {
            if (t->pool[k] == pool) {
                t->pool[k] = NULL;
                t->arena[k] = NULL;
            }
        }
        infinirt__spin_lock_read(&a->lock);
        a->owner = NULL;
        infinirt__spin_unlock(&a->lock);
    }
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&pool->mu);
    INFINIRT__ALLOC_LOCKS(-1);
    pthread_mutex_unlock(&g_mu);
    atomic_fetch_add(&infinirt__tc_gen, 1);
}
