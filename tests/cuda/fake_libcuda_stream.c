/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda_stream.c - streams, events and the queued operations of the
 * fake driver.
 *
 * Each stream has a worker thread that runs its queue in order, so work is
 * really asynchronous: a host function can hold a stream (a "gate") while
 * the caller sees events not ready and other streams go on.  Host memory is
 * touched when the operation runs, not when it is queued, which is what the
 * API allows.
 *
 * The legacy default stream.  Each retained context has one (stream 0,
 * CU_STREAM_LEGACY), and the ordering the real driver gives it: an
 * operation queued on it waits for the work already queued on the
 * context's blocking streams (created without CU_STREAM_NON_BLOCKING), and
 * an operation queued on a blocking stream waits for the work already
 * queued on it.  Each such dependency is a hidden event recorded on the
 * busy stream and waited for on the other, inserted when the operation is
 * queued.  cuMemcpy queues on the legacy stream and waits for its copy.
 *
 * While a stream captures (fake_libcuda_graph.c), what is queued on it is
 * recorded into the capture instead of running, and what would wait for it
 * (synchronize, query, the legacy stream's implicit ordering, a captured
 * event's query) is refused the way CUDA refuses it.
 *
 * Strict mode (fake_libcuda.c) changes four things here: host functions
 * run one at a time process-wide with every driver call refused inside
 * them, cuStreamDestroy returns before the queue drains, async copies to
 * pageable memory wait for their completion while those from it read it at
 * once, and a context broken by a
 * sticky error runs no more of its queued work.
 *
 * The queue itself (the workers, the legacy-stream dependencies) is in
 * fake_libcuda_queue.c, events in fake_libcuda_event.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_libcuda.h"

/* Every stream (legacy ones included) and every event with a handle. */
struct CUstream_st *fake_live;
struct CUevent_st *fake_live_ev;
static int live_streams, wait_event_calls;
static void *last_stream;

int fake_cuda_live_streams(void)
{
    return live_streams;
}
unsigned fake_cuda_stream_flags(const void *stream)
{
    return ((const struct CUstream_st *)stream)->flags;
}
int fake_cuda_wait_event_calls(void)
{
    return wait_event_calls;
}
void *fake_cuda_last_stream(void)
{
    return last_stream;
}

/* ---- handles ---- */

/* The stream a handle names, as the real driver reads it: NULL and
 * CU_STREAM_LEGACY are the current context's legacy stream; anything else
 * must be a live stream.  The fake's own strictness on top: the stream's
 * context must be current (`any_ctx` lifts that, for calls that take a
 * stream of any context). */
CUresult fake_stream_of(CUstream h, int any_ctx, struct CUstream_st **out)
{
    if (h == NULL || h == CU_STREAM_LEGACY) {
        NEED_CTX();
        pthread_mutex_lock(&fake_lock);
        *out = fake_current->legacy;
        pthread_mutex_unlock(&fake_lock);
        return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    }
    NEED_INIT();
    if (h == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE; /* the plugin never uses it */
    pthread_mutex_lock(&fake_lock);
    int found = 0;
    for (struct CUstream_st *s = fake_live; s != NULL && !found; s = s->next_live)
        found = s == h && !s->legacy && !s->dead;
    pthread_mutex_unlock(&fake_lock);
    if (!found)
        return CUDA_ERROR_INVALID_HANDLE;
    if (h->ctx->sticky != CUDA_SUCCESS)
        return (CUresult)h->ctx->sticky;
    if (!any_ctx) {
        NEED_CTX();
        if (h->ctx != fake_current)
            return CUDA_ERROR_INVALID_HANDLE;
    }
    *out = h;
    return CUDA_SUCCESS;
}

/* A live event; of the current context unless `any_ctx`. */
CUresult fake_event_ok(CUevent e, int any_ctx)
{
    NEED_CTX();
    pthread_mutex_lock(&fake_lock);
    int found = 0;
    for (struct CUevent_st *x = fake_live_ev; x != NULL && !found; x = x->next_live)
        found = x == e;
    pthread_mutex_unlock(&fake_lock);
    if (!found || (!any_ctx && e->ctx != fake_current))
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->ctx->sticky != CUDA_SUCCESS)
        return (CUresult)e->ctx->sticky;
    return CUDA_SUCCESS;
}

/* ---- streams ---- */
static CUresult stream_new(fake_ctx *ctx, unsigned flags, int legacy, struct CUstream_st **out)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->flags = flags;
    s->legacy = legacy;
    pthread_cond_init(&s->work, NULL);
    if (pthread_create(&s->thread, NULL, fake_stream_worker, s) != 0) {
        pthread_cond_destroy(&s->work);
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&fake_lock);
    s->next_live = fake_live;
    fake_live = s;
    if (!legacy) {
        live_streams++;
        last_stream = s;
    }
    pthread_mutex_unlock(&fake_lock);
    *out = s;
    return CUDA_SUCCESS;
}

/* The real driver returns at once and releases the stream when its work is
 * done; here the queue is drained first. */
static void stream_free(struct CUstream_st *s)
{
    pthread_mutex_lock(&fake_lock);
    for (struct CUstream_st **pp = &fake_live; *pp; pp = &(*pp)->next_live)
        if (*pp == s) {
            *pp = s->next_live;
            break;
        }
    if (!s->legacy)
        live_streams--;
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&fake_lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->work);
    free(s);
}

/* Strict cuStreamDestroy: the handle dies now; the worker drains the
 * queue and frees the stream (see fake_stream_worker). */
static void stream_abandon(struct CUstream_st *s)
{
    pthread_mutex_lock(&fake_lock);
    s->dead = 1;
    live_streams--;
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_detach(s->thread);
    pthread_mutex_unlock(&fake_lock);
}

void fake_ctx_streams_reset(fake_ctx *ctx)
{
    pthread_mutex_lock(&fake_lock);
    fake_wait_idle_locked(ctx);
    for (struct CUevent_st **pp = &fake_live_ev; *pp;) {
        struct CUevent_st *e = *pp;
        if (e->ctx == ctx) {
            *pp = e->next_live;
            fake_live_events--;
            event_unref_locked(e);
        } else
            pp = &e->next_live;
    }
    for (;;) {
        struct CUstream_st *victim = NULL;
        for (struct CUstream_st *s = fake_live; s != NULL && victim == NULL; s = s->next_live)
            if (s->ctx == ctx && !s->legacy && !s->dead)
                victim = s;
        if (victim == NULL)
            break;
        pthread_mutex_unlock(&fake_lock);
        stream_free(victim);
        pthread_mutex_lock(&fake_lock);
    }
    /* Streams destroyed earlier may still be freeing themselves. */
    for (;;) {
        int dying = 0;
        for (struct CUstream_st *s = fake_live; s != NULL; s = s->next_live)
            dying |= s->ctx == ctx && s->dead;
        if (!dying)
            break;
        pthread_cond_wait(&fake_progress, &fake_lock);
    }
    pthread_mutex_unlock(&fake_lock);
}

CUresult fake_legacy_create(fake_ctx *ctx)
{
    struct CUstream_st *s;
    CUresult r = stream_new(ctx, 0, 1, &s);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&fake_lock);
        ctx->legacy = s;
        pthread_mutex_unlock(&fake_lock);
    }
    return r;
}

void fake_legacy_destroy(fake_ctx *ctx)
{
    pthread_mutex_lock(&fake_lock);
    struct CUstream_st *s = ctx->legacy;
    ctx->legacy = NULL;
    pthread_mutex_unlock(&fake_lock);
    if (s != NULL)
        stream_free(s);
}

CUresult CUDAAPI cuStreamCreate(CUstream *ps, unsigned int flags)
{
    NEED_CTX();
    if (ps == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    return stream_new(fake_current, flags, 0, ps);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream h)
{
    struct CUstream_st *s;
    if (h == NULL || h == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_HANDLE;
    STREAM_OF(h, 0, &s);
    pthread_mutex_lock(&fake_lock);
    struct fake_capture *c = s->cap;
    if (c != NULL)
        fake_capture_invalidate_locked(c);
    pthread_mutex_unlock(&fake_lock);
    if (c != NULL)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (fake_strict)
        stream_abandon(s); /* returns at once, as the driver does */
    else
        stream_free(s);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream h, CUcontext *pctx)
{
    struct CUstream_st *s;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    STREAM_OF(h, 1, &s);
    *pctx = (CUcontext)(void *)s->ctx;
    return CUDA_SUCCESS;
}

/* Waiting for a capturing stream (or for the legacy stream, which would
 * wait for a capturing blocking one) is refused, and breaks the capture. */
static CUresult capture_refuses_wait_locked(struct CUstream_st *s)
{
    if (s->cap != NULL) {
        fake_capture_invalidate_locked(s->cap);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return s->legacy ? fake_capture_implicit_locked(s->ctx) : CUDA_SUCCESS;
}

/* An error the next cuStreamSynchronize returns (CUDA_SUCCESS: none), as a
 * fault of queued work surfaces at the next synchronisation. */
static CUresult injected_sync_error;

void fake_cuda_inject_sync_error(CUresult r)
{
    pthread_mutex_lock(&fake_lock);
    injected_sync_error = r;
    pthread_mutex_unlock(&fake_lock);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream h)
{
    struct CUstream_st *s;
    STREAM_OF(h, 0, &s);
    pthread_mutex_lock(&fake_lock);
    CUresult r = capture_refuses_wait_locked(s);
    if (r == CUDA_SUCCESS)
        fake_wait_done_locked(s, s->queued);
    if (r == CUDA_SUCCESS && injected_sync_error != CUDA_SUCCESS) {
        r = injected_sync_error;
        injected_sync_error = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult CUDAAPI cuStreamQuery(CUstream h)
{
    struct CUstream_st *s;
    STREAM_OF(h, 0, &s);
    pthread_mutex_lock(&fake_lock);
    CUresult r = capture_refuses_wait_locked(s);
    /* Of a stream that does not capture: "potentially unsafe" as well (an
     * H100 with driver 580.159.04 refused it from another thread during a
     * global capture, and invalidated that capture). */
    if (r == CUDA_SUCCESS)
        r = fake_capture_unsafe_call_locked();
    int idle = s->done >= s->queued;
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS)
        return r;
    return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    NEED_CTX();
    pthread_mutex_lock(&fake_lock);
    int refused = fake_capture_any_in_ctx_invalidate_locked(fake_current);
    if (!refused)
        fake_wait_idle_locked(fake_current);
    pthread_mutex_unlock(&fake_lock);
    return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags)
{
    struct CUstream_st *s;
    (void)flags;
    STREAM_OF(h, 0, &s);
    EVENT_OK(e, 1); /* the event may be another device's */
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fake_lock);
    wait_event_calls++;
    if (s->cap != NULL || e->cap != NULL) {
        r = fake_capture_wait_locked(s, e); /* fork, join, or refused */
    } else if (e->cap_stale) {
        r = CUDA_ERROR_INVALID_VALUE; /* last recorded in a capture that ended */
    } else if (e->recorded > 0) {
        /* Queued even when the record has completed: the wait is still an
         * operation of s, and on the legacy stream it comes after the
         * blocking streams' work ("an action ... such as
         * cudaStreamWaitEvent()"), and the legacy stream's later work
         * after it.  On a blocking stream it is not itself ordered after
         * the legacy stream's work: the driver does not (an H200, driver
         * 580.159.04: tests/gpu/probe_blocking_wait.c).  Bound to the
         * latest record now: the operation holds its mark.  A wait for an
         * event never recorded queues nothing. */
        r = fake_enqueue_event_wait_locked(s, (fake_op){.kind = OP_WAIT, .ev = e, .mark = e->mark});
    }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream h, CUhostFn fn, void *data)
{
    struct CUstream_st *s;
    STREAM_OF(h, 0, &s);
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_enqueue(s, (fake_op){.kind = OP_HOST, .fn = fn, .data = data}, NULL);
}

CUresult fake_cuda_launch_kernel(CUstream h, CUhostFn fn, void *data)
{
    struct CUstream_st *s;
    STREAM_OF(h, 0, &s);
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_enqueue(s, (fake_op){.kind = OP_KERNEL, .fn = fn, .data = data}, NULL);
}

/* Strict mode, a copy touching pageable host memory, CUDA's rules: from
 * pageable memory to the device, the source is read into a staging buffer
 * before the call returns, without waiting for the stream (so a host
 * function queued before it has not run yet: seen on an H100, driver
 * 580.159.04); to pageable memory, the call returns only after the copy has
 * completed, so after all the stream's earlier work.  (A capture records
 * the copy as it is.) */
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
    struct CUstream_st *s;
    unsigned long seq = 0;
    STREAM_OF(h, 0, &s);
    pthread_mutex_lock(&fake_lock);
    fake_peer_copy_locked(s->ctx, (const void *)(uintptr_t)dst, (const void *)(uintptr_t)src);
    int to_pageable = fake_strict && fake_pageable_locked((const void *)(uintptr_t)dst);
    int from_pageable = fake_strict && fake_pageable_locked((const void *)(uintptr_t)src);
    fake_op o = {.kind = OP_COPY, .dst = (void *)(uintptr_t)dst, .src = (const void *)(uintptr_t)src, .n = n};
    if (from_pageable && !to_pageable && s->cap == NULL) {
        if ((o.staging = malloc(n ? n : 1)) == NULL) {
            pthread_mutex_unlock(&fake_lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(o.staging, o.src, n);
        o.src = o.staging;
    }
    CUresult r = fake_enqueue_locked(s, o, &seq);
    if (r != CUDA_SUCCESS)
        free(o.staging);
    if (r == CUDA_SUCCESS && (to_pageable || (from_pageable && o.staging == NULL)) && seq != 0)
        fake_wait_done_locked(s, seq);
    pthread_mutex_unlock(&fake_lock);
    return r;
}

/* On the legacy stream, and returns once the copy is done (the real one may
 * return earlier for D2D; waiting longer is allowed). */
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    unsigned long seq = 0;
    struct CUstream_st *s;
    STREAM_OF(NULL, 0, &s);
    pthread_mutex_lock(&fake_lock);
    fake_peer_copy_locked(s->ctx, (const void *)(uintptr_t)dst, (const void *)(uintptr_t)src);
    pthread_mutex_unlock(&fake_lock);
    CUresult r = fake_enqueue(
        s, (fake_op){.kind = OP_COPY, .dst = (void *)(uintptr_t)dst, .src = (const void *)(uintptr_t)src, .n = n},
        &seq);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fake_lock);
    fake_wait_done_locked(s, seq);
    pthread_mutex_unlock(&fake_lock);
    return CUDA_SUCCESS;
}

#ifndef FAKE_CUDA_OMIT_MEMSET
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream h)
{
    struct CUstream_st *s;
    STREAM_OF(h, 0, &s);
    pthread_mutex_lock(&fake_lock);
    CUresult r = fake_peer_fill_locked(s->ctx, (const void *)(uintptr_t)dst);
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS)
        return r;
    return fake_enqueue(s, (fake_op){.kind = OP_SET, .dst = (void *)(uintptr_t)dst, .value = v, .n = n}, NULL);
}
#endif
