/* SPDX-License-Identifier: Apache-2.0 */
/* fake_backend.c - see fake_backend.h. */
#define _GNU_SOURCE
#include "fake_backend.h"
#include "alloc_pool.h" /* the pool's counter that fake_watch_reserved reads */
#include "test.h"       /* test_status_name */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct infinirt__fence {
    void *stream;
    bool all; /* from fence_take_all: over every stream */
    unsigned seq;
    int done;
};

/* The watched counter against the bytes held (f->mu held). */
static void check_reserved(fake *f)
{
    if (f->watch_reserved == NULL)
        return;
    size_t r = atomic_load(f->watch_reserved);
    if (r > f->live) {
        f->reserved_over++;
        if (r - f->live > f->reserved_excess)
            f->reserved_excess = r - f->live;
    }
}

static infiniStatus_t fk_raw_alloc(void *ctx, size_t size, void **ptr)
{
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    check_reserved(f);
    f->raw_calls++;
    if ((f->limit != 0 && f->live + size > f->limit) || size == 0) {
        f->raw_oom++;
        pthread_mutex_unlock(&f->mu);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    if (f->nraw == f->capraw) {
        f->capraw = f->capraw ? f->capraw * 2 : 64;
        f->raws = realloc(f->raws, f->capraw * sizeof *f->raws);
    }
    void *p = aligned_alloc(512, (size + 511) & ~(size_t)511);
    if (p == NULL) {
        pthread_mutex_unlock(&f->mu);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    f->raws[f->nraw++] = (fake_raw){p, size};
    f->live += size;
    if (f->live > f->peak_live)
        f->peak_live = f->live;
    if (size > f->max_raw)
        f->max_raw = size;
    check_reserved(f);
    pthread_mutex_unlock(&f->mu);
    *ptr = p;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fk_raw_free(void *ctx, void *ptr)
{
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nraw; i++) {
        if (f->raws[i].p == ptr) {
            f->live -= f->raws[i].size;
            f->raws[i] = f->raws[--f->nraw];
            check_reserved(f);
            void (*after)(void *) = f->after_free;
            f->after_free = NULL;
            pthread_mutex_unlock(&f->mu);
            free(ptr);
            if (after != NULL)
                after(f->after_free_arg);
            return INFINI_STATUS_SUCCESS;
        }
    }
    pthread_mutex_unlock(&f->mu);
    fprintf(stderr, "fake: raw_free of %p, which it never handed out\n", ptr);
    abort();
}

static bool is_busy(fake *f, void *stream)
{
    for (int i = 0; i < f->nbusy; i++)
        if (f->busy[i] == stream)
            return true;
    return false;
}

static infiniStatus_t take(fake *f, void *stream, bool all, infinirt__fence **out)
{
    pthread_mutex_lock(&f->mu);
    *out = NULL;
    f->take_calls++;
    if (f->take_fails != INFINI_STATUS_SUCCESS) {
        infiniStatus_t st = f->take_fails;
        pthread_mutex_unlock(&f->mu);
        return st;
    }
    if ((all ? f->nbusy > 0 : is_busy(f, stream)) && f->seq + 1 < FAKE_MAX_SEQ) {
        infinirt__fence *fe = calloc(1, sizeof *fe);
        fe->stream = stream;
        fe->all = all;
        fe->seq = ++f->seq;
        if (f->nfence == f->capfence) {
            f->capfence = f->capfence ? f->capfence * 2 : 64;
            f->fences = realloc(f->fences, f->capfence * sizeof *f->fences);
        }
        f->fences[f->nfence++] = fe;
        f->taken++;
        f->last_seq = fe->seq;
        *out = fe;
    }
    pthread_mutex_unlock(&f->mu);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t fk_fence_take(void *ctx, void *stream, infinirt__fence **out)
{
    return take(ctx, stream, false, out);
}

static infiniStatus_t fk_fence_take_all(void *ctx, infinirt__fence **out)
{
    return take(ctx, NULL, true, out);
}

static infiniStatus_t fk_fence_query(void *ctx, infinirt__fence *fe, int *done)
{
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    *done = fe->done;
    pthread_mutex_unlock(&f->mu);
    return INFINI_STATUS_SUCCESS;
}

static void complete(fake *f, infinirt__fence *fe)
{
    fe->done = 1;
    f->done_seq[fe->seq] = 1;
}

/* Waiting finishes the work the fence covers: everything before it on its
 * stream, or on every stream for a fence from fence_take_all. */
static infiniStatus_t fk_fence_wait(void *ctx, infinirt__fence *fe)
{
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->waits++;
    if (f->wait_blocks) {
        f->waiting++;
        pthread_cond_broadcast(&f->cv);
        while (!fe->done)
            pthread_cond_wait(&f->cv, &f->mu);
        f->waiting--;
        pthread_mutex_unlock(&f->mu);
        return INFINI_STATUS_SUCCESS;
    }
    for (size_t i = 0; i < f->nfence; i++) {
        infinirt__fence *g = f->fences[i];
        if (g->seq <= fe->seq && (fe->all || (!g->all && g->stream == fe->stream)))
            complete(f, g);
    }
    complete(f, fe);
    if (fe->all)
        f->nbusy = 0;
    pthread_mutex_unlock(&f->mu);
    return INFINI_STATUS_SUCCESS;
}

static void fk_fence_release(void *ctx, infinirt__fence *fe)
{
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nfence; i++) {
        if (f->fences[i] == fe) {
            f->fences[i] = f->fences[--f->nfence];
            f->released++;
            pthread_mutex_unlock(&f->mu);
            free(fe);
            return;
        }
    }
    f->bad_release++;
    pthread_mutex_unlock(&f->mu);
}

/* The pool names statuses in its log lines: the harness's table answers
 * (the loader, absent here, would give infinirtGetErrorName). */
static const char *fk_status_name(infiniStatus_t status)
{
    return test_status_name((int)status);
}

void fake_init(fake *f, size_t limit, size_t max_alloc, const char *label)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->limit = limit;
    f->done_seq = calloc(FAKE_MAX_SEQ, 1);
    f->be = (infinirt__pool_backend){
        .ctx = f,
        .raw_alloc = fk_raw_alloc,
        .raw_free = fk_raw_free,
        .fence_take = fk_fence_take,
        .fence_take_all = fk_fence_take_all,
        .fence_query = fk_fence_query,
        .fence_wait = fk_fence_wait,
        .fence_release = fk_fence_release,
        .status_name = fk_status_name,
        .max_alloc_size = max_alloc,
        .total_memory = limit,
        .device_type = INFINI_DEVICE_CPU,
        .device_id = 0,
    };
    snprintf(f->be.label, sizeof f->be.label, "%s", label);
}

void fake_fini(fake *f)
{
    for (size_t i = 0; i < f->nraw; i++)
        free(f->raws[i].p);
    for (size_t i = 0; i < f->nfence; i++)
        free(f->fences[i]);
    free(f->raws);
    free(f->fences);
    free(f->done_seq);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
}

void fake_watch_reserved(fake *f, infinirt__pool *pool)
{
    pthread_mutex_lock(&f->mu);
    f->watch_reserved = &pool->reserved;
    pthread_mutex_unlock(&f->mu);
}

void fake_set_busy(fake *f, void *stream)
{
    pthread_mutex_lock(&f->mu);
    if (!is_busy(f, stream) && f->nbusy < FAKE_MAX_BUSY)
        f->busy[f->nbusy++] = stream;
    pthread_mutex_unlock(&f->mu);
}

void fake_complete_all(fake *f)
{
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nfence; i++)
        complete(f, f->fences[i]);
    f->nbusy = 0;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

size_t fake_waiting(fake *f)
{
    pthread_mutex_lock(&f->mu);
    size_t v = f->waiting;
    pthread_mutex_unlock(&f->mu);
    return v;
}

bool fake_seq_done(fake *f, unsigned seq)
{
    pthread_mutex_lock(&f->mu);
    bool d = f->done_seq[seq] != 0;
    pthread_mutex_unlock(&f->mu);
    return d;
}

size_t fake_live(fake *f)
{
    pthread_mutex_lock(&f->mu);
    size_t v = f->live;
    pthread_mutex_unlock(&f->mu);
    return v;
}

size_t fake_nraw(fake *f)
{
    pthread_mutex_lock(&f->mu);
    size_t v = f->nraw;
    pthread_mutex_unlock(&f->mu);
    return v;
}

bool fake_contains(fake *f, const void *p, size_t size)
{
    uintptr_t a = (uintptr_t)p;
    bool ok = false;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nraw && !ok; i++) {
        uintptr_t b = (uintptr_t)f->raws[i].p;
        ok = a >= b && a + size <= b + f->raws[i].size;
    }
    pthread_mutex_unlock(&f->mu);
    return ok;
}

static int cmp_raw(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const fake_raw *)x)->p, b = (uintptr_t)((const fake_raw *)y)->p;
    return a < b ? -1 : a > b;
}

fake_raw *fake_raws_sorted(fake *f, size_t *n)
{
    pthread_mutex_lock(&f->mu);
    fake_raw *r = malloc((f->nraw + 1) * sizeof *r);
    memcpy(r, f->raws, f->nraw * sizeof *r);
    *n = f->nraw;
    pthread_mutex_unlock(&f->mu);
    qsort(r, *n, sizeof *r, cmp_raw);
    return r;
}
