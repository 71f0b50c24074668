/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_addrmap.c - address ranges -> allocations.
 *
 * A sorted array under a rwlock: lookups (every copy and fill) take the read
 * lock and binary-search; inserts and removes (raw allocations, which the
 * loader's caching allocator makes rare) shift the tail.  Ranges never
 * overlap: SVM pointers are real addresses and buffer-mode addresses are
 * reserved with mmap, so neither can collide with the other or with any
 * other pointer of the process.
 */
#include "opencl_internal.h"

#include <stdlib.h>
#include <string.h>

opencl__map opencl__device_map;
opencl__map opencl__host_map;

void opencl__map_init(opencl__map *m)
{
    pthread_rwlock_init(&m->lock, NULL);
    m->items = NULL;
    m->count = m->capacity = 0;
}

void opencl__map_destroy(opencl__map *m)
{
    free(m->items);
    m->items = NULL;
    m->count = m->capacity = 0;
    pthread_rwlock_destroy(&m->lock);
}

/* Index of the first item whose base is > addr (caller holds a lock). */
static size_t upper_bound(const opencl__map *m, uintptr_t addr)
{
    size_t lo = 0, hi = m->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->items[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int opencl__map_insert(opencl__map *m, const opencl__alloc *a)
{
    size_t at;
    int rc = -1;

    pthread_rwlock_wrlock(&m->lock);
    if (m->count == m->capacity) {
        size_t cap = m->capacity ? m->capacity * 2 : 64;
        opencl__alloc *grown = realloc(m->items, cap * sizeof *grown);
        if (grown == NULL)
            goto out;
        m->items = grown;
        m->capacity = cap;
    }
    at = upper_bound(m, a->base);
    if (at > 0 && m->items[at - 1].base + m->items[at - 1].size > a->base)
        goto out;
    if (at < m->count && a->base + a->size > m->items[at].base)
        goto out;
    memmove(&m->items[at + 1], &m->items[at], (m->count - at) * sizeof *m->items);
    m->items[at] = *a;
    m->count++;
    rc = 0;
out:
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int opencl__map_remove(opencl__map *m, uintptr_t base, opencl__alloc *out)
{
    size_t at;
    int rc = -1;

    pthread_rwlock_wrlock(&m->lock);
    at = upper_bound(m, base);
    if (at > 0 && m->items[at - 1].base == base) {
        at--;
        *out = m->items[at];
        memmove(&m->items[at], &m->items[at + 1], (m->count - at - 1) * sizeof *m->items);
        m->count--;
        rc = 0;
    }
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int opencl__map_lookup(opencl__map *m, const void *p, opencl__alloc *out)
{
    uintptr_t addr = (uintptr_t)p;
    size_t at;
    int rc = -1;

    pthread_rwlock_rdlock(&m->lock);
    at = upper_bound(m, addr);
    if (at > 0 && addr - m->items[at - 1].base < m->items[at - 1].size) {
        *out = m->items[at - 1];
        rc = 0;
    }
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int opencl__map_pop(opencl__map *m, opencl__alloc *out)
{
    int rc = -1;

    pthread_rwlock_wrlock(&m->lock);
    if (m->count > 0) {
        *out = m->items[--m->count];
        rc = 0;
    }
    pthread_rwlock_unlock(&m->lock);
    return rc;
}
