/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_stream.c - streams and host functions.
 *
 * Streams behave as CUDA's own, because InfiniCore's kernels and its
 * synchronous copies rely on CUDA's semantics; so the plugin lets the
 * driver provide them rather than imitating them:
 *  - stream_create and stream_create_with_flags(0) make a blocking stream,
 *    cuStreamCreate(CU_STREAM_DEFAULT), as cudaStreamCreate does: the
 *    driver orders it with the legacy default stream of its context;
 *  - the NULL stream is that legacy default stream (stream 0), passed to
 *    the driver as NULL: work on it waits for the work already queued on
 *    the device's blocking streams, and work queued on them afterwards
 *    waits for it.  The synchronous memcpy and memset run on it too
 *    (cuda_memory.c), so they are ordered by the driver;
 *  - INFINIRT_PLUGIN_STREAM_NON_BLOCKING gives
 *    cuStreamCreate(CU_STREAM_NON_BLOCKING), which never waits for the
 *    legacy stream, nor it for them.
 *
 * A plugin stream is the bare CUstream, and stream_get_native gives that
 * same value, so the handle the application holds is a CUstream (usable as
 * a cudaStream_t) on which any library can launch kernels.  The driver
 * reports work queued that way too (cuStreamQuery), which is why the
 * plugin has stream_query: the loader's own counts miss it.
 *
 * A wrapped stream (stream_create_from_native) is the application's own
 * CUstream, also passed bare.  The plugin remembers which values it wraps,
 * so that stream_destroy waits for them but never destroys them.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cuda_internal.h"

/* 1 when s was wrapped (and is forgotten now), 0 when it is ours. */
static int unwrap(CUstream s)
{
    cuda__state_t *st = &cuda__state;
    int found = 0;

    pthread_mutex_lock(&st->wrapped_lock);
    for (cuda__wrapped_t **pp = &st->wrapped; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->stream == s) {
            cuda__wrapped_t *w = *pp;
            *pp = w->next;
            free(w);
            found = 1;
            break;
        }
    pthread_mutex_unlock(&st->wrapped_lock);
    return found;
}

infiniStatus_t cuda__stream_create_with_flags(int dev, uint32_t flags, void **stream)
{
    cuda__scope_t sc;
    CUstream s = NULL;
    infiniStatus_t st;

    if (flags & ~INFINIRT_PLUGIN_STREAM_NON_BLOCKING) {
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR, "device %d: unknown stream flags 0x%x", dev, (unsigned)flags);
        return INFINI_STATUS_BAD_PARAM;
    }
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, StreamCreate, &s,
                    (flags & INFINIRT_PLUGIN_STREAM_NON_BLOCKING) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
    cuda__leave(&sc);
    if (st == INFINI_STATUS_SUCCESS)
        *stream = s;
    return st;
}

infiniStatus_t cuda__stream_create(int dev, void **stream)
{
    return cuda__stream_create_with_flags(dev, 0, stream);
}

/*
 * The stream must belong to the device's primary context: the plugin's
 * calls for the device run with that context current, and the driver
 * refuses a stream of another context there.  cuStreamGetCtx tells, and
 * also rejects a destroyed stream (a made-up pointer it may not survive,
 * as with any CUDA call).  The special handles are refused: the legacy
 * stream is what NULL already means, and the per-thread stream names a
 * different stream on every thread.
 */
infiniStatus_t cuda__stream_create_from_native(int dev, void *native, void **stream)
{
    cuda__state_t *state = &cuda__state;
    CUstream s = (CUstream)native;
    cuda__wrapped_t *w;
    cuda__scope_t sc;
    CUcontext ctx = NULL;
    infiniStatus_t st;

    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR,
                  "device %d: cannot wrap stream %p: NULL and CU_STREAM_LEGACY are the default stream "
                  "(use NULL), CU_STREAM_PER_THREAD differs on every thread",
                  dev, native);
        return INFINI_STATUS_BAD_PARAM;
    }
    w = malloc(sizeof *w);
    if (w == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS) {
        free(w);
        return st;
    }
    st = CUDA__CALL(dev, StreamGetCtx, s, &ctx);
    if (st == INFINI_STATUS_SUCCESS && ctx != sc.d->ctx) {
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR,
                  "device %d: cannot wrap stream %p: it belongs to context %p, not to CUDA device %d's "
                  "primary context %p",
                  dev, native, (void *)ctx, sc.d->ordinal, (void *)sc.d->ctx);
        st = INFINI_STATUS_BAD_PARAM;
    }
    cuda__leave(&sc);
    if (st != INFINI_STATUS_SUCCESS) {
        free(w);
        return st;
    }

    pthread_mutex_lock(&state->wrapped_lock);
    for (cuda__wrapped_t *o = state->wrapped; o != NULL; o = o->next)
        if (o->stream == s)
            st = INFINI_STATUS_BAD_PARAM;
    if (st == INFINI_STATUS_SUCCESS) {
        w->stream = s;
        w->next = state->wrapped;
        state->wrapped = w;
    }
    pthread_mutex_unlock(&state->wrapped_lock);
    if (st != INFINI_STATUS_SUCCESS) {
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR, "device %d: stream %p is wrapped already", dev, native);
        free(w);
        return st;
    }
    *stream = s;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cuda__stream_destroy(int dev, void *stream)
{
    cuda__scope_t sc;
    infiniStatus_t st;

    /* The loader never passes the default stream here (it has no handle),
     * and the legacy stream cannot be destroyed. */
    if (stream == NULL)
        return INFINI_STATUS_BAD_PARAM;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* The ABI promises the queued work completes before the stream goes;
     * cuStreamDestroy alone would return at once. */
    st = CUDA__CALL(dev, StreamSynchronize, (CUstream)stream);
    if (st == INFINI_STATUS_SUCCESS && !unwrap((CUstream)stream))
        st = CUDA__CALL(dev, StreamDestroy, (CUstream)stream);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__stream_get_native(int dev, void *stream, void **native)
{
    (void)dev;
    *native = stream;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cuda__stream_synchronize(int dev, void *stream)
{
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, StreamSynchronize, cuda__stream_of(stream));
    cuda__leave(&sc);
    return st;
}

/* Everything queued so far, through the plugin or by the application's own
 * kernels, has completed.  cuStreamQuery never blocks.
 *
 * But cuStreamQuery of a capturing stream fails and invalidates the
 * capture, and on the legacy stream while a blocking stream captures it is
 * an implicit dependency on the capture, which fails the same way.  The
 * loader asks from its allocator, at any time: so the capture status comes
 * first, and a stream in a capture (or the legacy stream beside one) is
 * "not idle", without a query: the work captured so far has not run.  The
 * query itself runs in relaxed capture mode, like the event entries
 * (cuda_event.c), so that a capture elsewhere is not broken by it. */
infiniStatus_t cuda__stream_query(int dev, void *stream, int *idle)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);
    uint64_t id;
    int relaxed;
    CUresult r;

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    r = cuda__capture_status(cuda__stream_of(stream), &status, &id);
    if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT || (r == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE)) {
        cuda__leave(&sc);
        *idle = 0;
        return INFINI_STATUS_SUCCESS;
    }
    /* In relaxed mode: of a stream that does not capture, cuStreamQuery is
     * still a "potentially unsafe" call, which a global capture on another
     * thread (or a non-relaxed one on this thread) refuses, and is
     * invalidated by (seen on an H100, driver 580.159.04). */
    relaxed = cuda__relax();
    r = cuda__drv.StreamQuery(cuda__stream_of(stream));
    cuda__unrelax(relaxed);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)
        *idle = r == CUDA_SUCCESS; /* an answer, not a failure: no log */
    else
        st = cuda__check(r, cuda__drv_names.StreamQuery, dev);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__stream_wait_event(int dev, void *stream, void *event)
{
    cuda__event_t *e = event;
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* The event may come from another device's context; the driver allows
     * that and inserts the cross-device dependency itself.  A never-recorded
     * event is complete: the driver then waits for nothing. */
    st = cuda__event_check(cuda__drv.StreamWaitEvent(cuda__stream_of(stream), e->ev, 0),
                           cuda__drv_names.StreamWaitEvent, dev);
    cuda__leave(&sc);
    return st;
}

/*
 * cuLaunchHostFunc runs fn on a driver thread once the work before it is
 * done, and holds back the work after it until fn returns: exactly the
 * ordering the ABI asks for.  CUDA forbids CUDA calls from inside fn (they
 * may deadlock or fail with CUDA_ERROR_NOT_PERMITTED), so fn must not call
 * infinirt functions on NVIDIA devices; that is stricter than the ABI's
 * "must not wait on the same stream" and is documented in docs/cuda.md.
 */
infiniStatus_t cuda__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* CUhostFn and infinirtPluginHostFn are both void (*)(void *). */
    st = CUDA__CALL(dev, LaunchHostFunc, cuda__stream_of(stream), fn, user_data);
    cuda__leave(&sc);
    return st;
}
