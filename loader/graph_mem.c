/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_mem.c - the memory captures and graphs hold (docs/graphs.md).
 *
 * Every capture has a `gmem`: the blocks MallocAsync handed out on its
 * streams (allocated under the gmem's own allocator key, so never a block
 * another stream may still use) and the blocks FreeAsync'ed on them that
 * were allocated before.  The capture, then its graph, and every
 * executable graph hold a reference; when the last goes, the blocks the
 * application freed are freed synchronously (the allocator reuses them only
 * after every stream of the device has passed this point, so after the last
 * launch), and the ones it still holds become ordinary blocks.  A process
 * wide hash (striped locks) answers "does a graph hold this pointer" for
 * Free and FreeAsync, which ask only while some graph holds a block.
 *
 * Locking: a gmem's list is under the capture lock (capture.c); the hash
 * has its own locks, taken inside the capture lock where both are needed.
 */
#define _GNU_SOURCE
#include "graph_int.h"

#include <stdlib.h>

atomic_size_t infinirt__graph_held;
/* The capture lock lives here, beside the gmem lists it also guards, so
 * that capture.c uses this file and never the reverse. */
pthread_mutex_t infinirt__capture_mu = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------ held memory */

typedef struct held {
    void *p;
    int state;
    struct held *next;  /* hash chain */
    struct held *gnext; /* the owner's list */
} held;

struct infinirt__gmem {
    atomic_int refs;
    infinirt__device *dev;
    held *list; /* under infinirt__capture_mu */
};

#define HBITS 10
#define HSTRIPES 64
static held *g_hash[1u << HBITS];
static pthread_mutex_t g_hlock[HSTRIPES];
static pthread_once_t g_hlock_once = PTHREAD_ONCE_INIT;

static void hlock_init(void)
{
    for (int i = 0; i < HSTRIPES; i++)
        pthread_mutex_init(&g_hlock[i], NULL);
}

static size_t hidx(const void *p)
{
    return (size_t)(((uint64_t)(uintptr_t)p * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - HBITS));
}

static pthread_mutex_t *hlock(size_t i)
{
    pthread_once(&g_hlock_once, hlock_init);
    return &g_hlock[i % HSTRIPES];
}

int infinirt__held_add(gmem *m, void *p, int state)
{
    held *h = malloc(sizeof *h);
    if (h == NULL)
        return -1;
    h->p = p;
    h->state = state;
    size_t i = hidx(p);
    pthread_mutex_lock(hlock(i));
    h->next = g_hash[i];
    g_hash[i] = h;
    pthread_mutex_unlock(hlock(i));
    h->gnext = m->list;
    m->list = h;
    atomic_fetch_add(&infinirt__graph_held, 1);
    return 0;
}

gmem *infinirt__gmem_new(infinirt__device *dev)
{
    gmem *m = calloc(1, sizeof *m);
    if (m != NULL) {
        atomic_init(&m->refs, 1);
        m->dev = dev;
    }
    return m;
}

void infinirt__gmem_ref(gmem *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void infinirt__gmem_put(gmem *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    pthread_mutex_lock(&infinirt__capture_mu);
    held *list = m->list;
    m->list = NULL;
    for (held *h = list; h != NULL; h = h->gnext) {
        size_t i = hidx(h->p);
        pthread_mutex_lock(hlock(i));
        for (held **pp = &g_hash[i]; *pp != NULL; pp = &(*pp)->next)
            if (*pp == h) {
                *pp = h->next;
                break;
            }
        pthread_mutex_unlock(hlock(i));
        atomic_fetch_sub(&infinirt__graph_held, 1);
    }
    pthread_mutex_unlock(&infinirt__capture_mu);
    while (list != NULL) {
        held *h = list;
        list = h->gnext;
        if (h->state != HELD_CAPTIVE) {
            infiniStatus_t st = infinirt__pool_free_sync(h->p, infinirt__want_device());
            if (st != INFINI_STATUS_SUCCESS)
                INFINIRT__ERROR("graph memory %p could not be released (%s)", h->p, infinirtGetErrorName(st));
        }
        free(h);
    }
    /* The key's arena (its cached blocks, and blocks the application still
     * holds) joins the device's shared one. */
    infinirt__pool_stream_retired(infinirt__device_pool_peek(m->dev), m);
    free(m);
}

int infinirt__held_mark_freed(const void *ptr)
{
    size_t i = hidx(ptr);
    pthread_mutex_lock(hlock(i));
    held *h = g_hash[i];
    while (h != NULL && h->p != ptr)
        h = h->next;
    int was = h != NULL ? h->state : -1;
    if (was == HELD_CAPTIVE)
        h->state = HELD_CAPTIVE_FREED;
    pthread_mutex_unlock(hlock(i));
    return was;
}
