/*
 * cuda_event.c - events.
 *
 * The ABI says a never-recorded event is complete and has no elapsed time.
 * CUDA agrees on the first (cuEventQuery gives CUDA_SUCCESS) but answers
 * the second with CUDA_ERROR_INVALID_HANDLE, which would read as "bad
 * handle", so each event carries its own `recorded` flag.
 */
#include <stdlib.h>

#include "cuda_internal.h"

#define KNOWN_FLAGS (INFINIRT_PLUGIN_EVENT_DISABLE_TIMING | INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC)

infiniStatus_t infinirt_cuda__event_create(int dev, uint32_t flags, void **event)
{
    unsigned int cu_flags = CU_EVENT_DEFAULT;
    infinirt_cuda__device_t *d;
    infinirt_cuda__event_t *e;
    infiniStatus_t st;

    if (flags & ~KNOWN_FLAGS)
        return INFINI_STATUS_BAD_PARAM;
    if (flags & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING)
        cu_flags |= CU_EVENT_DISABLE_TIMING;
    if (flags & INFINIRT_PLUGIN_EVENT_BLOCKING_SYNC)
        cu_flags |= CU_EVENT_BLOCKING_SYNC;

    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    e = malloc(sizeof *e);
    if (e == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    st = INFINIRT_CUDA__CALL(dev, EventCreate, &e->ev, cu_flags);
    if (st != INFINI_STATUS_SUCCESS) {
        free(e);
        return st;
    }
    e->flags = flags;
    atomic_init(&e->recorded, 0);
    *event = e;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt_cuda__event_destroy(int dev, void *event)
{
    infinirt_cuda__event_t *e = event;
    infinirt_cuda__device_t *d;
    infiniStatus_t st = infinirt_cuda__enter(dev, &d);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* Queued records of the event still complete: the driver defers the
     * release of an event that is in use. */
    st = INFINIRT_CUDA__CALL(dev, EventDestroy, e->ev);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    free(e);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt_cuda__event_record(int dev, void *event, void *stream)
{
    infinirt_cuda__event_t *e = event;
    infinirt_cuda__device_t *d;
    infiniStatus_t st = infinirt_cuda__enter(dev, &d);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT_CUDA__CALL(dev, EventRecord, e->ev, infinirt_cuda__stream_of(d, stream));
    if (st == INFINI_STATUS_SUCCESS)
        atomic_store_explicit(&e->recorded, 1, memory_order_release);
    return st;
}

infiniStatus_t infinirt_cuda__event_query(int dev, void *event, int *complete)
{
    infinirt_cuda__event_t *e = event;
    infinirt_cuda__device_t *d;
    infiniStatus_t st;
    CUresult r;

    if (!atomic_load_explicit(&e->recorded, memory_order_acquire)) {
        *complete = 1;
        return INFINI_STATUS_SUCCESS;
    }
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    r = infinirt_cuda__drv.EventQuery(e->ev);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) {
        *complete = r == CUDA_SUCCESS;
        return INFINI_STATUS_SUCCESS;
    }
    return infinirt_cuda__check(r, infinirt_cuda__drv_names.EventQuery, dev);
}

infiniStatus_t infinirt_cuda__event_synchronize(int dev, void *event)
{
    infinirt_cuda__event_t *e = event;
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    if (!atomic_load_explicit(&e->recorded, memory_order_acquire))
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, EventSynchronize, e->ev);
}

infiniStatus_t infinirt_cuda__event_elapsed_time(int dev, float *ms, void *start, void *end)
{
    infinirt_cuda__event_t *a = start, *b = end;
    infinirt_cuda__device_t *d;
    infiniStatus_t st;
    CUresult r;

    if (!atomic_load_explicit(&a->recorded, memory_order_acquire) ||
        !atomic_load_explicit(&b->recorded, memory_order_acquire) ||
        ((a->flags | b->flags) & INFINIRT_PLUGIN_EVENT_DISABLE_TIMING))
        return INFINI_STATUS_INVALID_STATE;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    r = infinirt_cuda__drv.EventElapsedTime(ms, a->ev, b->ev);
    if (r == CUDA_ERROR_NOT_READY)
        return INFINI_STATUS_NOT_READY; /* an answer, not a failure: no log */
    return infinirt_cuda__check(r, infinirt_cuda__drv_names.EventElapsedTime, dev);
}
