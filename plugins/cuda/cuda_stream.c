/*
 * cuda_stream.c - streams and host functions.
 *
 * A plugin stream is a bare CUstream created with CU_STREAM_NON_BLOCKING:
 * it never waits on the legacy NULL stream, so infinirt streams (and the
 * per-device default stream, which is one of them) run concurrently with
 * each other and with CUDA runtime code that uses stream 0.
 */
#include "cuda_internal.h"

infiniStatus_t infinirt_cuda__stream_create(int dev, void **stream)
{
    infinirt_cuda__device_t *d;
    CUstream s = NULL;
    infiniStatus_t st = infinirt_cuda__enter(dev, &d);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT_CUDA__CALL(dev, StreamCreate, &s, CU_STREAM_NON_BLOCKING);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    *stream = s;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt_cuda__stream_destroy(int dev, void *stream)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st = infinirt_cuda__enter(dev, &d);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* The loader never passes the default stream here (it has no handle),
     * but destroying it would break the device, so refuse. */
    if (stream == NULL)
        return INFINI_STATUS_BAD_PARAM;
    /* The ABI promises the queued work completes before the stream goes;
     * cuStreamDestroy alone would return at once. */
    st = INFINIRT_CUDA__CALL(dev, StreamSynchronize, (CUstream)stream);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, StreamDestroy, (CUstream)stream);
}

infiniStatus_t infinirt_cuda__stream_synchronize(int dev, void *stream)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st = infinirt_cuda__enter(dev, &d);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, StreamSynchronize, infinirt_cuda__stream_of(d, stream));
}

infiniStatus_t infinirt_cuda__stream_wait_event(int dev, void *stream, void *event)
{
    infinirt_cuda__event_t *e = event;
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    /* A never-recorded event is complete: nothing to wait for. */
    if (!atomic_load_explicit(&e->recorded, memory_order_acquire))
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* The event may come from another device's context; the driver allows
     * that and inserts the cross-device dependency itself. */
    return INFINIRT_CUDA__CALL(dev, StreamWaitEvent, infinirt_cuda__stream_of(d, stream), e->ev, 0);
}

/*
 * cuLaunchHostFunc runs fn on a driver thread once the work before it is
 * done, and holds back the work after it until fn returns: exactly the
 * ordering the ABI asks for.  CUDA forbids CUDA calls from inside fn (they
 * may deadlock or fail with CUDA_ERROR_NOT_PERMITTED), so fn must not call
 * infinirt functions on NVIDIA devices; that is stricter than the ABI's
 * "must not wait on the same stream" and is documented in docs/cuda.md.
 */
infiniStatus_t infinirt_cuda__launch_host_func(int dev, void *stream, infinirtPluginHostFn fn, void *user_data)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st = infinirt_cuda__enter(dev, &d);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* CUhostFn and infinirtPluginHostFn are both void (*)(void *). */
    return INFINIRT_CUDA__CALL(dev, LaunchHostFunc, infinirt_cuda__stream_of(d, stream), fn, user_data);
}
