/*
 * cuda_memory.c - raw device and pinned host memory, copies and fills.
 *
 * Every supported GPU has unified virtual addressing on 64-bit hosts, so the
 * driver tells host from device memory (and one device from another) by the
 * pointer: cuMemcpyAsync serves H2D, D2H and D2D, interior pointers and
 * peer copies included.  Host-to-host is the exception: CUDA documents it
 * as "fully synchronous with respect to the host" without promising that it
 * waits for the stream, so we wait for the stream and copy on the host.
 *
 * The synchronous copy and fill are queued on the device's default stream
 * and then waited for.  That orders them after work already queued on the
 * default stream, as cudaMemcpy is ordered after stream-0 work, whereas
 * cuMemcpy would run on the legacy NULL stream, which our non-blocking
 * default stream does not wait for.  (cuMemsetD8 would not even wait for
 * itself: on device memory it returns before the fill is done.)
 */
#include <stdint.h>
#include <string.h>

#include "cuda_internal.h"

static CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

infiniStatus_t infinirt_cuda__malloc_device(int dev, void **ptr, size_t size)
{
    infinirt_cuda__device_t *d;
    CUdeviceptr p = 0;
    infiniStatus_t st;

    if (size == 0) { /* cuMemAlloc rejects 0; the API gives NULL */
        *ptr = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT_CUDA__CALL(dev, MemAlloc, &p, size);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    *ptr = (void *)(uintptr_t)p;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt_cuda__free_device(int dev, void *ptr)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, MemFree, dptr(ptr));
}

infiniStatus_t infinirt_cuda__malloc_host(int dev, void **ptr, size_t size)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    if (size == 0) {
        *ptr = NULL;
        return INFINI_STATUS_SUCCESS;
    }
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* PORTABLE: pinned for every context, so a buffer allocated through one
     * GPU is fast with the others too (the API promises "that backend's
     * devices"). */
    return INFINIRT_CUDA__CALL(dev, MemHostAlloc, ptr, size, CU_MEMHOSTALLOC_PORTABLE);
}

infiniStatus_t infinirt_cuda__free_host(int dev, void *ptr)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    if (ptr == NULL)
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, MemFreeHost, ptr);
}

static int kind_ok(int kind)
{
    return kind >= INFINIRT_PLUGIN_MEMCPY_H2H && kind <= INFINIRT_PLUGIN_MEMCPY_D2D;
}

/* Queue the copy on s; with `wait`, also wait for it. */
static infiniStatus_t copy(int dev, void *dst, const void *src, size_t size, int kind, void *stream, int wait)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st;
    CUstream s;

    if (!kind_ok(kind))
        return INFINI_STATUS_BAD_PARAM;
    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    s = infinirt_cuda__stream_of(d, stream);
    if (kind == INFINIRT_PLUGIN_MEMCPY_H2H) {
        /* In stream order: after the work queued before (which may write
         * src), and done before the work queued after, since we return
         * only once it is done. */
        st = INFINIRT_CUDA__CALL(dev, StreamSynchronize, s);
        if (st == INFINI_STATUS_SUCCESS)
            memcpy(dst, src, size);
        return st;
    }
    st = INFINIRT_CUDA__CALL(dev, MemcpyAsync, dptr(dst), dptr(src), size, s);
    if (st != INFINI_STATUS_SUCCESS || !wait)
        return st;
    return INFINIRT_CUDA__CALL(dev, StreamSynchronize, s);
}

infiniStatus_t infinirt_cuda__memcpy_async(int dev, void *dst, const void *src, size_t size, int kind,
                                           void *stream)
{
    return copy(dev, dst, src, size, kind, stream, 0);
}

infiniStatus_t infinirt_cuda__memcpy(int dev, void *dst, const void *src, size_t size, int kind)
{
    return copy(dev, dst, src, size, kind, NULL, 1);
}

infiniStatus_t infinirt_cuda__memset_async(int dev, void *ptr, int value, size_t size, void *stream)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, MemsetD8Async, dptr(ptr), (unsigned char)value, size,
                               infinirt_cuda__stream_of(d, stream));
}

infiniStatus_t infinirt_cuda__memset(int dev, void *ptr, int value, size_t size)
{
    infinirt_cuda__device_t *d;
    infiniStatus_t st;

    if (size == 0)
        return INFINI_STATUS_SUCCESS;
    st = infinirt_cuda__enter(dev, &d);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT_CUDA__CALL(dev, MemsetD8Async, dptr(ptr), (unsigned char)value, size, d->default_stream);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    return INFINIRT_CUDA__CALL(dev, StreamSynchronize, d->default_stream);
}
