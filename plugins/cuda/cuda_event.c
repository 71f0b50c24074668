/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_event.c - events.
 *
 * The plugin's event object is a small wrapper: the CUevent and the
 * infinirt flags.  The application holds the CUevent itself
 * (event_get_native), so other libraries can record it and wait for it;
 * that is why every entry asks the driver rather than a state of our own:
 * a record made natively, with cudaEventRecord, must be seen too.
 *
 * The ABI says a never-recorded event is complete and has no elapsed time.
 * CUDA agrees: cuEventQuery and cuEventSynchronize succeed at once and
 * cuStreamWaitEvent does nothing, while cuEventElapsedTime answers
 * CUDA_ERROR_INVALID_HANDLE, which for an event the loader has checked is
 * live means "not recorded" (or timing disabled): INVALID_STATE.
 *
 * The loader's allocator creates, queries, waits for and destroys its fence
 * events from any thread, also while another thread captures in global
 * mode, where CUDA forbids such calls: those entries run in relaxed capture
 * mode (cuda__relax).  An event recorded inside a capture still
 * cannot be queried or waited for (CUDA_ERROR_CAPTURED_EVENT, and the
 * capture is invalidated; then CUDA_ERROR_INVALID_VALUE until recorded
 * again: both INVALID_STATE, cuda__event_check); the loader never
 * records its fences on a capturing stream.
 */
#include <stdlib.h>

#include "cuda_internal.h"

#define KNOWN_FLAGS (INFINIRT_PLUGIN_EVENT_DISABLE_TIMING | INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC)

/* The driver's answer to a query, synchronize, wait or elapsed time of an
 * event the loader has checked is live.  CUDA_ERROR_INVALID_VALUE there
 * means the event's last record was in a stream capture: after a
 * CAPTURED_EVENT refusal, and after the capture ended (even well), the
 * driver answers so until the event is recorded again outside a capture
 * (H100, driver 580.159.04).  Not the caller's bad parameter, then:
 * INVALID_STATE, as CAPTURED_EVENT is. */
infiniStatus_t cuda__event_check(CUresult r, const char *fn, int dev)
{
    infiniStatus_t st = cuda__check(r, fn, dev);

    if (r == CUDA_ERROR_INVALID_VALUE) {
        cuda__log(INFINIRT_PLUGIN_LOG_ERROR,
                  "device %d: %s: the event's last record was in a stream capture; record it again "
                  "outside a capture before using it",
                  dev, fn);
        st = INFINI_STATUS_INVALID_STATE;
    }
    return st;
}

infiniStatus_t cuda__event_create(int dev, uint32_t flags, void **event)
{
    unsigned int cu_flags = CU_EVENT_DEFAULT;
    cuda__scope_t sc;
    cuda__event_t *e;
    infiniStatus_t st;

    if (flags & ~KNOWN_FLAGS)
        return INFINI_STATUS_BAD_PARAM;
    if (flags & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING)
        cu_flags |= CU_EVENT_DISABLE_TIMING;
    if (flags & INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC)
        cu_flags |= CU_EVENT_BLOCKING_SYNC;

    e = malloc(sizeof *e);
    if (e == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    st = cuda__enter(dev, &sc);
    if (st == INFINI_STATUS_SUCCESS) {
        int relaxed = cuda__relax();
        st = CUDA__CALL(dev, EventCreate, &e->ev, cu_flags);
        cuda__unrelax(relaxed);
        cuda__leave(&sc);
    }
    if (st != INFINI_STATUS_SUCCESS) {
        free(e);
        return st;
    }
    e->flags = flags;
    *event = e;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cuda__event_destroy(int dev, void *event)
{
    int relaxed;
    cuda__event_t *e = event;
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS) {
        free(e); /* as below: the loader never passes it again */
        return st;
    }
    /* Queued records of the event still complete: the driver defers the
     * release of an event that is in use. */
    relaxed = cuda__relax();
    st = CUDA__CALL(dev, EventDestroy, e->ev);
    cuda__unrelax(relaxed);
    cuda__leave(&sc);
    /* The wrapper goes whatever the driver said: the loader drops its
     * handle even when this fails and never passes the event again, and a
     * failure here is a broken context (a sticky error), whose reset
     * releases the CUevent with everything else. */
    free(e);
    return st;
}

infiniStatus_t cuda__event_record(int dev, void *event, void *stream)
{
    cuda__event_t *e = event;
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, EventRecord, e->ev, cuda__stream_of(stream));
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__event_query(int dev, void *event, int *complete)
{
    int relaxed;
    cuda__event_t *e = event;
    cuda__scope_t sc;
    infiniStatus_t st;
    CUresult r;

    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    relaxed = cuda__relax();
    r = cuda__drv.EventQuery(e->ev);
    cuda__unrelax(relaxed);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)
        *complete = r == CUDA_SUCCESS;
    else
        st = cuda__event_check(r, cuda__drv_names.EventQuery, dev);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__event_synchronize(int dev, void *event)
{
    int relaxed;
    CUresult r;
    cuda__event_t *e = event;
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    relaxed = cuda__relax();
    r = cuda__drv.EventSynchronize(e->ev);
    cuda__unrelax(relaxed);
    st = cuda__event_check(r, cuda__drv_names.EventSynchronize, dev);
    cuda__leave(&sc);
    return st;
}

infiniStatus_t cuda__event_elapsed_time(int dev, float *ms, void *start, void *end)
{
    cuda__event_t *a = start, *b = end;
    cuda__scope_t sc;
    infiniStatus_t st;
    CUresult r;

    if ((a->flags | b->flags) & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING)
        return INFINI_STATUS_INVALID_STATE;
    st = cuda__enter(dev, &sc);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    r = cuda__drv.EventElapsedTime(ms, a->ev, b->ev);
    cuda__leave(&sc);
    /* Answers, not failures: no log. */
    if (r == CUDA_ERROR_NOT_READY)
        return INFINI_STATUS_NOT_READY;
    if (r == CUDA_ERROR_INVALID_HANDLE)
        return INFINI_STATUS_INVALID_STATE; /* never recorded */
    return cuda__event_check(r, cuda__drv_names.EventElapsedTime, dev);
}

/* The handle the application holds: the CUevent itself, so that
 * cudaEventRecord / cudaStreamWaitEvent of other libraries take it. */
infiniStatus_t cuda__event_get_native(int dev, void *event, void **native)
{
    (void)dev;
    *native = ((cuda__event_t *)event)->ev;
    return INFINI_STATUS_SUCCESS;
}
